"""proof.json, public.json, verification_key.json: snarkjs's exact bytes out, snarkjs's rules in (spec §6)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.algebra.curves import BLS12_381, BN254, curve_by_name
from engine.errors import CurveMismatchError, FormatError, InputFileError
from engine.formats import read_zkey
from engine.formats.json import (
    g1_to_json,
    g2_to_json,
    proof_to_json,
    public_to_json,
    read_proof,
    read_public,
    read_vkey,
    vk_to_json,
    write_proof,
    write_public,
    write_vkey,
)
from engine.groth16.proof import Proof

FIX = Path(__file__).resolve().parent / "fixtures" / "tiny"
CURVES = ["bn128", "bls12381"]


def fx(curve: str, name: str) -> Path:
    return FIX / curve / name


def assert_one_line(exc: BaseException, path, *words: str) -> None:
    msg = str(exc)
    assert "\n" not in msg and msg.startswith(f"{path}: "), msg
    for w in words:
        assert w in msg, msg


def fixture_alphabeta(curve: str):
    ab = json.loads(fx(curve, "verification_key.json").read_text())["vk_alphabeta_12"]
    return tuple(tuple((int(c0), int(c1)) for c0, c1 in half) for half in ab)


# ---------------------------------------------------------------- byte-identical output

@pytest.mark.parametrize("curve", CURVES)
def test_proof_and_public_read_then_written_are_byte_identical(tmp_path, curve):
    proof = read_proof(fx(curve, "proof.json"))
    public = read_public(fx(curve, "public.json"), proof.curve)
    assert proof.curve is curve_by_name(curve) and public == [165, 27, 3]
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", public)
    assert (tmp_path / "proof.json").read_bytes() == fx(curve, "proof.json").read_bytes()
    assert (tmp_path / "public.json").read_bytes() == fx(curve, "public.json").read_bytes()
    assert not (tmp_path / "proof.json").read_bytes().endswith(b"\n")


@pytest.mark.parametrize("curve", CURVES)
def test_vkey_read_then_written_with_its_alphabeta_is_byte_identical(tmp_path, curve):
    vk = read_vkey(fx(curve, "verification_key.json"))
    assert vk.n_public == 3 and len(vk.ic) == 4 and vk.gamma2 == vk.curve.g2_gen
    write_vkey(tmp_path / "vk.json", vk, alphabeta=fixture_alphabeta(curve))
    assert (tmp_path / "vk.json").read_bytes() == fx(curve, "verification_key.json").read_bytes()


@pytest.mark.parametrize("curve", CURVES)
def test_vkey_exported_from_zkey_is_byte_identical_to_snarkjs(curve):
    """vk_alphabeta_12 = e(alpha1, beta2) from engine.algebra.pairing, in snarkjs's Fq12 tower layout."""
    from engine.groth16.verifier import vk_from_zkey

    vk = vk_from_zkey(read_zkey(fx(curve, "tiny.zkey")))
    assert vk_to_json(vk) == fx(curve, "verification_key.json").read_text()


def test_infinity_is_written_as_snarkjs_writes_it_and_read_back():
    assert g1_to_json(None) == ["0", "1", "0"]
    assert g2_to_json(None) == [["0", "0"], ["1", "0"], ["0", "0"]]
    proof = Proof(BN254, None, None, (1, 2))
    text = proof_to_json(proof)
    assert json.loads(text)["pi_c"] == ["1", "2", "1"] and json.loads(text)["curve"] == "bn128"


def test_infinity_points_round_trip_through_files(tmp_path):
    write_proof(tmp_path / "p.json", Proof(BLS12_381, None, None, BLS12_381.g1_gen))
    back = read_proof(tmp_path / "p.json")
    assert back.pi_a is None and back.pi_b is None and back.pi_c == BLS12_381.g1_gen


def test_public_json_layout_matches_snarkjs():
    assert public_to_json([180, 3]) == '[\n "180",\n "3"\n]'
    assert public_to_json([]) == "[\n]"  # snarkjs writes through bfj, which lays [] out this way


# ---------------------------------------------------------------- reading snarkjs's projective forms

def _jacobian_g1(p, z, q):
    return [str(p[0] * z * z % q), str(p[1] * z * z * z % q), str(z)]


def _fq2_mul(a, b, q):
    return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)


@pytest.mark.parametrize("curve", CURVES)
def test_non_unit_z_is_read_as_jacobian_like_snarkjs(tmp_path, curve):
    proof = read_proof(fx(curve, "proof.json"))
    q = proof.curve.q
    obj = json.loads(fx(curve, "proof.json").read_text())
    obj["pi_a"] = _jacobian_g1(proof.pi_a, 12345, q)
    z = (7, 3)
    z2 = _fq2_mul(z, z, q)
    z3 = _fq2_mul(z2, z, q)
    (x, y) = proof.pi_b
    x2, y3 = _fq2_mul(x, z2, q), _fq2_mul(y, z3, q)
    obj["pi_b"] = [[str(x2[0]), str(x2[1])], [str(y3[0]), str(y3[1])], [str(z[0]), str(z[1])]]
    obj["pi_c"] = obj["pi_c"][:2]  # [x, y] without z is affine
    (tmp_path / "p.json").write_text(json.dumps(obj))
    back = read_proof(tmp_path / "p.json")
    assert (back.pi_a, back.pi_b, back.pi_c) == (proof.pi_a, proof.pi_b, proof.pi_c)


def test_zero_z_is_infinity_whatever_x_and_y(tmp_path):
    obj = json.loads(fx("bn128", "proof.json").read_text())
    obj["pi_a"][2] = "0"
    obj["pi_b"][2] = ["0", "0"]
    (tmp_path / "p.json").write_text(json.dumps(obj))
    back = read_proof(tmp_path / "p.json")
    assert back.pi_a is None and back.pi_b is None


@pytest.mark.parametrize("curve", CURVES)
def test_proof_without_curve_field_gets_its_curve_from_pi_a(tmp_path, curve):
    """rapidsnark leaves "curve" out of proof.json."""
    obj = json.loads(fx(curve, "proof.json").read_text())
    del obj["curve"]
    (tmp_path / "p.json").write_text(json.dumps(obj))
    assert read_proof(tmp_path / "p.json").curve is curve_by_name(curve)


# ---------------------------------------------------------------- bad inputs

def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def _mutated_proof(tmp_path, fn):
    obj = json.loads(fx("bn128", "proof.json").read_text())
    fn(obj)
    return _write(tmp_path, "proof.json", json.dumps(obj))


@pytest.mark.parametrize(
    "mutate,words",
    [
        (lambda o: o.pop("pi_b"), ['missing "pi_b"']),
        (lambda o: o.__setitem__("pi_a", ["1", "2", "3", "4"]), ["pi_a: expected a G1 point"]),
        (lambda o: o.__setitem__("pi_a", [1.5, "2", "1"]), ["pi_a[0]: expected a decimal string, got 1.5"]),
        (lambda o: o.__setitem__("pi_a", ["0X1", "2", "1"]), ["pi_a[0]: expected a decimal string"]),
        (lambda o: o.__setitem__("pi_a", ["-5", "2", "1"]), ["pi_a[0]: expected a decimal string"]),
        (lambda o: o["pi_c"].__setitem__(1, str(BN254.q)), ["pi_c[1]", "not below the bn128 base field prime q"]),
        (lambda o: o["pi_b"].__setitem__(0, ["1"]), ["pi_b[0]: expected an Fq2 element"]),
        (lambda o: o.__setitem__("protocol", "plonk"), ["is a plonk proof; only groth16 is supported"]),
        (lambda o: o.__setitem__("curve", "secp256k1"), ["'secp256k1' is not supported"]),
    ],
)
def test_malformed_proof_is_one_line_error(tmp_path, mutate, words):
    p = _mutated_proof(tmp_path, mutate)
    with pytest.raises(FormatError) as e:
        read_proof(p)
    assert_one_line(e.value, p, *words)


def test_proof_of_another_curve_than_the_key_is_curve_mismatch(tmp_path):
    with pytest.raises(CurveMismatchError) as e:
        read_proof(fx("bls12381", "proof.json"), BN254, against="verification_key.json")
    assert_one_line(e.value, fx("bls12381", "proof.json"), "bls12381 proof", "verification_key.json", "bn128")
    obj = json.loads(fx("bls12381", "proof.json").read_text())
    del obj["curve"]
    p = _write(tmp_path, "p.json", json.dumps(obj))
    with pytest.raises(CurveMismatchError) as e:
        read_proof(p, BN254)
    assert_one_line(e.value, p, "pi_a lies on bls12381")


@pytest.mark.parametrize(
    "text,words",
    [
        ("", ["is not valid JSON"]),
        ("{not json", ["is not valid JSON", "line 1"]),
        ("[1, 2", ["is not valid JSON"]),
        ('"x"', ["expected a JSON object"]),
        ("\xff\xfe", ["not valid JSON"]),
    ],
)
def test_bad_json_is_one_line_error(tmp_path, text, words):
    p = _write(tmp_path, "proof.json", text)
    with pytest.raises(FormatError) as e:
        read_proof(p)
    assert_one_line(e.value, p, *words)


def test_non_utf8_json_is_one_line_error(tmp_path):
    p = tmp_path / "public.json"
    p.write_bytes(b'["\xff"]')
    with pytest.raises(FormatError) as e:
        read_public(p)
    assert_one_line(e.value, p, "not UTF-8")


@pytest.mark.parametrize(
    "text,words",
    [
        ('{"a": 1}', ["expected a JSON array"]),
        ('["1", 2.5]', ["[1]: expected a decimal string, got 2.5"]),
        ('["1", "1e3"]', ["[1]: expected a decimal string"]),
        (json.dumps(["5", str(BN254.r)]), ["[1]", "not below the bn128 scalar field prime r"]),
    ],
)
def test_malformed_public_is_one_line_error(tmp_path, text, words):
    p = _write(tmp_path, "public.json", text)
    with pytest.raises(FormatError) as e:
        read_public(p, BN254)
    assert_one_line(e.value, p, *words)


def test_public_value_below_r_of_bls_but_not_bn_depends_on_curve(tmp_path):
    p = _write(tmp_path, "public.json", json.dumps([str(BN254.r + 1)]))
    assert read_public(p, BLS12_381) == [BN254.r + 1]
    with pytest.raises(FormatError):
        read_public(p, BN254)


def _mutated_vkey(tmp_path, fn):
    obj = json.loads(fx("bls12381", "verification_key.json").read_text())
    fn(obj)
    return _write(tmp_path, "verification_key.json", json.dumps(obj))


@pytest.mark.parametrize(
    "mutate,words",
    [
        (lambda o: o.pop("curve"), ['missing "curve"']),
        (lambda o: o.__setitem__("curve", "bn254x"), ["'bn254x' is not supported"]),
        (lambda o: o.__setitem__("protocol", "plonk"), ["is a plonk verification key"]),
        (lambda o: o.__setitem__("nPublic", "3"), ['"nPublic": expected a non-negative integer']),
        (lambda o: o.__setitem__("nPublic", 4), ['"IC": expected nPublic+1 = 5 G1 points, got 4 points']),
        (lambda o: o.pop("vk_delta_2"), ['missing "vk_delta_2"']),
        (lambda o: o["IC"][2].__setitem__(0, "x"), ["IC[2][0]: expected a decimal string"]),
        (lambda o: o["vk_beta_2"][1].__setitem__(1, str(BLS12_381.q + 1)), ["vk_beta_2[1][1]", "base field prime q"]),
    ],
)
def test_malformed_vkey_is_one_line_error(tmp_path, mutate, words):
    p = _mutated_vkey(tmp_path, mutate)
    with pytest.raises(FormatError) as e:
        read_vkey(p)
    assert_one_line(e.value, p, *words)


def test_vkey_curve_name_is_matched_as_snarkjs_does(tmp_path):
    p = _mutated_vkey(tmp_path, lambda o: o.__setitem__("curve", "BLS12-381"))
    assert read_vkey(p).curve is BLS12_381


@pytest.mark.parametrize("reader", [read_proof, read_public, read_vkey])
def test_missing_json_file_or_directory_is_input_error(tmp_path, reader):
    for path, words in ((tmp_path / "nope.json", "no such file"), (tmp_path, "is a directory")):
        with pytest.raises(InputFileError) as e:
            reader(path)
        assert_one_line(e.value, path, words)
