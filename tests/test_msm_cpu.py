"""The CPU MSM (Pippenger, batch-affine buckets, pool) against a naive sum of scalar multiplications."""
from __future__ import annotations

import random

import pytest

from engine.algebra import ec
from engine.algebra import msm
from engine.algebra.curves import BLS12_381, BN254

CURVES = pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
rng = random.Random()


def g1_points(curve, n):
    return [ec.g1_mul(curve, curve.g1_gen, rng.randrange(1, curve.r)) for _ in range(n)]


def g2_points(curve, n):
    return [ec.g2_mul(curve, curve.g2_gen, rng.randrange(1, curve.r)) for _ in range(n)]


def naive_g1(curve, pts, ks):
    acc = None
    for P, k in zip(pts, ks):
        acc = ec.g1_add(curve, acc, ec.g1_mul(curve, P, k))
    return acc


def naive_g2(curve, pts, ks):
    acc = None
    for P, k in zip(pts, ks):
        acc = ec.g2_add(curve, acc, ec.g2_mul(curve, P, k))
    return acc


@CURVES
@pytest.mark.parametrize("n", [1, 2, 3, 5, 17, 100])
def test_msm_g1_random_matches_naive(curve, n):
    pts = g1_points(curve, n)
    ks = [rng.randrange(curve.r) for _ in range(n)]
    assert msm.msm_g1(curve, pts, ks, workers=1) == naive_g1(curve, pts, ks)


@CURVES
def test_msm_g1_mixed_zero_one_infinity_repeats_and_edge_scalars(curve):
    r = curve.r
    pts = g1_points(curve, 12)
    P = pts[0]
    pts += [None, P, P, P, ec.g1_neg(curve, P), pts[1], pts[1]]
    ks = [0, 1, 1, r - 1, 2, rng.randrange(r), 1, 0, 3, rng.randrange(r), r - 1, 5, 1]
    ks += [7, rng.randrange(r), 9, 1, 1, r - 2]
    assert len(pts) == len(ks)
    assert msm.msm_g1(curve, pts, ks, workers=1) == naive_g1(curve, pts, ks)


@CURVES
def test_msm_g1_degenerate_inputs(curve):
    r = curve.r
    pts = g1_points(curve, 4)
    assert msm.msm_g1(curve, [], [], workers=1) is None
    assert msm.msm_g1(curve, pts, [0] * 4, workers=1) is None
    assert msm.msm_g1(curve, [None] * 3, [5, 6, 7], workers=1) is None
    assert msm.msm_g1(curve, pts[:1], [1], workers=1) == pts[0]
    assert msm.msm_g1(curve, pts[:1], [r + 3], workers=1) == ec.g1_mul(curve, pts[0], 3)
    assert msm.msm_g1(curve, pts[:1], [-1], workers=1) == ec.g1_neg(curve, pts[0])
    # every bucket cancels: k·P + k·(-P)
    k = rng.randrange(r)
    many = pts * 10
    negs = [ec.g1_neg(curve, X) for X in many]
    assert msm.msm_g1(curve, many + negs, [k] * 80, workers=1) is None
    with pytest.raises(ValueError, match="points"):
        msm.msm_g1(curve, pts, [1, 2], workers=1)


@CURVES
def test_msm_g1_same_point_many_times_uses_doublings_correctly(curve):
    P = g1_points(curve, 1)[0]
    ks = [rng.randrange(curve.r) for _ in range(300)]
    assert msm.msm_g1(curve, [P] * 300, ks, workers=1) == ec.g1_mul(curve, P, sum(ks))


@CURVES
@pytest.mark.parametrize("n", [1, 3, 20])
def test_msm_g2_random_matches_naive(curve, n):
    pts = g2_points(curve, n)
    ks = [rng.randrange(curve.r) for _ in range(n)]
    assert msm.msm_g2(curve, pts, ks, workers=1) == naive_g2(curve, pts, ks)


@CURVES
def test_msm_g2_mixed_special_values(curve):
    r = curve.r
    pts = g2_points(curve, 6)
    P = pts[0]
    pts += [None, P, P, ec.g2_neg(curve, P)]
    ks = [1, 0, rng.randrange(r), r - 1, 1, 2, 9, 4, 1, 6]
    assert msm.msm_g2(curve, pts, ks, workers=1) == naive_g2(curve, pts, ks)


@pytest.mark.parametrize("c", [2, 3, 5, 8, 11, 13, 16])
def test_signed_digits_reconstruct_the_scalar_and_stay_in_range(c):
    r = BN254.r
    bits = r.bit_length()
    ks = [rng.randrange(r) for _ in range(50)] + [r - 1, 1, 2, (1 << (bits - 1)) + 12345]
    d = msm.signed_digits(ks, c, bits)
    half = 1 << (c - 1)
    assert d.min() >= -half and d.max() < half
    for i, k in enumerate(ks):
        assert sum(int(d[w, i]) << (c * w) for w in range(d.shape[0])) == k


def test_window_bits_grow_with_n():
    widths = [msm.window_bits(n, 254) for n in (1, 16, 256, 4096, 65536, 1 << 20)]
    assert widths == sorted(widths) and widths[0] >= 2 and widths[-1] > widths[2]


def test_pool_split_matches_serial_and_restarts_after_shutdown(monkeypatch):
    curve = BN254
    monkeypatch.setitem(msm.PARALLEL_MIN_POINTS, 1, 8)
    monkeypatch.setitem(msm.PARALLEL_MIN_POINTS, 2, 4)
    pts = g1_points(curve, 40)
    ks = [rng.randrange(curve.r) for _ in range(40)]
    ks[3] = 1
    want = msm.msm_g1(curve, pts, ks, workers=1)
    assert msm.msm_g1(curve, pts, ks, workers=2) == want
    assert msm.cpu_pool.running()  # the split really ran in the pool
    q2 = g2_points(curve, 6)
    k2 = [rng.randrange(curve.r) for _ in range(6)]
    assert msm.msm_g2(curve, q2, k2, workers=2) == msm.msm_g2(curve, q2, k2, workers=1)
    msm.shutdown_pool()
    assert not msm.cpu_pool.running()
    assert msm.msm_g1(curve, pts, ks, workers=2) == want  # a fresh pool comes up on demand
    msm.shutdown_pool()
