"""The GPU MSM's batch-affine rounds and batched MSMs against the CPU reference.

Marked `gpu`: skipped only when no CUDA device exists.  Small inputs get their affine rounds
forced (`rounds=`), since the planner gives them none or few; every case runs both
accumulations and compares each with engine.algebra.msm.
"""
from __future__ import annotations

import functools
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


@pytest.fixture(params=[True, False], ids=["one-kernel", "three-kernels"])
def affine_round(request, monkeypatch):
    """Each affine case under both forms of a round: one kernel (msm.AFFINE_FUSED: prefixes in shared
    memory, the block's root inverted by divsteps) and three (forward, invert, backward)."""
    from engine.backends.gpu import msm as gmsm

    monkeypatch.setattr(gmsm, "AFFINE_FUSED", request.param)
    return request.param


def g1(backend, curve, pts, scalars, **kw):
    return backend._msm(curve, g1_to_mont(curve, pts), from_ints(scalars, 4), False, **kw)


@pytest.mark.parametrize("n,fold,rounds", [(1, "full", 3), (3, 1, 2), (100, "full", None), (1000, 2, 4),
                                           (5001, "full", 3), (5001, 1, None)])
def test_affine_rounds_match_cpu(backend, curve, n, fold, rounds, affine_round):
    rng = random.Random(n)
    pts = points(curve, n, rng)
    scalars = rand_fr(curve, n, rng)  # 0, 1, r-1, 2 first
    if n >= 8:
        pts[5] = None
        pts[6] = pts[7]
    expect = cpu_msm_g1(curve, pts, scalars)
    assert g1(backend, curve, pts, scalars, fold=fold, accumulation="affine", rounds=rounds) == expect
    assert g1(backend, curve, pts, scalars, fold=fold, accumulation="xyzz") == expect


def test_affine_rounds_on_witness_like_scalars(backend, curve, affine_round):
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


def test_affine_cancellation_and_doubling(backend, curve, affine_round):
    rng = random.Random(3)
    p = points(curve, 1, rng)[0]
    pts = [p] * 64 + [ec.g1_neg(curve, p)] * 64
    assert g1(backend, curve, pts, [1] * 128, accumulation="affine", rounds=6) is None
    scalars = [3] * 64 + [0] * 64
    assert g1(backend, curve, pts, scalars, accumulation="affine", rounds=4) == ec.g1_mul(curve, p, 192)
    # n = 1 and every scalar r - 1: -P
    assert g1(backend, curve, [p], [curve.r - 1], accumulation="affine", rounds=3) == ec.g1_neg(curve, p)


def test_affine_rounds_over_inlined_products_match_cpu(backend, curve, monkeypatch, affine_round):
    """The batch-affine rounds over G1's inlined split products (msm_affine_*_g1i, product ABI "split_inline"):
    random scalars with infinity and a repeated point, n = 1 and r - 1, doublings and cancellations."""
    from engine.backends.gpu import msm_builds

    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "split_inline", "g2": "split_inline"})
    rng = random.Random(40)
    pts = points(curve, 5001, rng)
    pts[5], pts[6] = None, pts[7]
    scalars = rand_fr(curve, 5001, rng)
    expect = cpu_msm_g1(curve, pts, scalars)
    for fold, rounds in (("full", 3), (1, 5)):
        assert g1(backend, curve, pts, scalars, fold=fold, accumulation="affine", rounds=rounds) == expect
    p = pts[0]
    assert g1(backend, curve, [p] * 64 + [ec.g1_neg(curve, p)] * 64, [1] * 128, accumulation="affine",
              rounds=6) is None
    assert g1(backend, curve, [p] * 64, [3] * 64, accumulation="affine", rounds=4) == ec.g1_mul(curve, p, 192)
    assert g1(backend, curve, [p], [curve.r - 1], accumulation="affine", rounds=3) == ec.g1_neg(curve, p)


@pytest.mark.parametrize("n,rounds", [(1, 2), (5, 3), (300, 2)])
def test_affine_rounds_g2_match_cpu(backend, curve, n, rounds, affine_round):
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


@pytest.mark.parametrize("threads,m", [(32, 3), (64, 8), (128, 5)])
def test_affine_round_in_one_kernel_under_other_shapes(backend, curve, threads, m, monkeypatch):
    """The one-kernel round under blocks of 32 to 128 threads and slots a thread that divide nothing (threads
    left with fewer slots, or none, in the last block); G2's shared memory past 48 KiB (BLS12-381: 128 x 7
    elements of 96 bytes)."""
    from engine.backends.gpu import msm as gmsm

    monkeypatch.setattr(gmsm, "AFFINE_FUSED", True)
    monkeypatch.setattr(gmsm, "AFFINE_THREADS", threads)
    monkeypatch.setattr(gmsm, "AFFINE_PER_THREAD", m)
    rng = random.Random(threads + m)
    pts = points(curve, 3001, rng)
    pts[5], pts[6] = None, pts[7]
    scalars = rand_fr(curve, 3001, rng)
    assert g1(backend, curve, pts, scalars, fold="full", accumulation="affine", rounds=4) == cpu_msm_g1(curve, pts,
                                                                                                         scalars)
    g2_pts = points(curve, 400, rng, g2=True)
    g2_pts[3], g2_pts[4] = None, g2_pts[2]
    g2_scalars = rand_fr(curve, 400, rng)
    got = backend._msm(curve, g2_to_mont(curve, g2_pts), from_ints(g2_scalars, 4), True, accumulation="affine",
                       rounds=3)
    assert got == cpu_msm_g2(curve, g2_pts, g2_scalars)


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
    # resident: with its fold forced to 1 the planner would put this key on the host tier, whose
    # proofs stream their bases and never batch (measured on the H200: max_batch 1 there)
    b = GpuBackend(fold=fold, tier="resident")
    try:
        key = b.load_key(zkey)
        assert key.host is None and key.plan_w.fold == (key.plan_w.windows if fold == "full" else fold)
        one = [b.prove_core(key, w) for w in witnesses]
        assert b.max_batch(key) >= len(witnesses)
        pend = b.compute_batch([b.stage(key, w) for w in witnesses])
        got = [p.wait() for p in reversed(pend)][::-1]  # any waiting order
        for x, y in zip(got, one):
            assert (x.pi_a0, x.pi_b1_0, x.pi_b2_0, x.pi_c0, x.pi_h) == (y.pi_a0, y.pi_b1_0, y.pi_b2_0, y.pi_c0, y.pi_h)
            assert x.timings["gpu_batch"] == len(witnesses)
        # each batched proof got its own device tail: the real witness's proof verifies (on the
        # device and by the CPU verifier), the made-up witnesses' proofs fail the device check
        from engine.groth16.proof import Proof
        from engine.groth16.prover import public_signals
        from engine.groth16.verifier import verify, vk_from_zkey

        assert got[0].verified is True and all(x.verified is False for x in got[1:])
        proof = Proof(zkey.curve, *got[0].proof, public_signals(zkey, base), {})
        assert verify(vk_from_zkey(zkey), proof.public, proof)
        key.close()
    finally:
        b.close()


def _bucket_counts(plan, scalars):
    """Entries of each bucket as msm_digits sorts them (signed c-bit digits, windows folded)."""
    c, B = plan.c, plan.buckets_per_group
    counts = [0] * plan.keys
    for s in scalars:
        carry = 0
        for w in range(plan.windows):
            val = ((s >> (w * c)) & ((1 << c) - 1)) + carry
            carry, d = (1, val - (1 << c)) if val > B else (0, val)
            if d:
                counts[(w // plan.fold) * B + abs(d) - 1] += 1
    return counts


def _fix_up_scalars(curve, rng, n, B):
    """Scalars whose buckets are cut across many chunks (a block's fix-up: 600 ones), tens (a
    warp's: 100 twos), a few (one thread's: small values 2-4 times each) and one (written
    whole), beside zeros, r - 1 and a few random scalars."""
    fixed = [1] * 600 + [2] * 100 + [curve.r - 1] * 3 + [0] * 20 + [rng.randrange(curve.r) for _ in range(12)]
    small = [v for v in range(3, B + 1) for _ in range(1 + v % 4)]
    scalars = (fixed + small * n)[:n]
    rng.shuffle(scalars)
    return scalars


def _fix_up_plan(curve, n):
    """A 10-bit full-fold plan (512 buckets): at these n a chunk is one entry, so a bucket's
    entry count is the number of chunks it spans."""
    from engine.backends.gpu import msm as gmsm

    bits = curve.r.bit_length()
    w = gmsm.windows_for(10, bits)
    return gmsm.MsmPlan(n, 10, w, w, bits)


def _check_fix_up_classes(backend, plan, scalars):
    from engine.backends.gpu import msm as gmsm

    assert gmsm.AccumulateLayout.for_plan(plan, backend.device.sm_count).chunk == 1
    counts = _bucket_counts(plan, scalars)
    assert any(m > gmsm.FIX_WARP_MAX for m in counts)
    assert any(gmsm.FIX_SERIAL < m <= gmsm.FIX_WARP_MAX for m in counts)
    assert any(1 < m <= gmsm.FIX_SERIAL for m in counts) and 1 in counts and 0 in counts


# (serial max, warp max, partials a lane): the defaults' neighbours, lane groups of 2 to 32
FIX_CLASSES = [(16, 256, 8), (4, 256, 2), (8, 256, 32), (16, 16, 4)]


@pytest.mark.parametrize("fix", FIX_CLASSES, ids=lambda f: "%d-%d-%d" % f)
def test_fix_up_lists_serial_warp_block_g1(backend, curve, fix, monkeypatch):
    """Every fix-up path of msm_fix / msm_fix_heavy in one MSM, against the CPU reference; points
    with infinity, repeats and P, -P pairs; n not a power of two; the full fold and fold 1."""
    from engine.backends.gpu import msm as gmsm

    for name, value in zip(("FIX_SERIAL", "FIX_WARP_MAX", "FIX_PER_LANE"), fix):
        monkeypatch.setattr(gmsm, name, value)
    rng = random.Random(15)
    n = 1001
    pts = points(curve, n, rng)
    pts[5], pts[6], pts[9] = None, pts[7], ec.g1_neg(curve, pts[8])
    plan = _fix_up_plan(curve, n)
    scalars = _fix_up_scalars(curve, rng, n, plan.buckets_per_group)
    if fix[1] > fix[0]:
        _check_fix_up_classes(backend, plan, scalars)
    expect = cpu_msm_g1(curve, pts, scalars)
    assert g1(backend, curve, pts, scalars, plan=plan) == expect
    assert g1(backend, curve, pts, scalars) == expect  # the planner's window
    assert g1(backend, curve, pts, scalars, fold=1) == expect


def test_fix_up_lists_g2(backend):
    curve, rng = BN254, random.Random(16)
    n = 900
    pts = points(curve, n, rng, g2=True)
    pts[3], pts[4] = None, pts[2]
    plan = _fix_up_plan(curve, n)
    scalars = _fix_up_scalars(curve, rng, n, plan.buckets_per_group)
    _check_fix_up_classes(backend, plan, scalars)
    got = backend._msm(curve, g2_to_mont(curve, pts), from_ints(scalars, 4), True, plan=plan)
    assert got == cpu_msm_g2(curve, pts, scalars)


@pytest.mark.parametrize("c,seg_len", [(3, None), (9, 3), (13, 1), (18, 1), (18, 2), (18, 5)])
def test_any_window_and_segment_length_agree(backend, curve, c, seg_len):
    """Windows and segment lengths the planner would not pick: segments that do not divide the
    buckets, one bucket a segment, a tree of two passes with four and two points a thread (c = 18,
    seg_len 1 and 2: 2^17 and 2^16 segments, 1024 and 512 block sums in blocks of 128)."""
    from engine.backends.gpu import msm as gmsm

    rng = random.Random(c * 10 + (seg_len or 0))
    n = 300
    pts = points(curve, n, rng)
    pts[11] = None
    scalars = rand_fr(curve, n, rng)
    bits = curve.r.bit_length()
    w = gmsm.windows_for(c, bits)
    plan = gmsm.MsmPlan(n, c, w, w, bits)
    layout = gmsm.AccumulateLayout.for_plan(plan, backend.device.sm_count, seg_len)
    if c == 18 and seg_len in (1, 2):
        sums = (1 << 17) // seg_len // gmsm.REDUCE_THREADS["g1"]
        assert layout.tree_levels() == [sums, 1] and gmsm.tree_pass_per_thread(sums) == 4 // seg_len
    expect = cpu_msm_g1(curve, pts, scalars)
    assert g1(backend, curve, pts, scalars, plan=plan, seg_len=seg_len) == expect
    folded = gmsm.MsmPlan(n, c, w, 2, bits)  # groups combined by Horner's rule
    assert g1(backend, curve, pts, scalars, plan=folded, seg_len=seg_len) == expect


def test_one_point_every_edge_scalar(backend, curve):
    """n = 1: zero, one, r - 1, and the point at infinity, G1 and G2."""
    rng = random.Random(17)
    p, q = points(curve, 1, rng)[0], points(curve, 1, rng, g2=True)[0]
    for s in (0, 1, 2, curve.r - 1, rng.randrange(curve.r)):
        assert g1(backend, curve, [p], [s]) == cpu_msm_g1(curve, [p], [s])
        assert g1(backend, curve, [None], [s]) is None
        got = backend._msm(curve, g2_to_mont(curve, [q]), from_ints([s], 4), True)
        assert got == cpu_msm_g2(curve, [q], [s])


@functools.lru_cache(maxsize=4)
def _abi_case(curve):
    """Points, scalars and the CPU reference of test_product_builds_match_cpu (one per curve,
    shared by its builds): G1 4099 points with infinity, a repeated point, P and -P; G2 700 points
    with infinity and a repeat; zero, one, r-1 and 2 first."""
    rng = random.Random(151)
    n = 4099
    pts = points(curve, n, rng)
    pts[5], pts[6], pts[9] = None, pts[7], ec.g1_neg(curve, pts[8])
    scalars = rand_fr(curve, n, rng)
    q = points(curve, 700, rng, g2=True)
    q[3], q[4] = None, q[2]
    sq = rand_fr(curve, 700, rng)
    return pts, scalars, cpu_msm_g1(curve, pts, scalars), q, sq, cpu_msm_g2(curve, q, sq)


@pytest.mark.parametrize("abi", ["ref", "value", "mixed", "eo", "mixed_eo", "split", "split_inline"])
def test_product_builds_match_cpu(backend, curve, abi, monkeypatch):
    """Each build of the XYZZ pass's base-field product (msm_builds.PRODUCT_ABI), G1 and G2 (with both
    groups' segments in blocks of 128 and of 256), the full fold and fold 1, three MSMs of one sorted
    vector in one launch set, n not a power of two, infinity, a repeated point, P and -P, zero,
    one, r-1."""
    from cuda_kernels.driver import Device
    from engine.backends.gpu import msm as gmsm
    from engine.backends.gpu import msm_builds
    from engine.backends.gpu.points import decode_xyzz_g1

    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": abi, "g2": abi})
    pts, scalars, expect, q, sq, expect_g2 = _abi_case(curve)
    n, bits = len(pts), curve.r.bit_length()
    for c, fold in ((5, "full"), (9, 1), (13, "full")):
        w = gmsm.windows_for(c, bits)
        plan = gmsm.MsmPlan(n, c, w, w if fold == "full" else fold, bits)
        assert g1(backend, curve, pts, scalars, plan=plan) == expect
    assert g1(backend, curve, pts, scalars) == expect  # the planner's window
    mod, stream = backend._run(curve)
    dev = backend.device
    plan = gmsm.plan_msm(n, bits, "full", accumulation="xyzz")
    assert gmsm.fused_sets(plan) == 3
    layout = gmsm.AccumulateLayout.for_plan(plan, dev.sm_count)
    acc = 4 * curve.n8q
    host = g1_to_mont(curve, pts)
    bases = dev.alloc(plan.fold * host.nbytes, stream)
    Device.upload(bases, host, stream)
    gmsm.precompute(mod, "g1", plan, bases, stream)
    sc = backend._upload_fr(from_ints(scalars, 4), stream)
    sort, bs = gmsm.SortScratch(dev, [plan], stream), gmsm.BucketScratch(dev, [(plan, layout)], acc, stream)
    res = dev.alloc(3 * acc, stream)
    gmsm.sort_scalars(mod, plan, sc, sort, stream)
    gmsm.accumulate_sets(mod, "g1", plan, layout, [(bases, res.ptr + j * acc) for j in range(3)], sort, bs, acc,
                         stream)
    raw = np.empty(3 * acc, dtype=np.uint8)
    Device.download(raw, res, stream)
    stream.synchronize()
    for buf in (bases, sc, res):
        Device.free(buf, stream)
    sort.free(stream)
    bs.free(stream)
    assert [decode_xyzz_g1(curve, raw[j * acc:(j + 1) * acc]) for j in range(3)] == [expect] * 3
    wq = gmsm.windows_for(5, bits)
    for threads in (128, 256):
        monkeypatch.setitem(gmsm.REDUCE_THREADS, "g2", threads)
        monkeypatch.setitem(gmsm.REDUCE_THREADS, "g1", threads)
        got = backend._msm(curve, g2_to_mont(curve, q), from_ints(sq, 4), True,
                           plan=gmsm.MsmPlan(len(q), 5, wq, wq, bits))
        assert got == expect_g2
        assert backend._msm(curve, g2_to_mont(curve, q), from_ints(sq, 4), True) == expect_g2
        assert g1(backend, curve, pts, scalars) == expect


@pytest.mark.parametrize("abi,bounds", [("eo", {"g1": 3, "g2": 3}), ("mixed_eo", {"g1": 5, "g2": 3}),
                                         ("mixed", {"g1": 5}), ("split", {"g1": 3})],
                         ids=["eo-b3", "mixed_eo-b5-b3", "mixed-b5", "split-b3"])
def test_bls12381_bounded_accumulations_match_cpu(backend, abi, bounds, monkeypatch):
    """BLS12-381's register-bounded accumulations (msm_builds.ACCUMULATE_BOUNDS) and G2's by-reference
    even/odd one (mixed_eo), on test_product_builds_match_cpu's cases."""
    from engine.backends.gpu import msm_builds

    monkeypatch.setattr(msm_builds, "ACCUMULATE_BOUNDS", bounds)
    test_product_builds_match_cpu(backend, BLS12_381, abi, monkeypatch)


def test_bn254_bounded_inlined_accumulation_matches_cpu(backend, monkeypatch):
    """BN254's inlined G1 accumulation under 4 blocks of 128 an SM (msm_accumulate*_g1i_b4), on
    test_product_builds_match_cpu's cases."""
    from engine.backends.gpu import msm_builds

    monkeypatch.setattr(msm_builds, "ACCUMULATE_BOUNDS", {"g1": 4})
    test_product_builds_match_cpu(backend, BN254, "split_inline", monkeypatch)


@pytest.mark.parametrize("sort", ["direct", "binned"])
def test_binned_sort_matches_cpu(backend, curve, sort, monkeypatch):
    """The two-pass placement through coarse bins (msm.SORT = "binned") against the CPU reference:
    keys over fewer and more than the 256 bins (c = 7 and 12), the full fold and fold 1, a batch of
    vectors (one all zero, one mostly 0/1: a bin holding most entries), G2, n not a power of two,
    infinity, repeated points, P and -P, zero, one and r-1."""
    from engine.backends.gpu import msm as gmsm
    from engine.backends.gpu import msm_sort as gsort

    monkeypatch.setattr(gsort, "SORT", sort)
    rng = random.Random(152)
    n = 1501
    pts = points(curve, n, rng)
    pts[5], pts[6], pts[9] = None, pts[7], ec.g1_neg(curve, pts[8])
    scalars = rand_fr(curve, n, rng)  # 0, 1, r-1, 2 first
    bits = curve.r.bit_length()
    expect = cpu_msm_g1(curve, pts, scalars)
    for c in (7, 12):  # 37 windows (at most BIN_MAX_WINDOWS) and 22
        w = gmsm.windows_for(c, bits)
        plan = gmsm.MsmPlan(n, c, w, w, bits)
        assert gsort.binned_sort(plan) == (sort == "binned")
        assert g1(backend, curve, pts, scalars, plan=plan) == expect
        assert g1(backend, curve, pts, scalars, plan=gmsm.MsmPlan(n, c, w, 1, bits)) == expect
    skewed = [rng.choice([0, 0, 1, 1, 1, 1, 2, curve.r - 1, rng.randrange(curve.r)]) for _ in range(n)]
    vectors = [scalars, [0] * n, skewed]
    got = backend._msm(curve, g1_to_mont(curve, pts), np.stack([from_ints(v, 4) for v in vectors]), False)
    assert got == [cpu_msm_g1(curve, pts, v) for v in vectors]
    m = 400
    q = points(curve, m, rng, g2=True)
    q[3], q[4] = None, q[2]
    sq = rand_fr(curve, m, rng)
    wq = gmsm.windows_for(8, bits)
    got = backend._msm(curve, g2_to_mont(curve, q), from_ints(sq, 4), True, plan=gmsm.MsmPlan(m, 8, wq, wq, bits))
    assert got == cpu_msm_g2(curve, q, sq)


@pytest.mark.parametrize("log_n", [20, 24])
def test_bls12381_curve_plans_match_cpu(backend, log_n):
    """The windows BLS12-381's planner terms give at 2^20 (c = 16: 16 windows, a full top window) and
    2^24 (c = 20), on a few hundred points (same c, windows and folds; the full fold and fold 2), G1 and G2."""
    import dataclasses

    from engine.backends.gpu import msm as gmsm

    curve, rng, n = BLS12_381, random.Random(log_n), 300
    pts, pts2 = points(curve, n, rng), points(curve, n, rng, g2=True)
    scalars = rand_fr(curve, n, rng)  # zero, one, r - 1 among them
    want_c = 16 if log_n == 20 else 20
    expect = {"g1": cpu_msm_g1(curve, pts, scalars), "g2": cpu_msm_g2(curve, pts2, scalars)}
    for group in ("g1", "g2"):
        big = gmsm.plan_msm(1 << log_n, curve.r.bit_length(), curve=curve.name, groups=(group,))
        assert big.c == want_c
        for fold in (big.windows, 2):
            plan = dataclasses.replace(big, n=n, fold=fold)
            if group == "g1":
                got = g1(backend, curve, pts, scalars, plan=plan)
            else:
                got = backend._msm(curve, g2_to_mont(curve, pts2), from_ints(scalars, 4), True, plan=plan)
            assert got == expect[group], (group, fold)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fold_table_builds_agree_with_each_other_and_the_cpu(backend, curve, group, monkeypatch):
    """The key's fold tables (msm.precompute) built by each table build (msm_builds.TABLE_ABI: the plain
    product, the even/odd one, the split one) byte for byte the same, and table t holding
    2^(c t) P as the CPU computes it: 300 points with infinity, a repeated point and P, -P,
    c = 9 and a full fold (29 tables on BN254)."""
    from cuda_kernels.driver import Device
    from engine.backends.gpu import msm as gmsm
    from engine.backends.gpu import msm_builds

    g2 = group == "g2"
    rng = random.Random(77)
    n = 300
    pts = points(curve, n, rng, g2=g2)
    pts[3], pts[4] = None, pts[5]
    pts[6] = (ec.g2_neg if g2 else ec.g1_neg)(curve, pts[7])
    host = (g2_to_mont if g2 else g1_to_mont)(curve, pts)
    bits, c = curve.r.bit_length(), 9
    w = gmsm.windows_for(c, bits)
    plan = gmsm.MsmPlan(n, c, w, w, bits)
    mod, stream = backend._run(curve)
    dev = backend.device
    bases = dev.alloc(plan.fold * host.nbytes, stream)
    built = {}
    try:
        for abi in msm_builds.TABLE_ABIS:
            monkeypatch.setattr(msm_builds, "TABLE_ABI", abi)
            Device.upload(bases, host, stream)
            gmsm.precompute(mod, group, plan, bases, stream)
            out = np.empty(plan.fold * host.nbytes, dtype=np.uint8)
            Device.download(out, bases, stream)
            stream.synchronize()
            built[abi] = out
    finally:
        Device.free(bases, stream)
    assert all(np.array_equal(built[None], t) for t in built.values())
    mul = ec.g2_mul if g2 else ec.g1_mul
    tomont = g2_to_mont if g2 else g1_to_mont
    tables = built[None].reshape(plan.fold, host.nbytes)
    row = host.nbytes // n
    for t in (1, 2, plan.fold - 1):  # the first 40 points (the special ones among them) on the CPU
        want = tomont(curve, [None if p is None else mul(curve, p, 1 << (c * t)) for p in pts[:40]])
        assert tables[t][:40 * row].tobytes() == want.tobytes(), t


@pytest.mark.parametrize("share", ["zero-one", "bench", "random"])
def test_witness_vectors_spread_over_the_layouts_threads(backend, curve, share, monkeypatch):
    """A vector with fewer entries than its plan's bound takes shorter chunks (cuda_kernels/msm.cuh msm_chunk):
    all 0 and 1 (every entry a one of one bucket, cut across many chunks), the bench circuit's share (about a
    third zeros, a third ones, the rest full values) and random scalars, G1 and G2, against the CPU.  One SM's
    layout (1024 threads) makes the plan's chunk longer than the minimum at this n, as 132 SMs do from 2^22."""
    from engine.backends.gpu import msm as gmsm

    monkeypatch.setattr(backend.device, "sm_count", 1)
    rng = random.Random(36)
    n = 12000
    pts = points(curve, n // 8, rng)
    pts = [rng.choice(pts) for _ in range(n)]
    pts[3], pts[4] = None, ec.g1_neg(curve, pts[5])
    weights = {"zero-one": (59, 41, 0), "bench": (32, 31, 37), "random": (0, 0, 1)}[share]
    scalars = [rng.choices([0, 1, None], weights)[0] for _ in range(n)]
    scalars = [rng.randrange(curve.r) if s is None else s for s in scalars]

    def layout(count, group):  # as backend._msm plans it
        plan = gmsm.plan_msm(count, curve.r.bit_length(), "full", curve=curve.name, groups=(group,))
        return gmsm.AccumulateLayout.for_plan(plan, 1)

    assert gmsm.chunking_arg(layout(n, "g1")) >> 31 and layout(n, "g1").chunk > gmsm.MIN_CHUNK  # the adaptive chunk
    assert g1(backend, curve, pts, scalars, fold="full") == cpu_msm_g1(curve, pts, scalars)
    m = 9000
    assert layout(m, "g2").chunk > gmsm.MIN_CHUNK
    qs = points(curve, m // 10, rng, g2=True)
    qs = [rng.choice(qs) for _ in range(m)]
    got = backend._msm(curve, g2_to_mont(curve, qs), from_ints(scalars[:m], 4), True, fold="full")
    assert got == cpu_msm_g2(curve, qs, scalars[:m])


@pytest.mark.parametrize("slices", [1, 2, 64])
def test_a_bucket_of_a_thousand_chunks_sums_over_slices(backend, curve, slices, monkeypatch):
    """A witness's ones all in one bucket, cut across ~1000 chunks (one SM's layout, a least chunk of 16): the block
    list's bucket summed by one block (slices 1), by two blocks each taking every other run of 256 chunks, or by
    64 of which only the first four have chunks (the rest leave no slot), each slice's sum then added by
    msm_fix_join; G1 against the CPU, G2 on BN254."""
    from engine.backends.gpu import msm as gmsm

    monkeypatch.setattr(backend.device, "sm_count", 1)
    monkeypatch.setattr(gmsm, "MIN_CHUNK", 16)
    monkeypatch.setattr(gmsm, "HEAVY_SLICES", slices)
    rng = random.Random(37 + slices)
    n = 40000
    pts = points(curve, 64, rng)
    pts = [rng.choice(pts) for _ in range(n)]
    pts[1], pts[2] = None, ec.g1_neg(curve, pts[3])
    scalars = [rng.choice([0, 1, 1]) for _ in range(n)]
    scalars[7] = 2  # one entry elsewhere
    assert g1(backend, curve, pts, scalars, fold="full") == cpu_msm_g1(curve, pts, scalars)
    if curve is BN254:
        m = 20000
        qs = points(curve, 16, rng, g2=True)
        qs = [rng.choice(qs) for _ in range(m)]
        got = backend._msm(curve, g2_to_mont(curve, qs), from_ints(scalars[:m], 4), True, fold="full")
        assert got == cpu_msm_g2(curve, qs, scalars[:m])
