"""Hostile and unusual proof.json / public.json / verification_key.json / input.json, read as snarkjs reads them.

Valid proofs come from a key with a known trapdoor (α, β, γ, δ and the IC scalars chosen here), so a proof can be
made with any point at infinity a test needs; each verdict here is the one `snarkjs groth16 verify` gives (checked by
hand against node_modules' snarkjs when the tests were written).
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.ec import g1_mul, g2_mul
from engine.errors import EngineError, FormatError
from engine.formats.json import read_proof, read_public, read_vkey, vk_to_obj
from engine.formats.json_text import g1_to_json, g2_to_json
from engine.groth16.proof import VerificationKey
from engine.groth16.verifier import verify
from engine.witness.errors import WitnessInputError
from engine.witness.inputs import normalise_inputs, parse_inputs

ROOT = Path(__file__).resolve().parents[1]
CURVES = pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])


def trapdoor_files(tmp_path, curve, ic_scalars=(5, 0, 7), public=(3, 4), a=None, b=None, seed=1):
    """verification_key.json, public.json and proof.json of a valid proof (A = a·G1, B = b·G2) for a key whose
    trapdoor we know; IC[i] = ic_scalars[i]·G1 (0: the point at infinity)."""
    rng = random.Random(seed)
    r, g1, g2 = curve.r, curve.g1_gen, curve.g2_gen
    al, be, ga, de = (rng.randrange(1, r) for _ in range(4))
    vk = VerificationKey(curve, len(ic_scalars) - 1, g1_mul(curve, g1, al), g2_mul(curve, g2, be),
                         g2_mul(curve, g2, ga), g2_mul(curve, g2, de), [g1_mul(curve, g1, s) for s in ic_scalars])
    a = rng.randrange(1, r) if a is None else a
    b = rng.randrange(1, r) if b is None else b
    cpub = (ic_scalars[0] + sum(p * s for p, s in zip(public, ic_scalars[1:]))) % r
    c = (a * b - al * be - cpub * ga) * pow(de, -1, r) % r
    proof = {"pi_a": g1_to_json(g1_mul(curve, g1, a)), "pi_b": g2_to_json(g2_mul(curve, g2, b)),
             "pi_c": g1_to_json(g1_mul(curve, g1, c)), "protocol": "groth16", "curve": curve.name}
    return vk_to_obj(vk, alphabeta=[[["0", "0"]] * 3] * 2), [str(p) for p in public], proof


def write(tmp_path, vk, public, proof) -> tuple[Path, Path, Path]:
    paths = tmp_path / "verification_key.json", tmp_path / "public.json", tmp_path / "proof.json"
    for p, obj in zip(paths, (vk, public, proof)):
        p.write_text(obj if isinstance(obj, str) else json.dumps(obj, indent=1))
    return paths


def cli(capsys, *args) -> tuple[int, str, str]:
    from cli import main

    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- points at infinity


@CURVES
@pytest.mark.parametrize("enc", [["0", "0", "1"], ["0", "0"]], ids=["affine-z1", "affine-xy"])
def test_affine_zero_is_the_point_at_infinity_in_a_key_as_snarkjs_reads_it(tmp_path, capsys, curve, enc):
    """snarkjs's fromObject reads affine (0, 0) as infinity (its zeroAffine); (0, 0) is on neither curve, so that
    reading is unambiguous. An IC point at infinity (a public signal no constraint uses) written so was refused."""
    vk, public, proof = trapdoor_files(tmp_path, curve)
    vk["IC"][1] = enc
    paths = write(tmp_path, vk, public, proof)
    assert read_vkey(paths[0]).ic[1] is None
    assert cli(capsys, "verify", *paths) == (0, "OK!\n", "")


@CURVES
@pytest.mark.parametrize("enc", [["0", "0", "1"], ["0", "0"], ["0", "1", "0"]], ids=["affine-z1", "affine-xy", "z0"])
def test_a_valid_proof_with_pi_a_at_infinity_in_any_snarkjs_encoding_verifies(tmp_path, capsys, curve, enc):
    vk, public, proof = trapdoor_files(tmp_path, curve, a=0)
    proof["pi_a"] = enc
    assert cli(capsys, "verify", *write(tmp_path, vk, public, proof)) == (0, "OK!\n", "")


def test_affine_zero_in_g2_is_infinity_too(tmp_path):
    vk, public, proof = trapdoor_files(tmp_path, BN254, b=0)
    for enc in ([["0", "0"], ["0", "0"], ["1", "0"]], [["0", "0"], ["0", "0"]]):
        proof["pi_b"] = enc
        assert read_proof(write(tmp_path, vk, public, proof)[2]).pi_b is None


# ---------------------------------------------------------------- numbers as snarkjs reads them


@CURVES
def test_hex_strings_are_read_as_snarkjs_reads_them(tmp_path, capsys, curve):
    """ffjavascript's unstringifyBigInts takes "0x..." as well as decimal: snarkjs verifies such files (OK!)."""
    vk, public, proof = trapdoor_files(tmp_path, curve)
    vk["IC"] = [[hex(int(c)) for c in p] for p in vk["IC"]]
    vk["vk_delta_2"][0] = ["0x" + format(int(c), "X") for c in vk["vk_delta_2"][0]]
    proof["pi_a"] = [hex(int(c)) for c in proof["pi_a"]]
    public = [hex(int(v)) for v in public]
    paths = write(tmp_path, vk, public, proof)
    assert cli(capsys, "verify", *paths) == (0, "OK!\n", "")
    assert verify(*paths) and verify(read_vkey(paths[0]), public, read_proof(paths[2]))


@pytest.mark.parametrize("text", ["0X1", "+1", " 1", "1 ", "-1", "0x", "1.5", "0x-1", "١"])
def test_strings_snarkjs_does_not_read_as_numbers_are_refused_by_name(tmp_path, text):
    p = tmp_path / "public.json"
    p.write_text(json.dumps(["1", text]))
    with pytest.raises(FormatError, match=r"public\.json: \[1\]: expected a decimal string"):
        read_public(p, BN254)


def test_hex_at_or_above_the_modulus_is_refused(tmp_path):
    p = tmp_path / "public.json"
    for v in (hex(BN254.r), "0x" + "0" * 100 + "f" * 80):
        p.write_text(json.dumps([v]))
        with pytest.raises(FormatError, match="is not below the bn128 scalar field prime r"):
            read_public(p, BN254)
    p.write_text(json.dumps(["0x" + "0" * 200 + "1f"]))
    assert read_public(p, BN254) == [31]


@CURVES
def test_json_integers_javascript_reads_exactly_are_accepted(tmp_path, capsys, curve):
    """A public.json of JSON numbers verifies with snarkjs; so do nPublic as 2.0 (JavaScript's 2), or no nPublic
    at all (snarkjs never reads it: IC says how many signals there are)."""
    vk, public, proof = trapdoor_files(tmp_path, curve)
    proof["pi_a"][2] = 1
    for n_public in (2.0, None):
        key = {**vk, "nPublic": n_public} if n_public is not None else {k: v for k, v in vk.items() if k != "nPublic"}
        text = "[3, 4.0]"
        assert cli(capsys, "verify", *write(tmp_path, key, text, proof)) == (0, "OK!\n", ""), n_public


def test_json_integers_javascript_would_round_are_refused_by_name(tmp_path):
    p = tmp_path / "public.json"
    for text in (f"[{2**53 + 1}]", "[1e300]", "[1.5]", "[-1]", "[true]", "[1e400]", "[-1e400]"):
        p.write_text(text)
        with pytest.raises(FormatError, match=r"public\.json: \[0\]: ") as exc:
            read_public(p, BN254)
        assert "\n" not in str(exc.value)
    p.write_text(f"[{2**53 + 1}]")
    with pytest.raises(FormatError, match=r"2\^53.*string"):
        read_public(p, BN254)


def test_a_huge_npublic_is_a_short_message(tmp_path):
    vk, public, proof = trapdoor_files(tmp_path, BN254)
    paths = write(tmp_path, json.dumps(vk).replace('"nPublic": 2', '"nPublic": ' + "9" * 4000), public, proof)
    with pytest.raises(FormatError, match="nPublic") as exc:
        read_vkey(paths[0])
    assert len(str(exc.value)) < 300, str(exc.value)[:300]


# ---------------------------------------------------------------- encodings and the API


@pytest.mark.parametrize("data, words", [
    (b"\xef\xbb\xbf[]", "byte-order mark"),
    ("[]".encode("utf-16"), "UTF-16"),
    ("[]".encode("utf-32"), "UTF-32"),
    (b'["1", "\xff"]', "not UTF-8"),
])
def test_bom_and_other_encodings_are_named(tmp_path, data, words):
    p = tmp_path / "public.json"
    p.write_bytes(data)
    with pytest.raises(FormatError, match=words) as exc:
        read_public(p)
    assert "utf-8-sig" not in str(exc.value) and str(exc.value).startswith(str(p))


def test_verify_api_takes_numpy_integers_and_refuses_nothing_with_a_value_error(tmp_path):
    """numpy integers were not ints to verify: a valid proof was False; a 5000-digit string raised ValueError."""
    vk, public, proof = trapdoor_files(tmp_path, BN254)
    paths = write(tmp_path, vk, public, proof)
    key, prf = read_vkey(paths[0]), read_proof(paths[2])
    assert verify(key, np.array([3, 4], dtype=np.int64), prf)
    assert verify(key, [np.uint16(3), np.int32(4)], prf)
    assert verify(key, ["3", "1" * 5000], prf) is False
    assert verify(key, [True, 4], prf) is False
    with pytest.raises(TypeError, match="public is a list"):
        verify(key, {3, 4}, prf)  # a set has no order


def test_cli_says_why_a_proof_point_off_its_curve_is_invalid(tmp_path, capsys):
    vk, public, proof = trapdoor_files(tmp_path, BN254)
    proof["pi_c"][1] = str(int(proof["pi_c"][1]) + 1)
    paths = write(tmp_path, vk, public, proof)
    code, out, err = cli(capsys, "verify", *paths)
    assert (code, out) == (1, "Invalid proof\n")
    assert err.strip() == f"{paths[2]}: pi_c is not a point of the bn128 curve", err


# ---------------------------------------------------------------- input.json


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a":' * 995 + "1" + "}" * 995])
def test_deeply_nested_input_json_is_one_line_error(tmp_path, text):
    p = tmp_path / "input.json"
    p.write_text('{"puzzle": ' + text + "}")
    with pytest.raises(WitnessInputError, match="nested too deeply") as exc:
        parse_inputs(p)
    assert str(exc.value).startswith(str(p))


def test_deeply_nested_inputs_from_the_api_are_an_engine_error():
    deep: object = [1]
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(WitnessInputError, match="nested too deeply"):
        normalise_inputs({"a": deep}, "inputs")
    deep = {"x": 1}
    for _ in range(5000):
        deep = {"x": deep}
    with pytest.raises(EngineError, match="nested too deeply"):
        normalise_inputs({"a": deep}, "inputs")


def test_witness_command_with_a_recursion_bomb_has_no_traceback(tmp_path):
    p = tmp_path / "input.json"
    p.write_text('{"puzzle": ' + "[" * 100_000 + "]" * 100_000 + "}")
    ex = ROOT / "examples" / "bn128"
    res = subprocess.run([sys.executable, "-m", "engine", "witness", str(ex / "sudoku.wasm"), str(p),
                          str(tmp_path / "w.wtns")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-500:]
    assert res.stderr.strip() == f"error: {p}: not valid JSON: nested too deeply", res.stderr[-500:]
    assert not (tmp_path / "w.wtns").exists()



@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_is_refused_without_reading_it_all(device):
    """`verify /dev/zero ...` read until memory ran out (every JSON reader: the CLI's three files, info, input.json).
    Run under a 4 GiB address-space limit, in a process of its own: a bug here is a MemoryError, not a swapping host."""
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))\n"
            "from engine.formats.json import read_vkey\nfrom engine.witness.inputs import parse_inputs\n"
            "for read in (read_vkey, parse_inputs):\n"
            "    try:\n        read(%r)\n    except Exception as exc:\n        print(type(exc).__name__, exc)\n")
    res = subprocess.run([sys.executable, "-c", code % device], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.stdout.splitlines() == [f"FormatError {device}: is not a JSON text (it holds NUL bytes)",
                                       f"WitnessInputError {device}: is not a JSON text (it holds NUL bytes)"], res



def test_input_json_with_a_bom_says_so_in_words_a_user_can_act_on(tmp_path):
    """Python's own message was "Unexpected UTF-8 BOM (decode using utf-8-sig)"; snarkjs refuses a BOM too."""
    p = tmp_path / "input.json"
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    with pytest.raises(WitnessInputError, match="byte-order mark") as exc:
        parse_inputs(p)
    assert "utf-8-sig" not in str(exc.value) and str(exc.value).startswith(str(p))


@pytest.mark.parametrize("data, words", [(b"\xef\xbb\xbf[]", "byte-order mark"), ("[]".encode("utf-16"), "UTF-16")])
def test_info_names_the_encoding_of_a_json_file_with_a_bom(tmp_path, capsys, data, words):
    """info said such a file "is not a .r1cs, .wtns, .zkey, .ptau, circuit.wasm or snarkjs JSON file"."""
    p = tmp_path / "public.json"
    p.write_bytes(data)
    code, out, err = cli(capsys, "info", p)
    assert (code, out) == (2, "") and err.startswith(f"error: {p}: ") and words in err, err


@pytest.mark.parametrize("field", ["curve", "protocol"])
@pytest.mark.parametrize("reader", [read_proof, read_vkey])
def test_a_long_curve_or_protocol_name_is_a_short_message(tmp_path, field, reader):
    vk, public, proof = trapdoor_files(tmp_path, BN254)
    paths = write(tmp_path, {**vk, field: "x" * 100_000}, public, {**proof, field: "y" * 100_000})
    with pytest.raises(FormatError) as exc:
        reader(paths[2] if reader is read_proof else paths[0])
    assert len(str(exc.value)) < 300, str(exc.value)[:300]
    paths = write(tmp_path, {**vk, field: "plonk\nline two"}, public, {**proof, field: "plonk\nline two"})
    with pytest.raises(FormatError) as exc:
        reader(paths[2] if reader is read_proof else paths[0])
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json_even_where_no_field_is_read(tmp_path, token):
    """Python's json takes them, JSON.parse (snarkjs) refuses the whole file: one in vk_alphabeta_12 was ignored."""
    vk, public, proof = trapdoor_files(tmp_path, BN254)
    text = json.dumps({**vk, "vk_alphabeta_12": "X"}).replace('"X"', token)
    paths = write(tmp_path, text, public, proof)
    with pytest.raises(FormatError, match=f"is not valid JSON: {token} "):
        read_vkey(paths[0])


def test_the_engine_answers_deeply_nested_inputs_with_an_engine_error_and_keeps_serving():
    """A dict of inputs went to a synthesis worker as it was: pickling it raised RecursionError from prove()."""
    import asyncio

    from engine import Engine, EngineConfig

    ex = ROOT / "examples" / "bn128"
    deep: object = [1]
    for _ in range(5000):
        deep = [deep]

    async def main():
        async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
            key = await eng.load_key(ex / "sudoku.zkey", wasm=ex / "sudoku.wasm")
            with pytest.raises(WitnessInputError, match="^inputs: its values are nested too deeply$"):
                await eng.prove(key, {"puzzle": deep, "solution": []})
            return await eng.prove(key, json.loads((ex / "input.json").read_text()))

    proof = asyncio.run(main())
    assert verify(read_vkey(ex / "verification_key.json"), proof.public, proof)


@pytest.mark.parametrize("text, words", [('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
                                         (None, "NUL bytes")], ids=["deep", "dev-zero"])
def test_prove_with_a_server_reads_input_json_as_the_local_prove_does(tmp_path, text, words):
    """The client read input.json itself: a recursion bomb was a traceback, /dev/zero ate the memory."""
    p = Path("/dev/zero") if text is None else tmp_path / "input.json"
    if text is not None:
        p.write_text(text)
    ex = ROOT / "examples" / "bn128"
    res = subprocess.run([sys.executable, "-c", "import resource, runpy, sys; "
                          "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY)); "
                          "sys.argv[0] = 'engine'; runpy.run_module('engine', run_name='__main__')",
                          "prove", "--server", "http://127.0.0.1:9", str(ex / "sudoku.zkey"), "--wasm",
                          str(ex / "sudoku.wasm"), "--input", str(p), str(tmp_path / "p.json"),
                          str(tmp_path / "u.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-500:]
    assert res.stderr.startswith(f"error: {p}: ") and words in res.stderr and res.stderr.count("\n") == 1, res.stderr


def test_a_signal_name_with_a_lone_surrogate_is_one_line_error(tmp_path, capsys):
    """JSON's "\\ud800" escape gives a string no UTF encoding takes: witness hashed the name (UnicodeEncodeError
    traceback) and info printed it (another)."""
    p = tmp_path / "input.json"
    p.write_text('{"puzzle\\ud800": 1}')
    with pytest.raises(WitnessInputError, match=r"puzzle\\ud800.*lone surrogate"):
        parse_inputs(p)
    code, out, err = cli(capsys, "info", p)
    assert code == 2 and err.startswith(f"error: {p}: "), (code, out, err)
    ex = ROOT / "examples" / "bn128"
    code, out, err = cli(capsys, "witness", ex / "sudoku.wasm", p, tmp_path / "w.wtns")
    assert code == 2 and err.startswith(f"error: {p}: ") and "lone surrogate" in err, (code, out, err)


@pytest.mark.parametrize("data", [b"", b" \n\t"])
@pytest.mark.parametrize("reader", [read_proof, read_public, read_vkey])
def test_an_empty_json_file_is_said_to_be_empty(tmp_path, data, reader):
    """It was "is not valid JSON: Expecting value (line 1 column 1)", of a file with nothing in it."""
    p = tmp_path / "file.json"
    p.write_bytes(data)
    with pytest.raises(FormatError, match=f"^{p}: is not valid JSON: the file is empty$"):
        reader(p)


def test_a_key_read_from_its_file_has_each_point_checked_once(tmp_path, monkeypatch):
    """read_vkey checks every point's subgroup, and checked_key (the CLI's, the service's) checked them all again:
    on BLS12-381 that is a scalar multiplication per IC point, half of `verify`'s time for a key of 1000 signals."""
    from engine.algebra import subgroup
    from engine.groth16.verifier import checked_key

    vk, public, proof = trapdoor_files(tmp_path, BLS12_381, ic_scalars=tuple(range(1, 9)), public=tuple(range(7)))
    paths = write(tmp_path, vk, public, proof)
    calls = []
    real = subgroup.g1_in_subgroup
    monkeypatch.setattr(subgroup, "g1_in_subgroup", lambda curve, p: calls.append(p) or real(curve, p))
    key = checked_key(read_vkey(paths[0]), str(paths[0]))
    assert len(calls) == 1 + 8  # vk_alpha_1 and IC
    assert verify(key, read_public(paths[1], BLS12_381), read_proof(paths[2], BLS12_381))


def test_verify_api_takes_public_signals_as_json_load_gives_any_file_the_cli_verifies(tmp_path, capsys):
    """public.json [3, 4.0] verifies from the command line (and with snarkjs); its json.load was False."""
    vk, _, proof = trapdoor_files(tmp_path, BN254)
    paths = write(tmp_path, vk, "[3, 4.0]", proof)
    assert cli(capsys, "verify", *paths)[0] == 0
    assert verify(read_vkey(paths[0]), json.loads(paths[1].read_text()), read_proof(paths[2]))
    assert verify(read_vkey(paths[0]), [3, 4.5], read_proof(paths[2])) is False
