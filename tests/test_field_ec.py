"""Fq2 arithmetic, batch inversion and G1/G2 group law against py_ecc on fresh random inputs."""
from __future__ import annotations

import random

import numpy as np
import pytest
from py_ecc import optimized_bls12_381 as pe_bls
from py_ecc import optimized_bn128 as pe_bn

from engine.algebra import ec
from engine.algebra import field
from engine.algebra.curves import BLS12_381, BN254

CURVES = [pytest.param(BN254, pe_bn, id="bn128"), pytest.param(BLS12_381, pe_bls, id="bls12381")]
rng = random.Random()


# ---------------------------------------------------------------- py_ecc conversions
def pe_g1(pe, P):
    return pe.Z1 if P is None else (pe.FQ(P[0]), pe.FQ(P[1]), pe.FQ.one())


def from_pe_g1(pe, P):
    if pe.is_inf(P):
        return None
    x, y = pe.normalize(P)
    return (int(x), int(y))


def pe_g2(pe, P):
    if P is None:
        return pe.Z2
    return (pe.FQ2(list(P[0])), pe.FQ2(list(P[1])), pe.FQ2.one())


def from_pe_g2(pe, P):
    if pe.is_inf(P):
        return None
    x, y = pe.normalize(P)
    return ((int(x.coeffs[0]), int(x.coeffs[1])), (int(y.coeffs[0]), int(y.coeffs[1])))


def random_g1(curve, pe):
    return from_pe_g1(pe, pe.multiply(pe.G1, rng.randrange(1, curve.r)))


def random_g2(curve, pe):
    return from_pe_g2(pe, pe.multiply(pe.G2, rng.randrange(1, curve.r)))


def quick_g1(curve, pe):
    """A random point from our own g1_mul (checked against py_ecc above): cheap filler."""
    return ec.g1_mul(curve, curve.g1_gen, rng.randrange(1, curve.r))


def quick_g2(curve, pe):
    return ec.g2_mul(curve, curve.g2_gen, rng.randrange(1, curve.r))


# ---------------------------------------------------------------- fields
@pytest.mark.parametrize("curve,pe", CURVES)
def test_fq2_arithmetic_matches_py_ecc(curve, pe):
    q = curve.q
    for _ in range(20):
        a = (rng.randrange(q), rng.randrange(q))
        b = (rng.randrange(q), rng.randrange(q))
        A, B = pe.FQ2(list(a)), pe.FQ2(list(b))
        as_t = lambda x: tuple(int(c) for c in x.coeffs)  # noqa: E731
        assert field.fq2_mul(a, b, q) == as_t(A * B)
        assert field.fq2_sqr(a, q) == as_t(A * A)
        assert field.fq2_add(a, b, q) == as_t(A + B)
        assert field.fq2_sub(a, b, q) == as_t(A - B)
        assert field.fq2_inv(a, q) == as_t(A.inv())
        assert field.fq2_mul_fq(a, 7, q) == as_t(A * 7)
        assert field.fq2_pow(a, 12345, q) == as_t(A**12345)


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
def test_sqrt_returns_a_root_or_none_for_non_squares(curve):
    q = curve.q
    for _ in range(10):
        x = rng.randrange(q)
        s = field.sqrt(x * x, q)
        assert s is not None and s * s % q == x * x % q
        a = (rng.randrange(q), rng.randrange(q))
        sq = field.fq2_sqr(a, q)
        root = field.fq2_sqrt(sq, q)
        assert root is not None and field.fq2_sqr(root, q) == sq
    assert field.sqrt(q - 1, q) is None  # -1 is a non-residue when q ≡ 3 (mod 4)
    assert field.fq2_sqrt((0, 0), q) == (0, 0)
    assert field.fq2_sqrt((q - 4, 0), q) is not None  # -4 = (2u)^2 is a square in Fq2
    # a non-square of Fq2: its norm is a non-square of Fq
    bad = next((c, 1) for c in range(1, 200) if field.sqrt(c * c + 1, q) is None)
    assert field.fq2_sqrt(bad, q) is None


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 64, 101])
def test_batch_inverse_list_and_array_agree_with_pow(n):
    p = BN254.r
    vals = [rng.randrange(1, p) for _ in range(n)]
    want = [pow(v, -1, p) for v in vals]
    assert field.batch_inverse(vals, p) == want
    arr = np.empty(n, dtype=object)
    arr[:] = vals
    assert list(field.batch_inverse_array(arr, p)) == want
    q = BN254.q
    v2 = [(rng.randrange(q), rng.randrange(1, q)) for _ in range(n)]
    assert field.fq2_batch_inverse(v2, q) == [field.fq2_inv(a, q) for a in v2]


def test_batch_inverse_of_zero_raises():
    p = BN254.r
    with pytest.raises(ZeroDivisionError):
        field.batch_inverse([3, 0, 5], p)
    with pytest.raises(ZeroDivisionError):
        field.batch_inverse_array(np.array([3, 0, 5], dtype=object), p)
    with pytest.raises(ZeroDivisionError):
        field.inv(p, p)


# ---------------------------------------------------------------- G1
@pytest.mark.parametrize("curve,pe", CURVES)
def test_g1_add_matches_py_ecc_including_special_cases(curve, pe):
    P, Q = random_g1(curve, pe), random_g1(curve, pe)
    assert ec.g1_add(curve, P, Q) == from_pe_g1(pe, pe.add(pe_g1(pe, P), pe_g1(pe, Q)))
    assert ec.g1_add(curve, P, P) == from_pe_g1(pe, pe.double(pe_g1(pe, P)))
    assert ec.g1_add(curve, P, ec.g1_neg(curve, P)) is None
    assert ec.g1_add(curve, None, P) == P and ec.g1_add(curve, P, None) == P
    assert ec.g1_add(curve, None, None) is None
    assert ec.g1_neg(curve, None) is None


@pytest.mark.parametrize("curve,pe", CURVES)
def test_g1_mul_matches_py_ecc_for_edge_and_random_scalars(curve, pe):
    P = random_g1(curve, pe)
    r = curve.r
    for k in [0, 1, 2, 3, r - 1, r, r + 1, -1, -7, 2 * r + 5, rng.randrange(r), rng.randrange(r), 1 << 300]:
        want = from_pe_g1(pe, pe.multiply(pe_g1(pe, P), k % r))
        assert ec.g1_mul(curve, P, k) == want, k
    assert ec.g1_mul(curve, None, 5) is None


@pytest.mark.parametrize("curve,pe", CURVES)
def test_g1_mul2_is_the_sum_of_two_products(curve, pe):
    """a·P + b·Q in one pass, against py_ecc: random and edge scalars (0, 1, r-1, >= r,
    negative), P == Q, P == -Q, and the point at infinity on either side."""
    P, Q = random_g1(curve, pe), random_g1(curve, pe)
    r = curve.r

    def want(A, a, B, b):
        terms = [pe.multiply(pe_g1(pe, X), k % r) for X, k in ((A, a), (B, b)) if X is not None and k % r]
        return from_pe_g1(pe, pe.add(*terms)) if len(terms) == 2 else from_pe_g1(pe, terms[0]) if terms else None

    scalars = [0, 1, 2, r - 1, r, r + 3, -5, rng.randrange(r), rng.randrange(r), 1 << 300]
    for a in scalars:
        for b in (0, 1, r - 1, rng.randrange(r)):
            assert ec.g1_mul2(curve, P, a, Q, b) == want(P, a, Q, b), (a, b)
    k = rng.randrange(r)
    assert ec.g1_mul2(curve, P, k, P, r - k) is None  # a·P + (r-a)·P = 0
    assert ec.g1_mul2(curve, P, 3, P, 4) == ec.g1_mul(curve, P, 7)  # P == Q: every column hits P + P
    assert ec.g1_mul2(curve, P, 5, ec.g1_neg(curve, P), 2) == ec.g1_mul(curve, P, 3)  # P + Q = 0 in the table
    assert ec.g1_mul2(curve, None, 5, Q, 9) == ec.g1_mul(curve, Q, 9)
    assert ec.g1_mul2(curve, P, 5, None, 9) == ec.g1_mul(curve, P, 5)
    assert ec.g1_mul2(curve, None, 5, None, 9) is None


@pytest.mark.parametrize("curve,pe", CURVES)
def test_g1_on_curve_accepts_group_points_and_rejects_others(curve, pe):
    P = random_g1(curve, pe)
    assert ec.g1_is_on_curve(curve, P) and ec.g1_is_on_curve(curve, curve.g1_gen)
    assert ec.g1_is_on_curve(curve, None)
    assert not ec.g1_is_on_curve(curve, (P[0], (P[1] + 1) % curve.q))
    assert not ec.g1_is_on_curve(curve, (P[0] + curve.q, P[1]))  # unreduced coordinate
    assert not ec.g1_is_on_curve(curve, (0, 0))


@pytest.mark.parametrize("curve,pe", CURVES)
def test_g1_sum_handles_infinity_repeats_and_cancellation(curve, pe):
    pts = [quick_g1(curve, pe) for _ in range(9)]
    P = pts[0]
    batch = pts + [None, P, P, ec.g1_neg(curve, pts[1]), pts[2]]
    want = None
    for X in batch:
        want = ec.g1_add(curve, want, X)
    assert ec.g1_sum(curve, batch) == want
    assert ec.g1_sum(curve, []) is None
    assert ec.g1_sum(curve, [None, None]) is None
    assert ec.g1_sum(curve, [P]) == P
    assert ec.g1_sum(curve, [P, ec.g1_neg(curve, P)]) is None
    assert ec.g1_sum(curve, [P, P]) == ec.g1_mul(curve, P, 2)


# ---------------------------------------------------------------- G2
@pytest.mark.parametrize("curve,pe", CURVES)
def test_g2_add_and_mul_match_py_ecc(curve, pe):
    P, Q = random_g2(curve, pe), random_g2(curve, pe)
    assert ec.g2_add(curve, P, Q) == from_pe_g2(pe, pe.add(pe_g2(pe, P), pe_g2(pe, Q)))
    assert ec.g2_add(curve, P, P) == from_pe_g2(pe, pe.double(pe_g2(pe, P)))
    assert ec.g2_add(curve, P, ec.g2_neg(curve, P)) is None
    assert ec.g2_add(curve, None, P) == P and ec.g2_add(curve, P, None) == P
    r = curve.r
    for k in [0, 1, r - 1, r, -1, -3, rng.randrange(r)]:
        assert ec.g2_mul(curve, P, k) == from_pe_g2(pe, pe.multiply(pe_g2(pe, P), k % r)), k


@pytest.mark.parametrize("curve,pe", CURVES)
def test_g2_on_curve_and_sum(curve, pe):
    P = random_g2(curve, pe)
    assert ec.g2_is_on_curve(curve, P) and ec.g2_is_on_curve(curve, curve.g2_gen)
    assert ec.g2_is_on_curve(curve, None)
    assert not ec.g2_is_on_curve(curve, (P[0], (P[1][0], (P[1][1] + 1) % curve.q)))
    assert not ec.g2_is_on_curve(curve, ((P[0][1], P[0][0]), (P[1][1], P[1][0])))  # c0/c1 swapped
    pts = [quick_g2(curve, pe) for _ in range(5)] + [P, P, None, ec.g2_neg(curve, P)]
    want = None
    for X in pts:
        want = ec.g2_add(curve, want, X)
    assert ec.g2_sum(curve, pts) == want
    assert ec.g2_sum(curve, [P, ec.g2_neg(curve, P)]) is None


@pytest.mark.parametrize("curve,pe", CURVES)
def test_batch_add_lanes_with_doubling_and_inverse_are_exact(curve, pe):
    for ops, rand, add, neg in (
        (ec.G1_OPS(curve), quick_g1, ec.g1_add, ec.g1_neg),
        (ec.G2_OPS(curve), quick_g2, ec.g2_add, ec.g2_neg),
    ):
        A = [rand(curve, pe) for _ in range(4)]
        B = [rand(curve, pe), A[1], neg(curve, A[2]), rand(curve, pe)]  # lane 1 doubles, lane 2 cancels
        sums, inf = ops.batch_add(ops.to_arrays(A), ops.to_arrays(B))
        got = ops.from_arrays(sums)
        assert list(inf) == [False, False, True, False]
        for i in (0, 1, 3):
            assert got[i] == add(curve, A[i], B[i])


@pytest.mark.parametrize("curve,pe", CURVES)
def test_group_sums_sums_each_key_and_drops_cancelled_groups(curve, pe):
    ops = ec.G1_OPS(curve)
    pts = [quick_g1(curve, pe) for _ in range(6)]
    neg0 = ec.g1_neg(curve, pts[0])
    items = [(0, pts[0]), (0, neg0), (1, pts[1]), (2, pts[2]), (2, pts[3]), (2, pts[2]), (5, pts[4])]
    keys = np.array([k for k, _ in items], dtype=np.int64)
    out_keys, coords = ec.group_sums(ops, keys, ops.to_arrays([p for _, p in items]))
    got = dict(zip(out_keys.tolist(), ops.from_arrays(coords)))
    assert set(got) == {1, 2, 5}
    assert got[1] == pts[1] and got[5] == pts[4]
    assert got[2] == ec.g1_add(curve, ec.g1_mul(curve, pts[2], 2), pts[3])
