"""Prime-order subgroup checks (engine/algebra/subgroup.py) and their use by verify and the readers.

Each fast (endomorphism) test is compared with [r]P = O on random points of the curve that are
in the subgroup and (almost surely) not in it; the counting argument that makes each test exact is
checked with the curves' numbers."""
from __future__ import annotations

import json
import math
import random

import pytest

from conftest import FIXTURES
from engine.algebra import subgroup
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.ec import g1_is_on_curve, g1_mul, g2_is_on_curve, g2_mul
from engine.algebra.field import fq2_add, fq2_mul, fq2_sqr, fq2_sqrt, sqrt
from engine.errors import FormatError
from engine.formats.json import read_proof, read_vkey
from engine.groth16.proof import Proof
from engine.groth16.verifier import verify, vk_from_zkey
from engine.formats import read_zkey

SEED = 1414


def _random_g1_curve_point(curve, rng):
    q = curve.q
    while True:
        x = rng.randrange(q)
        y = sqrt((x * x * x + curve.g1_b) % q, q)
        if y is not None:
            return (x, y)


def _random_g2_curve_point(curve, rng):
    q = curve.q
    while True:
        x = (rng.randrange(q), rng.randrange(q))
        y = fq2_sqrt(fq2_add(fq2_mul(fq2_sqr(x, q), x, q), curve.g2_b, q), q)
        if y is not None:
            return (x, y)


def _by_order(curve, P, g2):
    mul = subgroup.g2_mul_unreduced if g2 else subgroup.g1_mul_unreduced
    return mul(curve, P, curve.r) is None


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
@pytest.mark.parametrize("g2", [False, True], ids=["G1", "G2"])
def test_fast_test_agrees_with_the_order_test(curve, g2):
    rng = random.Random(SEED)
    test = subgroup.g2_in_subgroup if g2 else subgroup.g1_in_subgroup
    gen, mul = (curve.g2_gen, g2_mul) if g2 else (curve.g1_gen, g1_mul)
    outside = 0
    for i in range(6):
        inside = mul(curve, gen, rng.randrange(1, curve.r))
        assert test(curve, inside) and _by_order(curve, inside, g2), f"seed {SEED}, point {i}"
        P = (_random_g2_curve_point if g2 else _random_g1_curve_point)(curve, rng)
        assert (g2_is_on_curve if g2 else g1_is_on_curve)(curve, P)
        in_by_order = _by_order(curve, P, g2)
        assert test(curve, P) == in_by_order, f"seed {SEED}, point {i}: {P}"
        outside += not in_by_order
        # a subgroup point plus a small-order (cofactor) component is caught
        if not in_by_order:
            mixed = (subgroup.g2_mul_unreduced if g2 else subgroup.g1_mul_unreduced)(curve, P, curve.r)  # in E[h]
            assert mixed is not None and not test(curve, mixed)
    assert test(curve, None)
    if curve is BN254 and not g2:
        assert outside == 0  # cofactor 1: every curve point is in G1
    else:
        assert outside == 6  # random curve points are outside (cofactor > 1)


def _orders(curve):
    """(t, #E(Fq), #E'(Fq^2)) for the curve and its sextic twist (the one r divides)."""
    q, u, r = curve.q, curve.x_param, curve.r
    t = 6 * u * u + 1 if curve.family == "bn" else u + 1
    n1 = q + 1 - t
    t2 = t * t - 2 * q  # trace over Fq^2
    f = math.isqrt((4 * q * q - t2 * t2) // 3)
    assert 3 * f * f == 4 * q * q - t2 * t2
    twists = [q * q + 1 - (s1 * 3 * f + s2 * t2) // 2 for s1 in (1, -1) for s2 in (1, -1)]
    n2 = next(n for n in twists if n % r == 0 and n != n1 * (q + 1 + t))
    return t, n1, n2


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_the_endomorphism_tests_are_exact(curve):
    """The kernel of (endomorphism - λ) meets the curve's rational points in exactly the subgroup."""
    q, u, r = curve.q, curve.x_param, curve.r
    t, n1, n2 = _orders(curve)
    assert n1 % r == 0 and n2 % r == 0
    lam2 = subgroup.g2_eigenvalue(curve)
    kernel2 = lam2 * lam2 - t * lam2 + q  # deg(ψ - λ), ψ² - tψ + q = 0
    assert kernel2 % r == 0 and math.gcd(kernel2 // r, n2 // r) == 1
    if curve.family == "bls12":
        lam1 = subgroup.g1_eigenvalue(curve)
        kernel1 = lam1 * lam1 + lam1 + 1  # deg(φ - λ), φ² + φ + 1 = 0
        assert kernel1 == r
        assert kernel2 == r * (u - 1) ** 2 // 3
    else:
        assert n1 == r and kernel2 == r


def _fixture_vk_and_proof(curve_name):
    d = FIXTURES / "tiny" / curve_name
    vk = read_vkey(d / "verification_key.json")
    proof = read_proof(d / "proof.json", vk.curve)
    public = [int(x) for x in json.loads((d / "public.json").read_text())]
    return d, vk, proof, public


def _bad_point(curve, g2):
    rng = random.Random(SEED + 1)
    while True:
        P = (_random_g2_curve_point if g2 else _random_g1_curve_point)(curve, rng)
        if not _by_order(curve, P, g2):
            return P


def _jacobian_json(P, g2):
    if g2:
        return [[str(P[0][0]), str(P[0][1])], [str(P[1][0]), str(P[1][1])], ["1", "0"]]
    return [str(P[0]), str(P[1]), "1"]


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_verify_rejects_proof_points_outside_the_subgroup(curve_name):
    d, vk, proof, public = _fixture_vk_and_proof(curve_name)
    curve = vk.curve
    assert verify(vk, public, proof)
    bad_b = Proof(curve, proof.pi_a, _bad_point(curve, True), proof.pi_c)
    assert not verify(vk, public, bad_b)
    if curve is BLS12_381:
        bad_a = Proof(curve, _bad_point(curve, False), proof.pi_b, proof.pi_c)
        assert not verify(vk, public, bad_a)
        bad_c = Proof(curve, proof.pi_a, proof.pi_b, _bad_point(curve, False))
        assert not verify(vk, public, bad_c)


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_the_json_readers_name_a_point_outside_the_subgroup(curve_name, tmp_path):
    d, vk, _proof, _public = _fixture_vk_and_proof(curve_name)
    curve = vk.curve
    doc = json.loads((d / "proof.json").read_text())
    doc["pi_b"] = _jacobian_json(_bad_point(curve, True), True)
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"pi_b is a point of the .* outside its prime-order subgroup G2"):
        read_proof(path, curve)
    key = json.loads((d / "verification_key.json").read_text())
    key["vk_delta_2"] = _jacobian_json(_bad_point(curve, True), True)
    if curve is BLS12_381:
        key["IC"][0] = _jacobian_json(_bad_point(curve, False), False)
    vpath = tmp_path / "verification_key.json"
    vpath.write_text(json.dumps(key))
    with pytest.raises(FormatError, match=r"outside its prime-order subgroup"):
        read_vkey(vpath)


def test_verify_rejects_a_key_with_points_outside_the_subgroup():
    from dataclasses import replace  # noqa: PLC0415

    _d, vk, proof, public = _fixture_vk_and_proof("bls12381")
    assert not verify(replace(vk, gamma2=_bad_point(vk.curve, True)), public, proof)
    assert not verify(replace(vk, alpha1=_bad_point(vk.curve, False)), public, proof)


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_a_zkey_whose_verification_key_points_are_outside_the_subgroup_is_refused(curve_name, tmp_path):
    from dataclasses import replace  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    from engine.algebra.limbs import g2_to_mont  # noqa: PLC0415

    zkey = read_zkey(FIXTURES / "tiny" / curve_name / "tiny.zkey")
    vk_from_zkey(zkey)  # the real one passes
    bad = g2_to_mont(zkey.curve, [_bad_point(zkey.curve, True)])[0]
    forged = replace(zkey, delta2=np.asarray(bad), path=str(tmp_path / "forged.zkey"))
    with pytest.raises(FormatError, match=r"forged.zkey: vk_delta_2 is a point of the .* outside"):
        vk_from_zkey(forged)


def test_a_valid_proof_with_a_small_order_component_added_is_refused():
    """BLS12-381 G1 has cofactor (u-1)²/3: pi_a + T or pi_c + T (T of order dividing it) still
    satisfies the pairing equation, so without the subgroup check verify accepted a second,
    different proof of the same statement (malleability).  Now it is refused."""
    from engine.algebra.ec import g1_add  # noqa: PLC0415

    _d, vk, proof, public = _fixture_vk_and_proof("bls12381")
    curve = vk.curve
    torsion = subgroup.g1_mul_unreduced(curve, _random_g1_curve_point(curve, random.Random(SEED)), curve.r)
    assert torsion is not None  # a point of the cofactor part
    for forged in (Proof(curve, g1_add(curve, proof.pi_a, torsion), proof.pi_b, proof.pi_c),
                   Proof(curve, proof.pi_a, proof.pi_b, g1_add(curve, proof.pi_c, torsion))):
        assert g1_is_on_curve(curve, forged.pi_a) and g1_is_on_curve(curve, forged.pi_c)
        assert not verify(vk, public, forged)
