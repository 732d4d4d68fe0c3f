"""Groth16 verification against snarkjs's own fixture proofs, and rejection of every kind of bad input."""
from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from engine.algebra import ec
from engine.algebra.curves import BLS12_381, BN254
from engine.formats import read_zkey
from engine.groth16.proof import Proof, VerificationKey
from engine.groth16.verifier import alphabeta, verify, verify_batch, vk_from_zkey

FIXTURES = Path(__file__).parent / "fixtures" / "tiny"
CURVES = pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
rng = random.Random()


def g1(v):
    return None if v[2] == "0" else (int(v[0]), int(v[1]))


def g2(v):
    return None if v[2] == ["0", "0"] else ((int(v[0][0]), int(v[0][1])), (int(v[1][0]), int(v[1][1])))


def load_vk(curve) -> VerificationKey:
    vk = json.loads((FIXTURES / curve.name / "verification_key.json").read_text())
    return VerificationKey(
        curve,
        vk["nPublic"],
        g1(vk["vk_alpha_1"]),
        g2(vk["vk_beta_2"]),
        g2(vk["vk_gamma_2"]),
        g2(vk["vk_delta_2"]),
        [g1(p) for p in vk["IC"]],
    )


def load_proof(curve) -> tuple[list[int], Proof]:
    d = FIXTURES / curve.name
    proof = json.loads((d / "proof.json").read_text())
    public = [int(v) for v in json.loads((d / "public.json").read_text())]
    return public, Proof(curve, g1(proof["pi_a"]), g2(proof["pi_b"]), g1(proof["pi_c"]), public)


def rerandomise(curve, proof: Proof) -> Proof:
    """(A/ρ, ρB, C) verifies whenever (A, B, C) does: a second valid proof without a witness."""
    rho = rng.randrange(2, curve.r)
    return replace(proof, pi_a=ec.g1_mul(curve, proof.pi_a, pow(rho, -1, curve.r)), pi_b=ec.g2_mul(curve, proof.pi_b, rho))


@CURVES
def test_snarkjs_fixture_proof_verifies(curve):
    public, proof = load_proof(curve)
    assert verify(load_vk(curve), public, proof)


@CURVES
def test_vk_from_zkey_equals_exported_verification_key(curve):
    vk = vk_from_zkey(read_zkey(FIXTURES / curve.name / "tiny.zkey"))
    assert vk == load_vk(curve)


@CURVES
def test_cached_alphabeta_matches_the_exported_value(curve):
    vk_raw = json.loads((FIXTURES / curve.name / "verification_key.json").read_text())
    want = tuple(tuple((int(c[0]), int(c[1])) for c in half) for half in vk_raw["vk_alphabeta_12"])
    assert alphabeta(load_vk(curve)) == want


@CURVES
def test_wrong_or_malformed_public_signals_are_rejected(curve):
    vk = load_vk(curve)
    public, proof = load_proof(curve)
    assert not verify(vk, [public[0] + 1] + public[1:], proof)
    assert not verify(vk, [public[0] + curve.r] + public[1:], proof)  # same residue, but not < r
    assert not verify(vk, public[:-1], proof)  # wrong count: False, not an exception
    assert not verify(vk, public + [0], proof)
    assert not verify(vk, ["0X%x" % public[0]] + public[1:], proof)  # snarkjs reads "0x" hex, not "0X"
    assert not verify(vk, [" " + str(public[0])] + public[1:], proof)
    assert not verify(vk, [-1] + public[1:], proof)


@CURVES
def test_public_signals_as_public_json_holds_them_and_files_by_path_verify(curve):
    """json.load of public.json gives decimal strings, which verify() answered False: a valid proof reported
    invalid.  The files themselves may be given by path, as the CLI reads them."""
    d = FIXTURES / curve.name
    vk = load_vk(curve)
    public, proof = load_proof(curve)
    assert verify(vk, json.loads((d / "public.json").read_text()), proof)
    assert verify(d / "verification_key.json", d / "public.json", d / "proof.json")
    assert verify(str(d / "verification_key.json"), tuple(public), proof)
    assert not verify(vk, [str(public[0] + 1)] + public[1:], proof)


@pytest.mark.parametrize("args, words", [
    ((None, "public", "proof"),
     "verify: vk is a VerificationKey (engine.read_vkey) or its file's path, not a NoneType"),
    (("vk", None, "proof"), "verify: public is a list of the public signals (engine.read_public) or its file's path, "
                            "not a NoneType"),
    (("vk", "proof", "public"), "verify: proof is a Proof (engine.read_proof) or its file's path, not a list"),
])
def test_an_argument_of_another_kind_says_what_verify_takes(args, words):
    """They were AttributeErrors and TypeErrors from inside ("object of type 'NoneType' has no len()")."""
    curve = BN254
    vk = load_vk(curve)
    public, proof = load_proof(curve)
    given = {"vk": vk, "public": public, "proof": proof, None: None}
    with pytest.raises(TypeError) as info:
        verify(*(given[a] for a in args))
    assert words in str(info.value)


@CURVES
def test_tampered_or_off_curve_proof_points_are_rejected(curve):
    vk = load_vk(curve)
    public, proof = load_proof(curve)
    q = curve.q
    A, B, C = proof.pi_a, proof.pi_b, proof.pi_c
    assert not verify(vk, public, replace(proof, pi_a=(A[0], (A[1] + 1) % q)))
    assert not verify(vk, public, replace(proof, pi_b=((B[0][1], B[0][0]), (B[1][1], B[1][0]))))
    assert not verify(vk, public, replace(proof, pi_c=ec.g1_neg(curve, C)))
    assert not verify(vk, public, replace(proof, pi_a=ec.g1_add(curve, A, curve.g1_gen)))
    assert not verify(vk, public, replace(proof, pi_c=None))
    other = BLS12_381 if curve is BN254 else BN254
    assert not verify(vk, public, replace(proof, curve=other))


@CURVES
def test_rerandomised_proof_verifies(curve):
    public, proof = load_proof(curve)
    assert verify(load_vk(curve), public, rerandomise(curve, proof))


@CURVES
def test_verify_batch_accepts_valid_batches_and_rejects_any_bad_member(curve):
    vk = load_vk(curve)
    public, proof = load_proof(curve)
    items = [(public, proof), (public, rerandomise(curve, proof)), (public, rerandomise(curve, proof))]
    assert verify_batch(vk, items)
    assert verify_batch(vk, items[:1])
    assert verify_batch(vk, [])
    bad_c = replace(proof, pi_c=ec.g1_add(curve, proof.pi_c, curve.g1_gen))
    assert not verify_batch(vk, items + [(public, bad_c)])
    assert not verify_batch(vk, items + [([public[0] + 1] + public[1:], proof)])
    assert not verify_batch(vk, items + [(public[:-1], proof)])
