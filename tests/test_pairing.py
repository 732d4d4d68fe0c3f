"""The optimal-ate pairing: snarkjs's vk_alphabeta_12, py_ecc up to the documented power, bilinearity."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from py_ecc import optimized_bls12_381 as pe_bls
from py_ecc import optimized_bn128 as pe_bn

from engine.algebra import ec
from engine.algebra import pairing as pr
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.field import fq2_sqr, fq2_sqrt

FIXTURES = Path(__file__).parent / "fixtures" / "tiny"
CURVES = [pytest.param(BN254, pe_bn, id="bn128"), pytest.param(BLS12_381, pe_bls, id="bls12381")]
CURVES_ONLY = pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
rng = random.Random()


def rand_g1(curve):
    return ec.g1_mul(curve, curve.g1_gen, rng.randrange(1, curve.r))


def rand_g2(curve):
    return ec.g2_mul(curve, curve.g2_gen, rng.randrange(1, curve.r))


def from_py_ecc_fq12(curve, f):
    """py_ecc's Fq[w]/(w^12 - 2·x0·w^6 + x0^2 + 1) -> our tower (u = w^6 - x0, v = w^2)."""
    q, x0 = curve.q, curve.fq6_nonresidue[0]
    c = [int(v) for v in f.coeffs]
    C = [((c[i] + x0 * c[i + 6]) % q, c[i + 6] % q) for i in range(6)]
    return ((C[0], C[2], C[4]), (C[1], C[3], C[5]))


def to_py_ecc_fq12(curve, pe, a):
    q, x0 = curve.q, curve.fq6_nonresidue[0]
    (a0, a1, a2), (b0, b1, b2) = a
    C = [a0, b0, a1, b1, a2, b2]
    return pe.FQ12([(C[i][0] - x0 * C[i][1]) % q for i in range(6)] + [C[i][1] for i in range(6)])


def random_fq12(curve):
    q = curve.q
    return tuple(tuple((rng.randrange(q), rng.randrange(q)) for _ in range(3)) for _ in range(2))


def vk_json(curve):
    vk = json.loads((FIXTURES / curve.name / "verification_key.json").read_text())
    a, b = vk["vk_alpha_1"], vk["vk_beta_2"]
    alpha = (int(a[0]), int(a[1]))
    beta = ((int(b[0][0]), int(b[0][1])), (int(b[1][0]), int(b[1][1])))
    ab = tuple(tuple((int(c[0]), int(c[1])) for c in half) for half in vk["vk_alphabeta_12"])
    return alpha, beta, ab


@CURVES_ONLY
def test_pairing_equals_snarkjs_vk_alphabeta_12(curve):
    alpha, beta, want = vk_json(curve)
    assert pr.pairing(curve, alpha, beta) == want


@pytest.mark.parametrize("curve,pe", CURVES)
def test_pairing_is_py_ecc_pairing_to_the_documented_power(curve, pe):
    a, b = rng.randrange(1, curve.r), rng.randrange(1, curve.r)
    P = ec.g1_mul(curve, curve.g1_gen, a)
    Q = ec.g2_mul(curve, curve.g2_gen, b)
    ref = pe.pairing(pe.multiply(pe.G2, b), pe.multiply(pe.G1, a))
    want = from_py_ecc_fq12(curve, ref ** pr.snarkjs_exponent(curve))
    assert pr.pairing(curve, P, Q) == want


@pytest.mark.parametrize("curve,pe", CURVES)
def test_tower_multiplication_and_inverse_match_py_ecc(curve, pe):
    a, b = random_fq12(curve), random_fq12(curve)
    A, B = to_py_ecc_fq12(curve, pe, a), to_py_ecc_fq12(curve, pe, b)
    assert from_py_ecc_fq12(curve, to_py_ecc_fq12(curve, pe, a)) == a  # the conversion itself
    assert pr.fq12_mul(curve, a, b) == from_py_ecc_fq12(curve, A * B)
    assert pr.fq12_sqr(curve, a) == from_py_ecc_fq12(curve, A * A)
    assert pr.fq12_inv(curve, a) == from_py_ecc_fq12(curve, A.inv())
    assert pr.fq12_frobenius(curve, a, 1) == from_py_ecc_fq12(curve, A**curve.q)


@CURVES_ONLY
def test_cyclotomic_squaring_and_frobenius_on_the_cyclotomic_subgroup(curve):
    a = random_fq12(curve)
    # a^((q^6-1)(q^2+1)) lies in the cyclotomic subgroup
    c = pr.fq12_mul(curve, pr.fq12_conj(curve, a), pr.fq12_inv(curve, a))
    c = pr.fq12_mul(curve, pr.fq12_frobenius(curve, c, 2), c)
    assert pr.fq12_cyclotomic_sqr(curve, c) == pr.fq12_sqr(curve, c)
    assert pr.fq12_mul(curve, c, pr.fq12_conj(curve, c)) == pr.FQ12_ONE
    assert pr.fq12_frobenius(curve, c, 3) == pr.fq12_pow(curve, c, curve.q**3)
    e = rng.randrange(1, 1 << 70)
    assert pr.fq12_cyclotomic_pow(curve, c, e) == pr.fq12_pow(curve, c, e)
    assert pr.fq12_cyclotomic_pow(curve, c, -e) == pr.fq12_conj(curve, pr.fq12_pow(curve, c, e))


@CURVES_ONLY
def test_final_exponentiation_is_the_documented_power_of_the_standard_one(curve):
    f = pr.miller_loop(curve, [(rand_g1(curve), rand_g2(curve))])
    f = tuple(tuple((c[0] % curve.q, c[1] % curve.q) for c in half) for half in f)
    k = pr.snarkjs_exponent(curve)
    exponent = k * ((curve.q**12 - 1) // curve.r)
    assert pr.final_exponentiation(curve, f) == pr.fq12_pow(curve, f, exponent)


@CURVES_ONLY
def test_bilinearity_and_non_degeneracy(curve):
    P, Q = rand_g1(curve), rand_g2(curve)
    a, b = rng.randrange(1, curve.r), rng.randrange(1, curve.r)
    e = pr.pairing(curve, P, Q)
    assert e != pr.FQ12_ONE
    assert pr.fq12_cyclotomic_pow(curve, e, curve.r) == pr.FQ12_ONE  # lands in μ_r
    lhs = pr.pairing(curve, ec.g1_mul(curve, P, a), ec.g2_mul(curve, Q, b))
    assert lhs == pr.fq12_cyclotomic_pow(curve, e, a * b)
    P2 = rand_g1(curve)
    assert pr.pairing(curve, ec.g1_add(curve, P, P2), Q) == pr.fq12_mul(curve, e, pr.pairing(curve, P2, Q))


@CURVES_ONLY
def test_pairing_check_accepts_balanced_products_and_rejects_others(curve):
    P, Q = rand_g1(curve), rand_g2(curve)
    a = rng.randrange(2, curve.r)
    good = [(ec.g1_mul(curve, P, a), Q), (ec.g1_neg(curve, P), ec.g2_mul(curve, Q, a))]
    assert pr.pairing_check(curve, good)
    assert pr.pairing_check(curve, good + [(None, Q), (P, None)])  # infinity pairs are skipped
    assert not pr.pairing_check(curve, [(ec.g1_mul(curve, P, a + 1), Q), good[1]])
    assert not pr.pairing_check(curve, [(P, Q)])
    assert pr.pairing_check(curve, [])
    assert pr.pairing(curve, None, Q) == pr.FQ12_ONE and pr.pairing(curve, P, None) == pr.FQ12_ONE


@CURVES_ONLY
def test_g2_point_outside_the_subgroup_gives_a_value_not_an_error(curve):
    """snarkjs checks only that pi_b is on the curve; a twist point of another order must not crash."""
    q, b2 = curve.q, curve.g2_b
    x = (1, 0)
    while True:
        rhs = fq2_sqr(x, q)
        rhs = ((rhs[0] * x[0] - rhs[1] * x[1] + b2[0]) % q, (rhs[0] * x[1] + rhs[1] * x[0] + b2[1]) % q)
        y = fq2_sqrt(rhs, q)
        if y is not None:
            break
        x = (x[0] + 1, 0)
    Q = (x, y)
    assert ec.g2_is_on_curve(curve, Q)
    rQ = None  # r·Q by plain double-and-add (g2_mul would reduce r to 0)
    for bit in bin(curve.r)[2:]:
        rQ = ec.g2_add(curve, rQ, rQ)
        if bit == "1":
            rQ = ec.g2_add(curve, rQ, Q)
    assert rQ is not None  # really outside the r-torsion
    P = rand_g1(curve)
    value = pr.pairing(curve, P, Q)
    assert len(value) == 2 and all(len(h) == 3 for h in value)
    assert isinstance(pr.pairing_check(curve, [(P, Q), (ec.g1_neg(curve, P), Q)]), bool)


@CURVES_ONLY
def test_prepared_lines_are_cached_per_point(curve):
    Q = rand_g2(curve)
    assert pr.prepare_g2(curve, Q) is pr.prepare_g2(curve, Q)
