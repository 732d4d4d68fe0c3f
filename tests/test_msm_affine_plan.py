"""CPU checks of the GPU MSM's plans and of a Python model of its batch-affine rounds.

The model follows cuda_kernels/msm_affine.cuh step for step (threads owning m output slots,
the bucket found by binary search, the forward prefix products, the block's product tree and
its one inversion, the backward pass), over Python ints, so the schedule and the inversion
bookkeeping are checked here without a GPU; tests/test_gpu_msm.py checks the kernels.
"""
from __future__ import annotations

import bisect
import random

import pytest

from engine.algebra import ec
from engine.algebra.curves import BN254
from engine.backends.gpu import msm as gmsm


def halved_offsets(in_off: list[int]) -> list[int]:
    out = [0]
    for k in range(len(in_off) - 1):
        out.append(out[-1] + (in_off[k + 1] - in_off[k] + 1) // 2)
    return out


def model_round(q: int, pts: list, in_off: list[int], threads: int, m: int) -> tuple[list, list[int], int]:
    """One affine round as the kernel runs it; returns (points, offsets, inversions)."""
    out_off = halved_offsets(in_off)
    K, L = len(in_off) - 1, out_off[-1]
    out = [None] * L
    blocks = -(-max(L, 1) // (threads * m))
    inversions = 0

    def pair(k, o):
        a = in_off[k] + 2 * (o - out_off[k])
        return pts[a], (pts[a + 1] if a + 1 < in_off[k + 1] else None)

    def classify(p, r):
        if r is None:
            return "P", 1
        if p is None:
            return "Q", 1
        if p[0] != r[0]:
            return "ADD", (r[0] - p[0]) % q
        if p[1] == r[1] and p[1] != 0:
            return "DBL", 2 * p[1] % q
        return "ZERO", 1

    for b in range(blocks):
        if b * threads * m >= L:
            continue
        prefixes, totals, spans = [], [], []
        for t in range(threads):
            first = min(b * threads * m + t * m, L)
            cnt = max(0, min(m, L - first))
            k = bisect.bisect_right(out_off, first) - 1 if cnt else 0
            acc, pre, ks = 1, [], []
            for j in range(cnt):
                while out_off[k + 1] <= first + j:
                    k += 1
                _, den = classify(*pair(k, first + j))
                pre.append(acc)
                ks.append(k)
                acc = acc * den % q
            prefixes.append(pre)
            totals.append(acc)
            spans.append((first, ks))
        # the product tree: leaves at [threads, 2 threads), root at 1
        tree = [0] * threads + totals
        for i in range(threads - 1, 0, -1):
            tree[i] = tree[2 * i] * tree[2 * i + 1] % q
        tree[1] = pow(tree[1], -1, q)
        inversions += 1
        for i in range(1, threads):
            inv, left, right = tree[i], tree[2 * i], tree[2 * i + 1]
            tree[2 * i], tree[2 * i + 1] = inv * right % q, inv * left % q
        for t in range(threads):
            inv = tree[threads + t]
            assert inv * totals[t] % q == 1
            first, ks = spans[t]
            for j in reversed(range(len(ks))):
                p, r = pair(ks[j], first + j)
                kind, den = classify(p, r)
                dinv = inv * prefixes[t][j] % q
                inv = inv * den % q
                if kind == "P":
                    res = p
                elif kind == "Q":
                    res = r
                elif kind == "ZERO":
                    res = None
                else:
                    num = (r[1] - p[1]) if kind == "ADD" else 3 * p[0] * p[0]
                    lam = num * dinv % q
                    x3 = (lam * lam - p[0] - r[0]) % q
                    res = (x3, (lam * (p[0] - x3) - p[1]) % q)
                out[first + j] = res
    return out, out_off, inversions


def bucket_sums(curve, pts, off):
    sums = []
    for k in range(len(off) - 1):
        acc = None
        for p in pts[off[k]:off[k + 1]]:
            acc = ec.g1_add(curve, acc, p)
        sums.append(acc)
    return sums


@pytest.mark.parametrize("threads,m", [(4, 3), (8, 1), (2, 8)])
def test_affine_rounds_model_keeps_every_bucket_sum(threads, m):
    curve, rng = BN254, random.Random(11)
    g = curve.g1_gen
    base = [ec.g1_mul(curve, g, rng.randrange(1, 50)) for _ in range(12)]
    # buckets of sizes 0..9 and one heavy; repeated points (doublings), P and -P (cancellation),
    # infinity, all in one sorted array
    counts = [0, 1, 2, 3, 5, 8, 0, 9, 4, 40, 1, 0, 7]
    pts = []
    for c in counts:
        for _ in range(c):
            roll = rng.random()
            if roll < 0.1:
                pts.append(None)
            elif roll < 0.35 and pts and pts[-1] is not None:
                pts.append(pts[-1] if rng.random() < 0.6 else ec.g1_neg(curve, pts[-1]))
            else:
                pts.append(rng.choice(base))
    off = [0]
    for c in counts:
        off.append(off[-1] + c)
    expect = bucket_sums(curve, pts, off)
    rounds = 0
    while max(off[k + 1] - off[k] for k in range(len(counts))) > 1:
        pts, off, inv = model_round(curve.q, pts, off, threads, m)
        rounds += 1
        assert inv == -(-off[-1] // (threads * m))  # one inversion a block with work
        assert bucket_sums(curve, pts, off) == expect
    assert rounds == 6  # the 40-point bucket: 40 -> 20 -> 10 -> 5 -> 3 -> 2 -> 1


def test_entry_bounds_hold_for_skewed_and_uniform_counts():
    rng = random.Random(5)
    plan = gmsm.MsmPlan(n=1000, c=4, windows=3, fold=3, scalar_bits=12, batch=2, affine_rounds=5)
    K, L = plan.keys, plan.max_entries
    for shape in ("uniform", "one bucket", "few"):
        counts = [0] * K
        for _ in range(L):
            k = 0 if shape == "one bucket" else rng.randrange(K if shape == "uniform" else 3)
            counts[k] += 1
        live = sum(counts)
        for bound in plan.entry_bounds():
            assert live <= bound
            counts = [(c + 1) // 2 for c in counts]
            live = sum(counts)


def test_plans_pick_affine_rounds_by_bucket_load():
    p24 = gmsm.plan_msm(1 << 24, 254, "full", accumulation="affine")
    assert p24.affine_rounds >= 4 and p24.fold == p24.windows
    # the mean bucket keeps about AFFINE_LEFT points after the rounds
    mean = p24.n * p24.windows / p24.keys
    assert gmsm.AFFINE_LEFT <= mean / 2 ** p24.affine_rounds < 2 * gmsm.AFFINE_LEFT
    assert gmsm.plan_msm(1 << 24, 254, "full", accumulation="xyzz").affine_rounds == 0
    assert gmsm.affine_rounds_for(1000, 13, 1 << 12, "affine") == 0  # about 3 points a bucket: XYZZ
    assert gmsm.affine_rounds_for(1000, 13, 1 << 10, "affine") == 2
    assert gmsm.affine_rounds_for(1000, 13, 1 << 8, "affine") == 4
    assert gmsm.plan_msm(777, 254, 1, rounds=3).affine_rounds == 3
    with pytest.raises(ValueError, match="accumulation"):
        gmsm.plan_msm(10, 254, accumulation="projective")


def test_batched_plan_scales_keys_and_entries_not_windows():
    one = gmsm.plan_msm(1 << 20, 254, "full")
    ten = gmsm.plan_msm(1 << 20, 254, "full", batch=10)
    assert (ten.c, ten.windows, ten.fold) == (one.c, one.windows, one.fold)
    assert ten.keys == 10 * one.keys and ten.max_entries == 10 * one.max_entries
    assert ten.sets == 10 * one.groups
    # the two-level scan bounds the keys: a big batch gets a smaller window
    big = gmsm.plan_msm(1 << 24, 254, "full", batch=16)
    assert big.keys <= gmsm.MAX_BUCKET_KEYS and big.c < 22


def test_bucket_scratch_sizes_cover_the_rounds():
    plan = gmsm.plan_msm(1 << 16, 254, "full", rounds=3)
    layout = gmsm.AccumulateLayout.for_plan(plan, 132)
    _keys, chunks, _segs, _tree, pts_a, pts_b, _aff = gmsm.BucketScratch.sizes([(plan, layout)])
    b = plan.entry_bounds()
    assert pts_a == max(b[1], b[3]) and pts_b == b[2]
    assert chunks * layout.chunk >= plan.xyzz_entries == b[3]
    none = gmsm.plan_msm(1 << 16, 254, "full", accumulation="xyzz")
    assert gmsm.BucketScratch.sizes([(none, gmsm.AccumulateLayout.for_plan(none, 132))])[4:6] == (0, 0)


def test_affine_scratch_covers_every_round_and_block(monkeypatch):
    monkeypatch.setattr(gmsm, "AFFINE_FUSED", False)  # three kernels a round: the prefixes through global memory
    plan = gmsm.plan_msm(1 << 16, 254, "full", rounds=3)
    threads, m = gmsm.affine_shape()
    assert threads & (threads - 1) == 0 and 2 * threads * 96 <= 48 * 1024  # the tree in default shared memory
    size = gmsm.AffineScratchSize.for_plan(plan)
    for bound in plan.entry_bounds()[1:]:
        blocks = -(-bound // (threads * m))
        assert size.totals >= blocks and size.leaves >= blocks * threads and size.prefix >= blocks * threads * m
    assert gmsm.AffineScratchSize.for_plan(gmsm.plan_msm(1 << 16, 254, accumulation="xyzz")).prefix == 0


def test_default_accumulation_is_xyzz_and_the_variable_selects(monkeypatch):
    monkeypatch.delenv("GROTH16_MSM_ACCUMULATION", raising=False)
    assert gmsm.plan_msm(1 << 24, 254).affine_rounds == 0  # measured faster (perf/RESULTS.md)
    monkeypatch.setenv("GROTH16_MSM_ACCUMULATION", "affine")
    assert gmsm.plan_msm(1 << 24, 254).affine_rounds > 0
    monkeypatch.setenv("GROTH16_MSM_ACCUMULATION", "jacobian")
    from engine import ConfigError  # (a ValueError traceback before every GROTH16_* variable was read one way)

    with pytest.raises(ConfigError, match="GROTH16_MSM_ACCUMULATION"):
        gmsm.plan_msm(1 << 10, 254)


def test_batch_plan_keeps_the_keys_window_tables():
    one = gmsm.plan_msm(1 << 16, 254, "full")
    four = gmsm.plan_for_batch(one, 4)
    assert (four.c, four.windows, four.fold, four.batch) == (one.c, one.windows, one.fold, 4)
    assert gmsm.max_batch(one) >= 16
    with pytest.raises(ValueError, match="exceeds"):
        gmsm.plan_for_batch(one, gmsm.max_batch(one) + 1)


def test_planner_weighs_the_serial_chain_at_small_sizes():
    """Small MSMs are bound by the serial chain after the bucket sums: the planner keeps it short
    and off the lane-group fix-up (measured the slowest there), taking the small windows that
    measured fastest up to 2^14; 2^18, 2^20 and 2^24 keep the measured windows."""
    assert gmsm.plan_msm(1 << 20, 254).c == 20 and gmsm.plan_msm(1 << 24, 254).c == 22
    assert gmsm.plan_msm(1 << 18, 254).c == 17
    for log_n in (10, 12, 13, 14, 16):
        plan = gmsm.plan_msm(1 << log_n, 254)
        layout = gmsm.AccumulateLayout.for_plan(plan, 132)
        m = gmsm.mean_chunks_per_bucket(plan, layout)
        assert m <= gmsm.FIX_SERIAL or m > gmsm.FIX_WARP_MAX
        assert gmsm.critical_depth(plan, 132) < 60
    # full folds up to 2^14 take the measured window (msm_costs.FULL_FOLD_WINDOW: the terms pick 9)
    assert [gmsm.plan_msm(1 << k, 254).c for k in (12, 13, 14, 16)] == [8, 8, 8, 16]


def test_fix_depth_classes_and_heavy_grid():
    assert [gmsm.fix_depth(m) for m in (1, 2, gmsm.FIX_SERIAL)] == [0, 1, gmsm.FIX_SERIAL - 1]
    m = gmsm.FIX_SERIAL + 1
    lanes = gmsm.fix_lanes(m)
    assert gmsm.fix_depth(m) == gmsm.HEAVY_FIX_COST * (-(-m // lanes) + lanes.bit_length() - 1)
    assert gmsm.fix_lanes(1) == 2 and gmsm.fix_lanes(10 ** 6) == 32
    assert gmsm.fix_lanes(8 * gmsm.FIX_PER_LANE) == 8
    assert gmsm.fix_depth(gmsm.FIX_WARP_MAX + 1) == 10
    assert gmsm.fix_heavy_blocks(1, 1, 32) == 1
    # the block list gets a block per bucket it can hold: 256 buckets of 464 chunks, one pass
    assert gmsm.fix_heavy_blocks(256, 119000, 32) >= 256
    assert gmsm.fix_heavy_blocks(1024, 131072, 32) >= 128  # a warp a bucket of the warp list
    assert gmsm.fix_heavy_blocks(1 << 22, 1 << 22, 4) == gmsm.FIX_HEAVY_BLOCKS


def test_tree_levels_after_the_segment_block_sums():
    plan = gmsm.MsmPlan(1 << 16, 16, 16, 16, 254)
    layout = gmsm.AccumulateLayout.for_plan(plan, 132)
    rt = gmsm.REDUCE_THREADS["g1"]
    assert layout.seg_len == gmsm.MIN_SEGMENT and layout.tree_levels() == [-(-(1 << 15) // (rt * gmsm.MIN_SEGMENT)), 1]
    big = gmsm.AccumulateLayout.for_plan(gmsm.MsmPlan(1000, 18, 15, 15, 254), 132, seg_len=1)
    assert big.segs == 1 << 17 and big.tree_levels() == [(1 << 17) // rt, 1] and big.tree_levels(256) == [512, 1]
    assert gmsm.AccumulateLayout.for_plan(plan, 132, seg_len=1 << 20).seg_len == plan.buckets_per_group


def test_the_block_list_spreads_over_its_slices(monkeypatch):
    """msm_fix_heavy takes HEAVY_SLICES blocks for its block list's first bucket and one more for each further one it
    can hold (within its grid cap); the slices travel in bits 8-15 of the lanes argument, so 1..255 only."""
    assert gmsm.fix_heavy_blocks(1024, 131072, 32, 64) == gmsm.fix_heavy_blocks(1024, 131072, 32, 1) + 63
    assert gmsm.fix_heavy_blocks(1, 1, 32, 64) == 64
    for bad in (0, 256):
        monkeypatch.setattr(gmsm, "HEAVY_SLICES", bad)
        with pytest.raises(ValueError, match="HEAVY_SLICES"):
            gmsm.heavy_slices()


def test_one_kernel_rounds_keep_no_inversion_scratch(monkeypatch):
    """The one-kernel round keeps its prefixes in shared memory: no prefix, leaf or total buffer."""
    monkeypatch.setattr(gmsm, "AFFINE_FUSED", True)
    assert gmsm.AffineScratchSize.for_plan(gmsm.plan_msm(1 << 16, 254, "full", rounds=3)) == (
        gmsm.AffineScratchSize(0, 0, 0))
