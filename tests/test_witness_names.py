"""Signal names from input.json in error messages: one short line whatever the name (a 100 KB name was
echoed whole, a name holding a newline broke the line, and the list of given names had no end)."""
from __future__ import annotations

import json

import pytest

from engine.witness.calculator import WasmCircuit, WitnessInputError
from engine.witness.inputs import normalise_inputs
from test_wasm_witness import _private_module_cache  # noqa: F401  (autouse: this module's compiles, too)
from test_witness_circuits import CIRCUITS, build  # noqa: F401  (the session's compiled circuits)

pytestmark = pytest.mark.snarkjs

LONG = "x" * 100_000


def _one_short_line(text: str, limit: int = 400) -> None:
    assert "\n" not in text and len(text) < limit, (len(text), text[:200])


@pytest.mark.parametrize("name", [LONG, "bad\nname", "tab\there" + "y" * 500])
def test_an_unknown_signal_is_named_in_one_short_line(build, tmp_path, name):
    inputs = json.loads((CIRCUITS / "arrays_input.json").read_text())
    inputs[name] = "1"
    path = tmp_path / "input.json"
    path.write_text(json.dumps(inputs))
    with pytest.raises(WitnessInputError) as err:
        WasmCircuit.load(build("arrays")).calculate(path)
    _one_short_line(str(err.value))
    assert "unknown input signal" in str(err.value)


@pytest.mark.parametrize("raw", [
    {LONG: [1, {"a": 1}]},  # mixes objects and numbers
    {LONG: "not a number"},
    {LONG: 1, "y" * 50_000: {"": 1}},  # an empty field name under a long prefix
])
def test_a_malformed_value_under_a_long_name_is_one_short_line(raw):
    with pytest.raises(WitnessInputError) as err:
        normalise_inputs(raw, "input.json")
    _one_short_line(str(err.value))


def test_inputs_nested_past_the_bound_are_refused_whatever_the_recursion_limit():
    """The refusal of deeply nested inputs came from Python's RecursionError: in a process whose recursion limit was
    raised (by the program, or a library it imports: CI's full run) a 5000-deep list went through."""
    import sys

    deep: object = [1]
    for _ in range(5000):
        deep = [deep]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        for raw in ({"x": deep}, {"b": [{"f": deep}]}):
            with pytest.raises(WitnessInputError, match="^input.json: its values are nested too deeply$"):
                normalise_inputs(raw, "input.json")
    finally:
        sys.setrecursionlimit(old)
    assert normalise_inputs({"m": [[[1, 2], [3, 4]]], "b": [{"x": [5]}]}, "input.json") == {
        "m": [1, 2, 3, 4], "b[0].x": [5]}
