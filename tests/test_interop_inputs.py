"""input.json, public.json and circuit.wasm as snarkjs users write them: the engine reads what snarkjs reads.

snarkjs reads input.json with JSON.parse and BigInt(): a JSON integer is a JavaScript double, exact when the
double is (10^18 wei, 2^64), rounded otherwise (2^64 + 1: refused here by name, never rounded quietly); a blank
string is BigInt("") = 0; an empty object is no number (snarkjs refuses it).  public.json's numbers are read the
same way by `groth16 verify`.  A circuit.wasm of another circuit than the key is named as such, not blamed on
input.json.  `prove --wasm` shows the circuit's log() lines as `groth16 fullprove` does.  The tests marked
`snarkjs` compare with snarkjs 0.7.6 itself (or compile with circom); the others need no node.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import EXAMPLES, FIXTURES, run_engine, run_snarkjs

import cli
from engine import Engine, EngineConfig, verify
from engine.algebra.curves import BN254
from engine.errors import MismatchError
from engine.formats import read_wtns
from engine.formats.json import read_public
from engine.witness.calculator import WitnessInputError, parse_inputs
from engine.witness.inputs import normalise_inputs

TINY = FIXTURES / "tiny" / "bn128"
# JSON integers above 2^53 that a double holds exactly (snarkjs reads them exactly), and one it rounds
EXACT = (10**18, 2**64, -(10**18), 25 * 10**18)
ROUNDED = 2**64 + 1


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- input.json


@pytest.mark.parametrize("value", EXACT)
def test_json_integer_a_double_holds_exactly_is_read_exactly(tmp_path, value):
    p = tmp_path / "input.json"
    p.write_text(f'{{"x": {value}, "a": [1, {value}]}}')
    assert parse_inputs(p) == {"x": [value], "a": [1, value]}


def test_json_integer_a_double_would_round_is_still_refused_by_name(tmp_path):
    p = tmp_path / "input.json"
    p.write_text(f'{{"x": {ROUNDED}}}')
    with pytest.raises(WitnessInputError, match=rf"signal 'x': the JSON number {ROUNDED} is above 2\^53"):
        parse_inputs(p)
    p.write_text(f'{{"x": -{ROUNDED}}}')  # not "above 2^53"
    with pytest.raises(WitnessInputError, match=rf"signal 'x': the JSON number -{ROUNDED} is below -2\^53, which"):
        parse_inputs(p)
    p.write_text(f'{{"x": 1{"0" * 309}}}')  # JSON.parse gives Infinity, which snarkjs refuses: it does not round
    with pytest.raises(WitnessInputError, match=r"above 2\^53, which snarkjs would refuse \(JavaScript's Infinity\); "
                                                r"write it as a string"):
        parse_inputs(p)


@pytest.mark.parametrize("blank", ["", " ", "\n\t", "\u3000"])
def test_blank_string_is_zero_as_bigint_reads_it(blank):
    assert normalise_inputs({"x": [blank, "1"], "y": blank}) == {"x": [0, 1], "y": [0]}


@pytest.mark.parametrize("raw, where", [({"z": {}}, "z"), ({"z": [{}]}, "z[0]"), ({"b": {"x": 1, "y": {}}}, "b.y")])
def test_empty_object_is_refused_as_snarkjs_refuses_it(raw, where):
    # snarkjs: BigInt({}) throws, or "Too many values" for a name that is no input; an empty object named no
    # signal here, so {"x": 3, "y": 4, "z": {}} gave a witness
    with pytest.raises(WitnessInputError) as err:
        normalise_inputs({"x": 3, **raw}, "input.json")
    assert str(err.value) == f"input.json: signal '{where}': {{}} is not a number (expected an integer, decimal or " \
                             "0x-hex string)"


def test_witness_of_exact_json_numbers_equals_the_one_of_their_strings(tmp_path, capsys):
    numbers, strings = tmp_path / "numbers.json", tmp_path / "strings.json"
    numbers.write_text('{"x": 1000000000000000000, "a": 18446744073709551616, "b": ""}')
    strings.write_text('{"x": "1000000000000000000", "a": "18446744073709551616", "b": "0"}')
    for src in (numbers, strings):
        assert _cli(capsys, "witness", "--quiet", TINY / "tiny.wasm", src, tmp_path / f"{src.stem}.wtns")[0] == 0
    assert (tmp_path / "numbers.wtns").read_bytes() == (tmp_path / "strings.wtns").read_bytes()


# ---------------------------------------------------------------- public.json


def _big_public_proof(tmp_path, capsys) -> tuple[Path, Path, list[int]]:
    """A tiny proof whose public signals (prod, diff, x) are 25e18, 7e18, 1e18: above 2^53, exact doubles."""
    inputs = tmp_path / "input.json"
    inputs.write_text('{"x": "1000000000000000000", "a": "5", "b": "5"}')
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    assert _cli(capsys, "prove", "--quiet", "--backend", "cpu", TINY / "tiny.zkey", "--wasm", TINY / "tiny.wasm",
                "--input", inputs, proof, public)[0] == 0
    values = [int(v) for v in json.loads(public.read_text())]
    assert values == [25 * 10**18, 7 * 10**18, 10**18]
    return proof, public, values


def test_public_json_of_exact_json_numbers_verifies(tmp_path, capsys):
    proof, _, values = _big_public_proof(tmp_path, capsys)
    vkey = TINY / "verification_key.json"
    for text in (json.dumps(values), "[25e18, 7E18, 1e18]", '[25000000000000000000, "7000000000000000000", 1e18]'):
        numbers = tmp_path / "numbers.json"
        numbers.write_text(text)
        assert read_public(numbers, BN254) == values
        assert _cli(capsys, "verify", vkey, numbers, proof) == (0, "OK!\n", ""), text
        assert verify(vkey, json.loads(text), proof), text  # json.load's floats (1e18) too
    numbers.write_text(f"[{values[0]}, {values[1]}, {values[2] + 1}]")  # a double rounds 10^18 + 1
    code, out, err = _cli(capsys, "verify", vkey, numbers, proof)
    assert code == 2 and "[2]: the JSON number 1000000000000000001 is above 2^53" in err


# ---------------------------------------------------------------- a circuit.wasm of another circuit


def test_prove_with_wasm_of_another_circuit_names_the_wasm(tmp_path):
    zkey, wasm = TINY / "tiny.zkey", EXAMPLES / "bn128" / "sudoku.wasm"
    res = run_engine("prove", "--backend", "cpu", zkey, "--wasm", wasm, "--input", EXAMPLES / "bn128" / "input.json",
                     tmp_path / "proof.json", tmp_path / "public.json")
    assert res.returncode == 2 and list(tmp_path.iterdir()) == []
    assert res.stderr == (f"error: {wasm}: computes 225 witness values, but {zkey} is a key of 7 wires "
                          "(the circuit.wasm of another circuit, or of another circom --O level?)\n")


def test_engine_refuses_wasm_of_another_circuit_when_the_key_is_loaded():
    async def main():
        async with Engine(EngineConfig(backend="cpu")) as eng:
            with pytest.raises(MismatchError, match=r"sudoku\.wasm: computes 225 witness values, but .*"
                                                    r"tiny\.zkey is a key of 7 wires \(the circuit\.wasm of another "
                                                    r"circuit, or of another circom --O level\?\)"):
                await eng.load_key(TINY / "tiny.zkey", wasm=EXAMPLES / "bn128" / "sudoku.wasm")
            key = await eng.load_key(TINY / "tiny.zkey", wasm=TINY / "tiny.wasm")  # the engine still serves
            proof = await eng.prove(key, {"x": "3", "a": "11", "b": "5"})
            assert verify(TINY / "verification_key.json", proof.public, proof)

    asyncio.run(main())


# ---------------------------------------------------------------- against snarkjs itself


@pytest.mark.snarkjs
def test_witness_equals_snarkjs_for_exact_json_numbers_and_blank_strings(tmp_path, capsys):
    cases = {
        "wei": '{"x": 1000000000000000000, "a": -18446744073709551616, "b": 5}',
        "blank": '{"x": "", "a": "  ", "b": [" 7 "]}',
    }
    for name, text in cases.items():
        src = tmp_path / f"{name}.json"
        src.write_text(text)
        theirs, ours = tmp_path / f"{name}.snarkjs.wtns", tmp_path / f"{name}.wtns"
        run_snarkjs("wtns", "calculate", TINY / "tiny.wasm", src, theirs, check=True)
        assert _cli(capsys, "witness", "--quiet", TINY / "tiny.wasm", src, ours) == (0, "", ""), name
        assert ours.read_bytes() == theirs.read_bytes(), name
        assert read_wtns(ours).values.shape[0] == 7


@pytest.mark.snarkjs
def test_public_json_of_exact_json_numbers_verifies_with_snarkjs_as_with_us(tmp_path, capsys):
    proof, _, values = _big_public_proof(tmp_path, capsys)
    numbers = tmp_path / "numbers.json"
    numbers.write_text(json.dumps(values))
    res = run_snarkjs("groth16", "verify", TINY / "verification_key.json", numbers, proof)
    assert res.returncode == 0 and "OK!" in res.stdout
    assert _cli(capsys, "verify", TINY / "verification_key.json", numbers, proof) == (0, "OK!\n", "")


@pytest.mark.snarkjs
def test_prove_from_wasm_shows_the_circuits_log_lines_as_snarkjs_fullprove_does(tmp_path):
    from conftest import circom_compile  # noqa: PLC0415

    r1cs, wasm = circom_compile(Path(__file__).parent / "circuits" / "witness" / "guarded.circom", "bn128",
                                tmp_path / "guarded")
    zkey, inputs = tmp_path / "guarded.zkey", tmp_path / "input.json"
    assert run_engine("setup", "--quiet", r1cs, zkey).returncode == 0
    inputs.write_text('{"x": 7}')
    files = (tmp_path / "proof.json", tmp_path / "public.json")
    res = run_engine("prove", "--backend", "cpu", zkey, "--wasm", wasm, "--input", inputs, *files)
    assert res.returncode == 0 and res.stderr.splitlines() == [f"{wasm}: log: x is 7"], res.stderr
    res = run_engine("prove", "--backend", "cpu", "--json", zkey, "--wasm", wasm, "--input", inputs, *files)
    events = [json.loads(line) for line in res.stderr.splitlines()]
    assert res.returncode == 0 and {"event": "log", "text": f"{wasm}: log: x is 7"} in [
        {k: e[k] for k in ("event", "text") if k in e} for e in events]
    res = run_engine("prove", "--backend", "cpu", "--quiet", zkey, "--wasm", wasm, "--input", inputs, *files)
    assert res.returncode == 0 and res.stderr == ""
