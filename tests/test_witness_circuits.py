"""Witnesses of a wide set of circom circuits, byte for byte against `snarkjs wtns calculate`.

tests/test_wasm_witness.py covers the calculator's own API and errors; here the
circuit side goes wide: circomlib gadgets, circom 2 language features (zero-size
and 4-dimensional input arrays, tags, anonymous components, custom templates,
log, asserts in functions), every prime circom knows, and --O0/--O1/--O2.
Where snarkjs fails, the engine must fail too, naming circom's location.
Each circuit is compiled once per session (about 1.5 s each on 2 cores).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import cli
from conftest import REPO, NODE_TIMEOUT_S, _run, node_tool, run_snarkjs
from engine.formats import read_wtns
from engine.witness.calculator import CircuitAssertionError, WasmCircuit, WitnessInputError
from test_wasm_witness import _private_module_cache  # noqa: F401  (autouse: this module's compiles, too)

CIRCUITS = REPO / "tests" / "circuits" / "witness"

pytestmark = pytest.mark.snarkjs


@pytest.fixture(scope="session")
def build(node_bin, tmp_path_factory):
    """build(name, *flags) -> circuit.wasm of tests/circuits/witness/<name>.circom, compiled once per session."""
    root = tmp_path_factory.mktemp("circuits")
    built: dict[tuple[str, ...], Path] = {}

    def compile_(name: str, *flags: str) -> Path:
        key = (name, *flags)
        if key not in built:
            out = root / "-".join(re.sub(r"\W", "", k) for k in key)
            out.mkdir()
            _run([node_tool("circom2"), CIRCUITS / f"{name}.circom", "--wasm", "--sym", *flags,
                  "-l", REPO / "node_modules", "-o", out], cwd=REPO, check=True, timeout=NODE_TIMEOUT_S)
            built[key] = out / f"{name}_js" / f"{name}.wasm"
        return built[key]

    return compile_


def inputs_file(tmp_path: Path, name: str, **changes) -> Path:
    """<name>_input.json with some signals replaced, written to tmp_path."""
    inputs = json.loads((CIRCUITS / f"{name}_input.json").read_text())
    inputs.update(changes)
    path = tmp_path / "input.json"
    path.write_text(json.dumps(inputs))
    return path


def assert_same_as_snarkjs(wasm: Path, inputs: Path, tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.wtns", tmp_path / "snarkjs.wtns"
    assert cli.main(["witness", "--quiet", str(wasm), str(inputs), str(ours)]) == 0
    run_snarkjs("wtns", "calculate", wasm, inputs, theirs, check=True)
    assert ours.read_bytes() == theirs.read_bytes()


def assert_fails_like_snarkjs(wasm: Path, inputs: Path, tmp_path: Path) -> None:
    """Both fail; our one line names every place circom's runtime reported to snarkjs."""
    res = run_snarkjs("wtns", "calculate", wasm, inputs, tmp_path / "snarkjs.wtns")
    where = list(dict.fromkeys(re.findall(r"Error in (?:template|function) \w+ line: \d+", res.stdout + res.stderr)))
    assert res.returncode != 0 and where, res.stdout + res.stderr
    with pytest.raises(CircuitAssertionError) as err:
        WasmCircuit.load(wasm).calculate(inputs)
    assert str(err.value) == f"{wasm}: circuit assertion failed for {inputs}: {'; '.join(where)}"


# ---------------------------------------------------------------- circom 2 language features


def test_zero_size_input_array_given_as_empty_list_is_accepted_as_snarkjs_does(build, tmp_path):
    # `signal input none[0]`: circom reports size 0 for it, and snarkjs accepts `"none": []`
    assert_same_as_snarkjs(build("shapes"), CIRCUITS / "shapes_input.json", tmp_path)


@pytest.mark.parametrize("opt", [
    pytest.param("--O1", id="O1"),
    pytest.param("--O0", id="O0", marks=pytest.mark.slow),
    pytest.param("--O2", id="O2", marks=pytest.mark.slow),
])
def test_language_features_at_each_optimisation_level(build, tmp_path, opt):
    wasm = build("shapes", opt)
    assert_same_as_snarkjs(wasm, CIRCUITS / "shapes_input.json", tmp_path)
    # an assert in a function: circom names the function and the template that called it
    assert_fails_like_snarkjs(wasm, inputs_file(tmp_path, "shapes", k="1000"), tmp_path)


def test_main_without_inputs_takes_an_empty_object(build, tmp_path):
    inputs = tmp_path / "empty.json"
    inputs.write_text("{}")
    assert_same_as_snarkjs(build("noinputs"), inputs, tmp_path)


def test_bus_inputs_by_qualified_names_or_as_objects_give_snarkjs_witness(build, tmp_path):
    # snarkjs takes only the qualified names ("l[0].p[1].x"); circom's own JS and we take objects too
    wasm = build("buses")
    assert_same_as_snarkjs(wasm, CIRCUITS / "buses_input.json", tmp_path)
    objects = {"a": {"x": 1, "y": 2}, "k": 13, "l": [
        {"p": [{"x": 3, "y": 4}, {"x": 5, "y": 6}], "w": 7}, {"p": [{"x": 8, "y": 9}, {"x": 10, "y": 11}], "w": 12},
    ]}
    assert (WasmCircuit.load(wasm).calculate(objects) == read_wtns(tmp_path / "ours.wtns").values).all()


# ---------------------------------------------------------------- primes


@pytest.mark.parametrize("prime", [
    pytest.param("bls12381"),
    *(pytest.param(p, marks=pytest.mark.slow) for p in ("bn128", "bls12377", "grumpkin", "pallas", "vesta",
                                                        "secq256r1")),
])
def test_every_32_byte_prime_gives_snarkjs_witness(build, tmp_path, prime):
    assert_same_as_snarkjs(build("fields", "--prime", prime), CIRCUITS / "fields_input.json", tmp_path)


def test_goldilocks_circuit_is_refused_in_one_line_and_writes_nothing(build, tmp_path, capsys):
    wasm, out = build("fields", "--prime", "goldilocks"), tmp_path / "w.wtns"
    assert cli.main(["witness", "--quiet", str(wasm), str(CIRCUITS / "fields_input.json"), str(out)]) == 2
    assert not out.exists()
    assert capsys.readouterr().err == (
        f"error: {wasm}: 8-byte field elements (prime 0xffffffff00000001) cannot be written as .wtns here: this "
        "engine writes 32-byte ones (primes below 2^256; it proves bn128 and bls12381 circuits)\n"
    )


# ---------------------------------------------------------------- circomlib


def test_circomlib_gadgets_give_snarkjs_witness(build, tmp_path):
    assert_same_as_snarkjs(build("gadgets"), CIRCUITS / "gadgets_input.json", tmp_path)


@pytest.mark.parametrize("changes", [
    pytest.param({"a": 70000}, id="Num2Bits-in-LessThan"),
    pytest.param({"p1": ["1", "2"]}, id="BabyCheck"),
])
def test_circomlib_assert_failures_name_circoms_places(build, tmp_path, changes):
    assert_fails_like_snarkjs(build("gadgets"), inputs_file(tmp_path, "gadgets", **changes), tmp_path)


@pytest.mark.slow  # circom takes ~9 s to compile it
def test_sha256_of_a_short_message_gives_snarkjs_witness(build, tmp_path):
    assert_same_as_snarkjs(build("sha256"), CIRCUITS / "sha256_input.json", tmp_path)


def test_bus_inputs_are_named_in_missing_and_unknown_input_errors(build):
    # circom's .sym lists the bus output `o.x` first; its inputs are a (bus), l (bus array) and k
    wasm = build("buses")
    c = WasmCircuit.load(wasm)
    given = json.loads((CIRCUITS / "buses_input.json").read_text())
    assert c.input_names() == ["a", "l", "k"]
    with pytest.raises(WitnessInputError) as err:
        c.calculate({k: v for k, v in given.items() if not k.startswith("a.")}, source="input.json")
    assert str(err.value) == f"input.json: missing input signal 'a' (the inputs of {wasm} are 'a', 'l', 'k')"
    with pytest.raises(WitnessInputError) as err:
        c.calculate({k: v for k, v in given.items() if k != "l[1].w"}, source="input.json")
    assert str(err.value) == f"input.json: missing input signal 'l' (the inputs of {wasm} are 'a', 'l', 'k')"
    with pytest.raises(WitnessInputError) as err:
        c.calculate({**given, "zz": 1}, source="input.json")
    assert str(err.value) == f"input.json: unknown input signal 'zz' (the inputs of {wasm} are 'a', 'l', 'k')"


@pytest.mark.slow  # circom takes ~5 s to compile it
def test_eddsa_poseidon_signature_check_gives_snarkjs_witness_and_fails_like_it_for_another_message(build, tmp_path):
    wasm = build("eddsa")
    assert_same_as_snarkjs(wasm, CIRCUITS / "eddsa_input.json", tmp_path)
    assert_fails_like_snarkjs(wasm, inputs_file(tmp_path, "eddsa", M="43"), tmp_path)
