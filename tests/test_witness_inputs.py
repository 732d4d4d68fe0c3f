"""input.json and inputs dicts as circom's JavaScript (and so snarkjs, through BigInt()) reads them: every value
form it takes, the ones it refuses, bus fields, and the file's own problems.  No circuit needed."""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine.errors import InputFileError, WitnessGenerationError
from engine.witness.calculator import WitnessInputError, parse_inputs
from engine.witness.inputs import normalise_inputs


def test_parse_inputs_accepts_every_value_form_circom_does(tmp_path):
    p = tmp_path / "in.json"
    p.write_text(
        json.dumps(
            {
                "dec": "123456789012345678901234567890",
                "hex": "0xFF",
                "neg": "-7",
                "num": 42,
                "big": 2**53,
                "flt": 1e3,
                "boo": True,
                "pad": " 9\n",
                "nest": [[1, "2"], ["0x3", 4]],
            }
        )
    )
    assert parse_inputs(p) == {
        "dec": [123456789012345678901234567890],
        "hex": [255],
        "neg": [-7],
        "num": [42],
        "big": [2**53],
        "flt": [1000],
        "boo": [1],
        "pad": [9],
        "nest": [1, 2, 3, 4],
    }


def test_json_integer_that_javascript_would_round_is_clear_error(tmp_path):
    p = tmp_path / "input.json"
    p.write_text('{"x": [1, 18446744073709551000]}')
    with pytest.raises(WitnessInputError) as err:
        parse_inputs(p)
    assert str(err.value) == (
        f"{p}: signal 'x[1]': the JSON number 18446744073709551000 is above 2^53, which snarkjs would silently "
        'round; write it as a string ("18446744073709551000")'
    )
    # the same value as a string, or as a Python int through the API, is exact
    p.write_text('{"x": [1, "18446744073709551000"]}')
    assert parse_inputs(p) == normalise_inputs({"x": [1, 18446744073709551000]}) == {"x": [1, 18446744073709551000]}


def test_api_inputs_may_be_tuples_numpy_arrays_and_numpy_integers():
    got = normalise_inputs({"a": (1, 2), "m": np.arange(4, dtype=np.uint64).reshape(2, 2), "s": np.int64(-3)})
    assert got == {"a": [1, 2], "m": [0, 1, 2, 3], "s": [-3]}
    assert all(type(v) is int for vals in got.values() for v in vals)


def test_bus_inputs_are_qualified_as_circom_names_them():
    got = normalise_inputs({"b": {"x": 1, "y": [2, 3]}, "arr": [{"x": 4}, {"x": 5}], "s": 6})
    assert got == {"b.x": [1], "b.y": [2, 3], "arr[0].x": [4], "arr[1].x": [5], "s": [6]}


@pytest.mark.parametrize(
    "value, shown",
    [("abc", '"abc"'), ("1.5", '"1.5"'), (1.5, "1.5"), (None, "null"), ("1e3", '"1e3"'), ("0x", '"0x"')],
)
def test_value_that_is_not_a_number_is_clear_error(value, shown):
    with pytest.raises(WitnessInputError) as err:
        normalise_inputs({"x": 1, "v": [[1, 2], [3, value]]}, "input.json")
    assert str(err.value) == (
        f"input.json: signal 'v[1][1]': {shown} is not a number (expected an integer, decimal or 0x-hex string)"
    )


@pytest.mark.parametrize("value", ["-0x10", "+0x10", "-0b1", "+0o7", "\x1c5", "\x855", "\u180e5"])
def test_value_that_javascripts_bigint_refuses_is_clear_error(value):
    # snarkjs reads values with BigInt(): a sign only before decimal digits, only JavaScript's white space around
    with pytest.raises(WitnessInputError) as err:
        normalise_inputs({"x": [1, value]}, "input.json")
    assert str(err.value).startswith(f"input.json: signal 'x[1]': {json.dumps(value)} is not a number")


def test_value_with_javascript_white_space_is_read_as_bigint_does():
    assert normalise_inputs({"x": ["\ufeff5", "\u3000-5\u2029", "\x0b+5\x0c", " 0X1f "]}) == {"x": [5, -5, 5, 31]}


def test_array_mixing_objects_and_numbers_is_clear_error():
    with pytest.raises(WitnessInputError, match=r"inputs: signal 'b' mixes objects and numbers"):
        normalise_inputs({"b": [{"x": 1}, 2]})


@pytest.mark.parametrize(
    "text, problem",
    [
        (None, "no such file"),
        ('{"x": ', "not valid JSON: Expecting value at line 1 column 7"),
        ("[1, 2]", "expected a JSON object of signal names, got an array"),
        ('"x"', "expected a JSON object of signal names, got str"),
    ],
)
def test_input_file_problem_is_clear_error(tmp_path, text, problem):
    p = tmp_path / "input.json"
    if text is not None:
        p.write_text(text)
    with pytest.raises(WitnessInputError) as err:
        parse_inputs(p)
    assert str(err.value) == f"{p}: {problem}"
    assert isinstance(err.value, InputFileError) and isinstance(err.value, WitnessGenerationError)
