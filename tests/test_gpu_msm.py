"""The GPU MSM's batch-affine rounds and batched MSMs against the CPU reference.

Marked `gpu`: skipped only when no CUDA device exists.  Small inputs get their affine rounds
forced (`rounds=`), since the planner gives them none or few; every case runs both
accumulations and compares each with engine.algebra.msm.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from engine.algebra import ec
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.limbs import from_ints, g1_to_mont, g2_to_mont
from engine.algebra.msm import msm_g1 as cpu_msm_g1, msm_g2 as cpu_msm_g2
from engine.backends.select import cuda_device_count
from test_gpu_kernels import points, rand_fr

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]


@pytest.fixture(scope="module")
def backend():
    from engine.backends.gpu import GpuBackend

    b = GpuBackend()
    yield b
    b.close()


@pytest.fixture(params=[BN254, BLS12_381], ids=lambda c: c.name)
def curve(request):
    return request.param


def g1(backend, curve, pts, scalars, **kw):
    return backend._msm(curve, g1_to_mont(curve, pts), from_ints(scalars, 4), False, **kw)


@pytest.mark.parametrize("n,fold,rounds", [(1, "full", 3), (3, 1, 2), (100, "full", None), (1000, 2, 4),
                                           (5001, "full", 3), (5001, 1, None)])
def test_affine_rounds_match_cpu(backend, curve, n, fold, rounds):
    rng = random.Random(n)
    pts = points(curve, n, rng)
    scalars = rand_fr(curve, n, rng)  # 0, 1, r-1, 2 first
    if n >= 8:
        pts[5] = None
        pts[6] = pts[7]
    expect = cpu_msm_g1(curve, pts, scalars)
    assert g1(backend, curve, pts, scalars, fold=fold, accumulation="affine", rounds=rounds) == expect
    assert g1(backend, curve, pts, scalars, fold=fold, accumulation="xyzz") == expect


def test_affine_rounds_on_witness_like_scalars(backend, curve):
    """Mostly 0 and 1, repeated points and P, -P pairs: doublings and cancellations inside the
    affine rounds, one bucket holding most entries."""
    rng = random.Random(7)
    n = 6000
    pts = points(curve, n // 4, rng)
    pts = [rng.choice(pts) for _ in range(n)]
    for i in range(0, n, 10):
        pts[i + 1] = ec.g1_neg(curve, pts[i])
    for i in range(3, n, 97):
        pts[i] = None
    scalars = [rng.choice([0, 0, 1, 1, 1, 1, 2, curve.r - 1, rng.randrange(curve.r)]) for _ in range(n)]
    expect = cpu_msm_g1(curve, pts, scalars)
    for rounds in (1, 5, 12):
        assert g1(backend, curve, pts, scalars, accumulation="affine", rounds=rounds) == expect


def test_affine_cancellation_and_doubling(backend, curve):
    rng = random.Random(3)
    p = points(curve, 1, rng)[0]
    pts = [p] * 64 + [ec.g1_neg(curve, p)] * 64
    assert g1(backend, curve, pts, [1] * 128, accumulation="affine", rounds=6) is None
    scalars = [3] * 64 + [0] * 64
    assert g1(backend, curve, pts, scalars, accumulation="affine", rounds=4) == ec.g1_mul(curve, p, 192)
    # n = 1 and every scalar r - 1: -P
    assert g1(backend, curve, [p], [curve.r - 1], accumulation="affine", rounds=3) == ec.g1_neg(curve, p)


@pytest.mark.parametrize("n,rounds", [(1, 2), (5, 3), (300, 2)])
def test_affine_rounds_g2_match_cpu(backend, curve, n, rounds):
    rng = random.Random(n + 1)
    pts = points(curve, n, rng, g2=True)
    scalars = rand_fr(curve, n, rng)
    if n >= 5:
        pts[3] = None
        pts[4] = pts[2]
    expect = cpu_msm_g2(curve, pts, scalars)
    got = backend._msm(curve, g2_to_mont(curve, pts), from_ints(scalars, 4), True, accumulation="affine",
                       rounds=rounds)
    assert got == expect


@pytest.mark.parametrize("accumulation", ["affine", "xyzz"])
def test_batched_msm_matches_one_by_one(backend, curve, accumulation):
    """k vectors against the same bases in one pass: each result as its own MSM's."""
    rng = random.Random(21)
    n = 700
    pts = points(curve, n, rng)
    vectors = [rand_fr(curve, n, rng), [0] * n, [rng.choice([0, 1, 1, 2]) for _ in range(n)],
               [curve.r - 1] * n]
    sc = np.stack([from_ints(v, 4) for v in vectors])
    got = backend._msm(curve, g1_to_mont(curve, pts), sc, False, accumulation=accumulation,
                       rounds=3 if accumulation == "affine" else None)
    assert got == [cpu_msm_g1(curve, pts, v) for v in vectors]


def test_batched_msm_g2_and_fold_one(backend):
    curve, rng = BN254, random.Random(4)
    n = 40
    pts = points(curve, n, rng, g2=True)
    vectors = [rand_fr(curve, n, rng) for _ in range(3)]
    sc = np.stack([from_ints(v, 4) for v in vectors])
    got = backend._msm(curve, g2_to_mont(curve, pts), sc, True, fold=1, accumulation="affine", rounds=2)
    assert got == [cpu_msm_g2(curve, pts, v) for v in vectors]


def test_batched_msm_rejects_unreduced_scalar_naming_its_vector(backend):
    curve = BN254
    pts = g1_to_mont(curve, [curve.g1_gen, curve.g1_gen])
    sc = np.stack([from_ints([1, 2], 4), from_ints([3, curve.r], 4)])
    with pytest.raises(ValueError, match="scalar 1 of vector 1 is not reduced"):
        backend._msm(curve, pts, sc, False)


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
@pytest.mark.parametrize("fold", ["full", 1])
def test_compute_batch_matches_proof_by_proof(curve_name, fold):
    """Proofs of one key computed as one batch: each core result (the five MSMs) as its own
    proof's; witnesses made different (the core does not check them)."""
    from pathlib import Path

    from engine.backends.gpu import GpuBackend
    from engine.formats import read_wtns, read_zkey

    fixtures = Path(__file__).parent / "fixtures" / "tiny" / curve_name
    zkey = read_zkey(fixtures / "tiny.zkey")
    base = read_wtns(fixtures / "tiny.wtns").values
    rng = random.Random(9)
    witnesses = [base]
    for _ in range(3):
        w = [rng.choice([0, 1, rng.randrange(zkey.curve.r)]) for _ in range(base.shape[0])]
        witnesses.append(from_ints(w, 4))
    b = GpuBackend(fold=fold)
    try:
        key = b.load_key(zkey)
        one = [b.prove_core(key, w) for w in witnesses]
        assert b.max_batch(key) >= len(witnesses)
        pend = b.compute_batch([b.stage(key, w) for w in witnesses])
        got = [p.wait() for p in reversed(pend)][::-1]  # any waiting order
        for x, y in zip(got, one):
            assert (x.pi_a0, x.pi_b1_0, x.pi_b2_0, x.pi_c0, x.pi_h) == (y.pi_a0, y.pi_b1_0, y.pi_b2_0, y.pi_c0, y.pi_h)
            assert x.timings["gpu_batch"] == len(witnesses)
        key.close()
    finally:
        b.close()
