"""Planning and launching the Pippenger MSM kernels (cuda_kernels/msm.cuh).

A plan fixes the window c, the number of windows W, and the fold f: how many
of the windows share one set of buckets because the key holds 2^(c*t)-shifted
copies of its points (t < f).  With f = W (when memory allows) there is one
bucket set and no doubling chain at the end; with f = 1 the key is stored once
and W bucket sets are combined by Horner's rule.

A plan also fixes the batch (k scalar vectors against the same bases: k bucket
sets, one sort and one accumulation pass for all of them, k results) and the
accumulation: XYZZ mixed additions over each bucket's entries, or first some
rounds of batch-affine additions that halve every bucket (msm_affine.cuh).

All buffer sizes depend on n and the plan only, never on the scalars, so a
whole MSM is enqueued without a host round trip.  The bucket sort that feeds
the accumulation is msm_sort.py's; which compiled build of each kernel a curve
runs is msm_builds.py's.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from cuda_kernels.driver import Device, DeviceBuffer, Module, Ptr, Stream, U32, launch
from engine.backends.gpu import msm_costs
from engine.env_setting import choice, config_error
from engine.backends.gpu.msm_builds import affine_kernel, precompute_kernel, xyzz_kernel
from engine.backends.gpu.msm_sort import SCAN_BLOCK, Mark, SortScratch, _mark, scan, sort_scalars
from engine.backends.gpu.msm_costs import ENTRY_COST, LATENCY_ENTRIES, PLAN_SM_COUNT, WITNESS_GROUPS  # noqa: F401

# A bucket cut across at most FIX_SERIAL chunks is summed by one thread, across up to
# FIX_WARP_MAX by a group of lanes (fix_lanes: about FIX_PER_LANE partials a lane, at most a
# warp), across more by a block (msm_fix / msm_fix_heavy).  Module attributes: perf/msm.py
# --fix sweeps them.
FIX_SERIAL, FIX_WARP_MAX, FIX_PER_LANE = 16, 256, 8
# What a level of the lane-group fix-up costs against a serial addition or a block level, as
# the planner counts it: measured on the H200 (perf/RESULTS.md), BN254 G1 2^14 with 11-bit
# windows spent 0.55 ms in a depth-10 group fix-up of 1024 buckets, 2^12 with 9-bit windows
# 0.33 ms in a depth-10 block fix-up of 256, and the window sweep found the block's windows
# (9 bits up to 2^14) fastest, the group's (11 bits) slowest.
HEAVY_FIX_COST = 3
FIX_HEAVY_BLOCKS = 4096  # grid cap of msm_fix_heavy (grid-stride over its lists)
# segments a block of msm_reduce_segments (its block sum: the tree's first pass), per group: G2's
# 64-word accumulators in 256-thread blocks cost BN254 G2 14% at 2^15-2^16 against 128 (h15acc);
# G1's 256 left half the SMs idle where the segments are few (2^15 buckets in segments of 2: 64
# blocks on 132 SMs): 128 measured 0.712 -> 0.672 ms at BN254 2^16, 1.356 -> 1.238 at BLS12-381
# 2^16, 8.45 -> 8.31 at its 2^20, equal elsewhere (perf/RESULTS.md, session 33).
REDUCE_THREADS = {"g1": 128, "g2": 128}
# The block the planner's depth model counts a segment level in (critical_depth): the terms were
# fitted when G1 reduced in blocks of 256, and its plans are what was measured; kept apart from
# REDUCE_THREADS so that the block size changes no plan (tests/test_msm_plan_curves.py).
PLAN_REDUCE_THREADS = 256
MIN_SEGMENT = 2  # buckets a thread of msm_reduce_segments reduces at least (2 measured 1-7% faster than 4)
# segments (threads of msm_reduce_segments) an SM the segment length aims at, where the buckets are
# many: perf/RESULTS.md "Session 25": 256 (2^19 buckets: L = 16, 2^21: L = 64) beat 512 (L = 8, 32)
# by 0.2 ms (G1) and 0.6 ms (G2) at 2^20 and 0.13 ms at G1 2^24; 128 (L = 32, 128) lost everywhere
SEGMENT_THREADS_PER_SM = 256
TREE_THREADS, TREE_PER_THREAD = 256, 4  # one tree-sum pass folds up to 1024 points into one
# The planner's terms (LATENCY_ENTRIES, ENTRY_COST, per curve and group: msm_costs.py).
# MSMs of one sorted scalar vector against different bases (a proof's A, B1, C) share one set
# of XYZZ-pass launches, up to MSM_SETS at a time, where the plan is small enough for their
# chains to be latency, not work (the scratch holds a set of buckets and partials for each).
MSM_SETS = 3  # cuda_kernels/msm.cuh's MSM_SETS
FUSE_MAX_ENTRIES = 1 << 22
MAX_BUCKET_KEYS = SCAN_BLOCK * SCAN_BLOCK  # what the two-level scan covers
# Batch-affine rounds (cuda_kernels/msm_affine.cuh): threads a block (a power of two: the
# block's product tree) and output slots a thread; one inversion serves threads * per_thread
# additions.  Module attributes so that perf/msm.py can sweep them.
AFFINE_THREADS = 128
AFFINE_PER_THREAD = 8
AFFINE_LEFT = 3  # rounds stop when a random-scalar bucket would keep about this many points
# A round in one kernel (msm_affine_round_<G>: prefixes in shared memory, the block's root inverted
# by divsteps on its thread 0) or in three (forward, invert, backward: prefixes through global
# memory).  Three: on an H100 BN254 G1 2^24 took 55.0 ms in three against 61.9 in one (128x8; the
# one-kernel's blocks wait on their inversion with the SM's registers held), 2^20 5.6 ms either way
# (perf/RESULTS.md, "Session 47").
AFFINE_FUSED = False
ACCUMULATIONS = ("affine", "xyzz")
ACCUMULATE_THREADS = 128  # a block of msm_accumulate (perf/msm.py reports how many an SM holds)


@dataclass(frozen=True)
class MsmPlan:
    n: int
    c: int  # window bits
    windows: int
    fold: int
    scalar_bits: int
    batch: int = 1  # scalar vectors against the same bases (one bucket set each)
    affine_rounds: int = 0  # batch-affine halvings of the buckets before the XYZZ pass

    @property
    def groups(self) -> int:
        return -(-self.windows // self.fold)

    @property
    def buckets_per_group(self) -> int:
        return 1 << (self.c - 1)

    @property
    def sets(self) -> int:
        """Bucket groups over the whole batch."""
        return self.batch * self.groups

    @property
    def keys(self) -> int:
        return self.sets * self.buckets_per_group

    @property
    def max_entries(self) -> int:
        return self.batch * self.n * self.windows

    def entry_bounds(self) -> list[int]:
        """Upper bounds of the live entries before each batch-affine round and after the last.

        A round leaves ceil(count/2) of a bucket's count, so at most (L + nonempty buckets)/2."""
        bounds = [self.max_entries]
        for _ in range(self.affine_rounds):
            live = bounds[-1]
            bounds.append((live + min(live, self.keys)) // 2)
        return bounds

    @property
    def xyzz_entries(self) -> int:
        """Bound of the entries the XYZZ pass adds (after the affine rounds)."""
        return self.entry_bounds()[-1]


class NoPlanError(ValueError):
    """No window keeps the sort's 32-bit ranges (n * fold < 2^31, entries < 2^32): a fold or size too large."""


def windows_for(c: int, scalar_bits: int) -> int:
    # signed digits need one bit of headroom for the final carry
    return -(-(scalar_bits + 1) // c)


def affine_rounds_for(n: int, windows: int, buckets: int, accumulation: str) -> int:
    """Halvings until a random-scalar bucket keeps about AFFINE_LEFT points; the XYZZ pass
    (load-balanced for any skew) adds the rest, so a skewed bucket never needs more rounds."""
    if accumulation == "xyzz":
        return 0
    mean = n * windows / buckets
    return max(0, min(12, math.floor(math.log2(mean / AFFINE_LEFT)))) if mean >= 2 * AFFINE_LEFT else 0


def default_accumulation() -> str:
    """XYZZ only, unless GROTH16_MSM_ACCUMULATION says affine: on the H200 the affine rounds
    measured slower (BN254 G1 2^20: 8.66 against 6.45 ms; perf/RESULTS.md), so they are a
    selectable path until they are tuned."""
    return choice("GROTH16_MSM_ACCUMULATION", "xyzz", ACCUMULATIONS, config_error)


def plan_msm(n: int, scalar_bits: int, fold: str | int = "full", max_c: int = 22, *, batch: int = 1,
             accumulation: str | None = None, rounds: int | None = None, curve: str | None = None,
             groups: tuple[str, ...] = ("g1",)) -> MsmPlan:
    """Pick c minimising the time: the work (the bucket phase's entries n*W, weighted by the
    accumulation's cost an entry, the buckets to reduce, the doublings between groups) plus the
    latency of the serial chain after the bucket sums (critical_depth, and where the curve's
    terms count it the top window's heavy buckets: top_window_depth), with `curve`'s terms for
    each of `groups`, the groups of the MSMs that share the plan (msm_costs.py; a proof's witness
    MSMs: WITNESS_GROUPS; curve None: BN254's calibration); on a full fold, then the measured window
    where the terms' was measured slower (msm_costs.FULL_FOLD_WINDOW).  `rounds` overrides the number of
    batch-affine rounds (tests)."""
    acc = accumulation or default_accumulation()
    if acc not in ACCUMULATIONS:
        raise ValueError(f"accumulation {acc!r} is not one of {ACCUMULATIONS}")
    if batch < 1:
        raise ValueError(f"msm batch {batch} < 1")
    mix = msm_costs.cost_mix(curve, tuple(groups), n, fold)
    best = None
    for c in range(2, max_c + 1):
        w = windows_for(c, scalar_bits)
        f = w if fold == "full" else max(1, min(int(fold), w))
        g = -(-w // f)
        if batch * g * (1 << (c - 1)) > MAX_BUCKET_KEYS or n * f >= 1 << 31 or batch * n * w >= 1 << 32:
            continue
        plan = MsmPlan(n, c, w, f, scalar_bits, batch, affine_rounds_for(n, w, g * (1 << (c - 1)), acc))
        depth = critical_depth(plan, PLAN_SM_COUNT)
        cost = 0.0
        for k, weight in mix:
            one = (ENTRY_COST[acc] * n * w + k.bucket * g * (1 << (c - 1))
                   + (0 if g == 1 else k.doubling * c * f * (g - 1)))
            one += k.latency * ((depth + k.skew * top_window_depth(plan, PLAN_SM_COUNT)) if k.skew else depth)
            cost += one if weight == 1 else weight * one
        if best is None or cost < best[0]:
            best = (cost, plan)
    if best is None:
        raise NoPlanError(f"no MSM plan for {batch} x {n} points")
    plan = best[1]
    measured = msm_costs.FULL_FOLD_WINDOW.get(plan.c) if fold == "full" and acc == "xyzz" else None
    if measured is not None and measured <= max_c:  # the measured window where the terms' is slower
        w = windows_for(measured, scalar_bits)
        plan = MsmPlan(n, measured, w, w, scalar_bits, batch, affine_rounds_for(n, w, 1 << (measured - 1), acc))
    if rounds is not None:
        plan = dataclasses.replace(plan, affine_rounds=rounds)
    return plan


def fused_sets(plan: MsmPlan) -> int:
    """How many MSMs over one sorted vector share the XYZZ pass's launches under `plan`: all
    three witness MSMs for a small full-fold plan without affine rounds (those rewrite the
    points); a partial fold (a key short of memory, the host tier's chunks) keeps one set of
    scratch."""
    small = plan.max_entries <= FUSE_MAX_ENTRIES and plan.groups == 1
    return MSM_SETS if small and plan.affine_rounds == 0 else 1


def fix_lanes(chunks_per_bucket: int) -> int:
    """Lanes a bucket of the warp list gets: a power of two, about FIX_PER_LANE partials each."""
    want = -(-chunks_per_bucket // max(FIX_PER_LANE, 1))
    return min(32, max(2, 1 << (want - 1).bit_length()))


def fix_depth(chunks_per_bucket: int) -> int:
    """Dependent additions msm_fix / msm_fix_heavy spend on a bucket cut across that many chunks
    (the lane groups' levels weighted by HEAVY_FIX_COST)."""
    m = chunks_per_bucket
    if m <= 1:
        return 0
    if m <= FIX_SERIAL:
        return m - 1
    if m <= FIX_WARP_MAX:
        lanes = fix_lanes(m)
        return HEAVY_FIX_COST * (-(-m // lanes) + (lanes.bit_length() - 1))
    return -(-m // 256) + 8


def mean_chunks_per_bucket(plan: MsmPlan, layout: "AccumulateLayout") -> int:
    """Chunks a random-scalar bucket spans: its mean entries over the chunk, plus the cut."""
    return int(-(-(plan.xyzz_entries / max(plan.keys, 1)) // layout.chunk)) + 1


def critical_depth(plan: MsmPlan, sm_count: int) -> int:
    """Dependent point operations on the longest chain after the bucket phase of a
    random-scalar MSM: the fix-up of cut buckets, a segment's running sums and its weight
    (double-and-add of its first bucket's index), the block sums of the tree, and the
    Horner steps between groups.  The bucket phase itself fills the device and counts as work."""
    layout = AccumulateLayout.for_plan(plan, sm_count)
    depth = fix_depth(mean_chunks_per_bucket(plan, layout))
    lo_bits = (plan.buckets_per_group - 1).bit_length()
    # a segment longer than the shortest is one of enough to fill the device: work, not latency
    depth += 2 * MIN_SEGMENT + (3 * lo_bits) // 2 + 8
    depth += sum(tree_pass_per_thread(count) + 8 for count in layout.tree_levels(PLAN_REDUCE_THREADS)[:-1])
    return 1 + depth + (plan.groups - 1) * (plan.c * plan.fold + 1)


def top_window_depth(plan: MsmPlan, sm_count: int) -> int:
    """Fix-up steps the top window's buckets add to the longest chain: that window's digit holds
    msm_costs.top_window_bits of the scalar (and the carry), so its n entries a vector fall into
    about 2^t buckets of its set on top of their mean share (BLS12-381's 255-bit r with c = 17:
    t = 0, the carry of half the scalars in bucket 1)."""
    layout = AccumulateLayout.for_plan(plan, sm_count)
    t = msm_costs.top_window_bits(plan.c, plan.windows, plan.scalar_bits)
    live = plan.xyzz_entries / max(plan.max_entries, 1)  # what the affine rounds leave
    heavy = plan.xyzz_entries / max(plan.keys, 1) + live * plan.n / (1 << t)
    chunks = int(-(-heavy // layout.chunk)) + 1
    return max(0, fix_depth(chunks) - fix_depth(mean_chunks_per_bucket(plan, layout)))


def tree_pass_per_thread(count: int) -> int:
    """Points a thread adds in a tree-sum pass over `count` points a group: one while one
    block's worth is left (the shortest chain), up to TREE_PER_THREAD for larger counts."""
    return max(1, min(TREE_PER_THREAD, -(-count // TREE_THREADS)))


def plan_for_batch(plan: MsmPlan, batch: int) -> MsmPlan:
    """The plan of `batch` vectors against the bases a single-vector plan was made (and its
    window tables built) for: same c, windows and fold, k bucket sets."""
    if batch < 1:
        raise ValueError(f"msm batch {batch} < 1")
    if batch * plan.groups * plan.buckets_per_group > MAX_BUCKET_KEYS or batch * plan.n * plan.windows >= 1 << 32:
        raise ValueError(f"an MSM batch of {batch} x {plan.n} points with c = {plan.c} exceeds the sort's range")
    return dataclasses.replace(plan, batch=batch)


def max_batch(plan: MsmPlan) -> int:
    """The largest batch plan_for_batch accepts for this plan."""
    return max(1, min(MAX_BUCKET_KEYS // (plan.groups * plan.buckets_per_group),
                      ((1 << 32) - 1) // max(plan.n * plan.windows, 1)))


# Accumulating threads the layout aims at per SM (the entries cut into that many chunks); a module attribute that
# perf/msm.py --threads-per-sm sweeps.  Session 42: 1536 was 1.7-2.4% faster on BN254 G1 and <= 1% elsewhere, not
# taken (it moves the planner's fix-up depth model and the partial sums' scratch, neither measured).
ACCUMULATE_THREADS_PER_SM = 1024


@dataclass
class AccumulateLayout:
    """Chunking of the XYZZ pass's entries and segmenting of the buckets for one device."""

    chunk: int  # T: entries per accumulating thread
    chunks: int
    seg_len: int
    segs: int

    @staticmethod
    def for_plan(plan: MsmPlan, sm_count: int, seg_len: int | None = None) -> "AccumulateLayout":
        """`seg_len` replaces the computed segment length (tests)."""
        entries = plan.xyzz_entries
        target_threads = max(sm_count * ACCUMULATE_THREADS_PER_SM, 1)
        chunk = max(1, -(-entries // target_threads))
        chunks = max(1, -(-entries // chunk))
        B = plan.buckets_per_group
        # short segments keep the serial running sums short (a thread's chain is 2 * seg_len
        # additions and its weight's double-and-add); the tree sum takes the rest
        if seg_len is None:
            seg_len = max(MIN_SEGMENT, -(-(B * plan.sets) // max(sm_count * SEGMENT_THREADS_PER_SM, 1)))
        seg_len = max(1, min(seg_len, B))
        segs = -(-B // seg_len)
        return AccumulateLayout(chunk, chunks, seg_len, segs)

    def tree_levels(self, threads: int | None = None) -> list[int]:
        """Points per group out of msm_reduce_segments (a block sum over `threads` segments, G1's
        REDUCE_THREADS when not given) and before each later tree-sum pass; the last entry is 1."""
        levels, count = [], -(-self.segs // (threads or REDUCE_THREADS["g1"]))
        while True:
            levels.append(count)
            if count == 1:
                return levels
            count = -(-count // (TREE_THREADS * tree_pass_per_thread(count)))


def affine_shape() -> tuple[int, int]:
    """(threads a block, output slots a thread) of the affine rounds."""
    return AFFINE_THREADS, AFFINE_PER_THREAD


@dataclass(frozen=True)
class AffineScratchSize:
    """Elements (field elements) the affine rounds' passes keep between their kernels."""

    prefix: int  # one a slot
    leaves: int  # one a thread
    totals: int  # one a block

    @staticmethod
    def for_plan(plan: MsmPlan) -> "AffineScratchSize":
        if plan.affine_rounds == 0 or AFFINE_FUSED:
            return AffineScratchSize(0, 0, 0)
        threads, m = affine_shape()
        blocks = -(-plan.entry_bounds()[1] // (threads * m))  # round 0 is the largest
        return AffineScratchSize(blocks * threads * m, blocks * threads, blocks)


class BucketScratch:
    """Buckets, partial sums, reduction space and the affine rounds' points, offsets and
    inversion scratch, big enough for each (plan, layout) given, run one after another on one
    stream, with fused_sets(plan) sets of the XYZZ pass's buffers; acc_bytes is the largest
    accumulator used (an XYZZ point: four coordinates; an affine point is half of it, a field
    element a quarter)."""

    def __init__(self, dev: Device, shapes: list[tuple[MsmPlan, AccumulateLayout]], acc_bytes: int,
                 stream: Stream, sizes: tuple | None = None):
        # `sizes`: self.sizes(shapes) made once for a key's proofs (0.1-0.2 ms of Python a proof otherwise)
        keys, chunks, segs, tree, pts_a, pts_b, aff = self.sizes(shapes) if sizes is None else sizes
        el = acc_bytes // 4
        self.buckets = dev.alloc(keys * acc_bytes, stream)
        self.partials = dev.alloc(2 * chunks * acc_bytes, stream)
        self.heavy = dev.alloc(4 * keys + 8 * MSM_SETS, stream)  # the fix-up's lists and counts, a pair a set
        self.segments = dev.alloc(segs * acc_bytes, stream)
        self.tree = dev.alloc(tree * acc_bytes, stream)
        self.pts = [dev.alloc(max(pts_a, 1) * 2 * el, stream), dev.alloc(max(pts_b, 1) * 2 * el, stream)]
        self.offs = [dev.alloc(4 * (keys + 1), stream) for _ in range(2)]
        nblocks = -(-keys // SCAN_BLOCK)
        self.scan_sums = dev.alloc(8 * (nblocks + 1), stream)
        self.prefix = dev.alloc(max(aff.prefix, 1) * el, stream)
        self.leaves = dev.alloc(max(aff.leaves, 1) * el, stream)
        self.totals = dev.alloc(max(aff.totals, 1) * el, stream)

    @staticmethod
    def sizes(shapes: list[tuple[MsmPlan, AccumulateLayout]]) -> tuple:
        """keys, chunks, segments, tree points (each over the plan's fused sets), the two affine
        point buffers (points), and the affine rounds' inversion scratch (AffineScratchSize)."""
        def affine(p: MsmPlan, parity: int) -> int:
            b = p.entry_bounds()
            return max([b[r + 1] for r in range(p.affine_rounds) if r % 2 == parity], default=0)

        aff = [AffineScratchSize.for_plan(p) for p, _ in shapes]

        def levels(l: AccumulateLayout) -> list[list[int]]:  # under each group's block size
            return [l.tree_levels(t) for t in sorted(set(REDUCE_THREADS.values()))]

        return (max(fused_sets(p) * p.keys for p, _ in shapes), max(fused_sets(p) * l.chunks for p, l in shapes),
                max(fused_sets(p) * p.sets * v[0] for p, l in shapes for v in levels(l)),
                max(fused_sets(p) * p.sets * sum(v[1:]) for p, l in shapes for v in levels(l)),
                max(affine(p, 0) for p, _ in shapes), max(affine(p, 1) for p, _ in shapes),
                AffineScratchSize(max(a.prefix for a in aff), max(a.leaves for a in aff), max(a.totals for a in aff)))

    @classmethod
    def nbytes(cls, shapes: list[tuple[MsmPlan, AccumulateLayout]], acc_bytes: int) -> int:
        keys, chunks, segs, tree, pts_a, pts_b, aff = cls.sizes(shapes)
        nblocks = -(-keys // SCAN_BLOCK)
        el = acc_bytes // 4
        return (acc_bytes * (keys + 2 * chunks + segs + tree) + 4 * keys + 8 * MSM_SETS
                + 2 * el * (max(pts_a, 1) + max(pts_b, 1)) + 8 * (keys + 1) + 8 * (nblocks + 1)
                + el * (max(aff.prefix, 1) + max(aff.leaves, 1) + max(aff.totals, 1)))

    def free(self, stream: Stream) -> None:
        for b in (self.buckets, self.partials, self.heavy, self.segments, self.tree, *self.pts, *self.offs,
                  self.scan_sums, self.prefix, self.leaves, self.totals):
            Device.free(b, stream)


def affine_rounds(mod: Module, group: str, plan: MsmPlan, bases: DeviceBuffer | int, sort: SortScratch,
                  b: BucketScratch, field_bytes: int, stream: Stream) -> tuple[int, int, int]:
    """Run the plan's batch-affine rounds; returns the (sorted entries, points, offsets) device
    addresses the XYZZ pass adds: after a round, sorted is 0 (null: entry p is point p)."""
    K = plan.keys
    nblocks = -(-K // SCAN_BLOCK)
    sums, prefix = b.scan_sums.ptr, b.scan_sums.ptr + 4 * (nblocks + 1)
    bounds = plan.entry_bounds()
    threads, m = affine_shape()
    shared = 2 * threads * field_bytes
    src_sorted, src_pts, src_off = sort.sorted.ptr, _ptr(bases), sort.offsets.ptr
    forward, invert, backward, fused = (affine_kernel(k, group, getattr(mod, "curve", None))
                                        for k in ("forward", "invert", "backward", "round"))
    fused_shared = (2 + m) * threads * field_bytes
    if AFFINE_FUSED and plan.affine_rounds and fused_shared > 48 * 1024:
        mod.allow_shared(fused, fused_shared)
    for r in range(plan.affine_rounds):
        out_pts, out_off = b.pts[r % 2].ptr, b.offs[r % 2].ptr
        # the halved counts go to the heavy list's space (unused until the XYZZ pass)
        launch(mod, "msm_halve", -(-K // 256), 256, stream, src_off, U32(K), b.heavy)
        scan(mod, b.heavy.ptr, K, out_off, b.heavy.ptr, sums, prefix, stream)
        blocks = -(-bounds[r + 1] // (threads * m))
        if AFFINE_FUSED:
            launch(mod, fused, blocks, threads, stream, src_sorted, src_pts, src_off, out_off, U32(K), U32(m),
                   out_pts, shared=fused_shared)
        else:
            launch(mod, forward, blocks, threads, stream, src_sorted, src_pts, src_off, out_off,
                   U32(K), U32(m), b.prefix, b.leaves, b.totals, shared=shared)
            launch(mod, invert, -(-blocks // 128), 128, stream, b.totals, U32(blocks))
            launch(mod, backward, blocks, threads, stream, src_sorted, src_pts, src_off, out_off,
                   U32(K), U32(m), b.prefix, b.leaves, b.totals, out_pts, shared=shared)
        src_sorted, src_pts, src_off = 0, out_pts, out_off
    return src_sorted, src_pts, src_off


def _ptr(buf: DeviceBuffer | int) -> int:
    return buf.ptr if isinstance(buf, DeviceBuffer) else int(buf)


def accumulate(mod: Module, group: str, plan: MsmPlan, layout: AccumulateLayout, bases: DeviceBuffer | int,
               sort: SortScratch, b: BucketScratch, acc_bytes: int, result: int, stream: Stream,
               result_stride: int | None = None, mark: Mark = None) -> None:
    """Bucket sums, their weighted reduction, and the final points (XYZZ): vector j of the
    batch at result + j * result_stride (bytes; acc_bytes when not given)."""
    accumulate_sets(mod, group, plan, layout, [(bases, result)], sort, b, acc_bytes, stream, result_stride, mark)


def accumulate_sets(mod: Module, group: str, plan: MsmPlan, layout: AccumulateLayout,
                    msms: list[tuple[DeviceBuffer | int, int]], sort: SortScratch, b: BucketScratch,
                    acc_bytes: int, stream: Stream, result_stride: int | None = None, mark: Mark = None) -> None:
    """accumulate for each (bases, result address) of `msms`, all over the same sorted
    scalars: fused_sets(plan) of them at a time share one set of launches."""
    step = fused_sets(plan)
    for i in range(0, len(msms), step):
        _accumulate(mod, group, plan, layout, msms[i:i + step], sort, b, acc_bytes, stream, result_stride, mark)


def _accumulate(mod: Module, group: str, plan: MsmPlan, layout: AccumulateLayout,
                msms: list[tuple[DeviceBuffer | int, int]], sort: SortScratch, b: BucketScratch, acc_bytes: int,
                stream: Stream, result_stride: int | None, mark: Mark) -> None:
    K = plan.keys
    nsets = len(msms)
    cv = getattr(mod, "curve", None)  # the loaded module's curve picks the product's build
    if not 1 <= nsets <= MSM_SETS or (nsets > 1 and plan.affine_rounds):
        raise ValueError(f"{nsets} MSMs in one XYZZ pass (1..{MSM_SETS}, none with affine rounds)")
    bases = [_ptr(x) for x, _ in msms]
    sorted_ptr, pts, offsets = affine_rounds(mod, group, plan, msms[0][0], sort, b, acc_bytes // 4, stream)
    if plan.affine_rounds:
        _mark(mark, "affine rounds")
        bases = [pts]
    bases += [bases[-1]] * (MSM_SETS - nsets)
    partial_words = 2 * layout.chunks * (acc_bytes // 4)  # a set's partial slots
    kernel = xyzz_kernel("accumulate" if nsets == 1 else "accumulate_sets", group, cv)
    T = chunking_arg(layout)
    blocks = -(-layout.chunks // ACCUMULATE_THREADS)
    if nsets == 1:  # the single MSM's own kernel (the large sizes' hot loop, as measured before the sets)
        launch(mod, kernel, blocks, ACCUMULATE_THREADS, stream, sorted_ptr, offsets, U32(K), bases[0], U32(T),
               b.buckets, b.partials)
    else:
        launch(mod, kernel, (blocks, nsets, 1), ACCUMULATE_THREADS, stream, sorted_ptr, offsets, U32(K),
               *bases, U32(T), b.buckets, b.partials, U32(partial_words))
    _mark(mark, "accumulate")
    heavy_count = b.heavy.ptr + 4 * nsets * K
    Device.memset32(heavy_count, 0, 2 * nsets, stream)
    launch(mod, xyzz_kernel("fix", group, cv), (-(-K // 128), nsets, 1), 128, stream, offsets, U32(K), U32(T),
           b.partials, b.buckets, b.heavy, heavy_count, U32(FIX_SERIAL), U32(FIX_WARP_MAX), U32(partial_words))
    _mark(mark, "fix")
    lanes = fix_lanes(mean_chunks_per_bucket(plan, layout))
    slices = heavy_slices()
    launch(mod, xyzz_kernel("fix_heavy", group, cv), (fix_heavy_blocks(K, layout.chunks, lanes, slices), nsets, 1),
           256, stream, b.heavy, heavy_count, U32(K), offsets, U32(T), b.partials, b.buckets, U32(partial_words),
           U32(lanes | slices << 8), shared=8 * acc_bytes)
    if slices > 1:
        launch(mod, xyzz_kernel("fix_join", group, cv), (FIX_JOIN_BLOCKS, nsets, 1), 256, stream, b.heavy,
               heavy_count, U32(K), offsets, U32(T), b.partials, b.buckets, U32(partial_words), U32(slices),
               shared=8 * acc_bytes)
    _mark(mark, "fix heavy")
    B = plan.buckets_per_group
    sets = nsets * plan.sets  # every set's bucket groups, one after another
    threads = REDUCE_THREADS[group]
    levels = layout.tree_levels(threads)
    launch(mod, xyzz_kernel("reduce_segments", group, cv), (levels[0], sets, 1), threads, stream, b.buckets,
           U32(B), U32(layout.seg_len), b.segments, shared=(threads // 32) * acc_bytes)
    _mark(mark, "segments")
    src, dst = b.segments.ptr, b.tree.ptr
    for count, nxt in zip(levels, levels[1:]):
        launch(mod, xyzz_kernel("tree_sum", group, cv), (nxt, sets, 1), TREE_THREADS, stream, src, U32(count),
               U32(tree_pass_per_thread(count)), dst, shared=(TREE_THREADS // 32) * acc_bytes)
        src, dst = dst, dst + sets * nxt * acc_bytes
    if len(levels) > 1:
        _mark(mark, "tree")
    stride = acc_bytes if result_stride is None else result_stride
    results = [r for _, r in msms]
    results += [results[-1]] * (MSM_SETS - nsets)
    launch(mod, xyzz_kernel("combine", group, cv), nsets * plan.batch, 1, stream, src, U32(plan.groups),
           U32(plan.c * plan.fold), *[Ptr(r) for r in results], U32(plan.batch), U32(stride // 4))
    _mark(mark, "combine")


# The least chunk a sparse vector's entries take (a power of two): shorter chunks spread them over more threads,
# longer ones leave a heavy bucket (a witness's ones) fewer partial sums for msm_fix_heavy.  Measured at 2^24 on 0/1
# vectors with the heavy bucket on one block (perf/RESULTS.md, session 36; ms for 64 / 128 / 256 / 512): BLS12-381
# G1 14.4 / 10.2 / 8.1 / 10.4, G2 38.9 / 27.0 / 20.7 / 28.3, BN254 G1 8.1 / 6.4 / 6.3 / 6.8.  Over HEAVY_SLICES
# blocks the fix-up matters less and the accumulation alone is level at 128 and 256 (3.43 / 3.44 ms, BLS12-381 G1).
MIN_CHUNK = 256


def chunking_arg(layout: AccumulateLayout) -> int:
    """The XYZZ pass's chunk argument (cuda_kernels/msm.cuh msm_chunk): the layout's entries a thread T with
    its chunk count and MIN_CHUNK, so that a vector with fewer entries than the plan's bound (a witness's zeros
    and ones) spreads them over the layout's threads, at least MIN_CHUNK and at most T a thread; T alone where
    they do not pack (fewer than 128 chunks or 2^18 and more, T of 2^16 or more)."""
    if not 0 < MIN_CHUNK < 1 << 16 or MIN_CHUNK & (MIN_CHUNK - 1):
        raise ValueError(f"msm.MIN_CHUNK {MIN_CHUNK} is not a power of two below 2^16")
    units, least = layout.chunks >> 7, MIN_CHUNK.bit_length() - 1
    if layout.chunk >= 1 << 16 or not 0 < units < 1 << 11:
        return layout.chunk
    return 1 << 31 | least << 27 | units << 16 | layout.chunk


# Blocks that sum one bucket of msm_fix_heavy's block list (its partial sums cut into that many slices, each slice's
# sum then added by msm_fix_join; 1: a block a bucket, no join).  A witness's ones fill one bucket: 6.9M entries at
# 2^24 in chunks of MIN_CHUNK, ~27k partial sums, which one block added in 2.2 ms (BLS12-381 G1) and 6.8 ms (G2).
HEAVY_SLICES = 64
FIX_JOIN_BLOCKS = 32  # grid of msm_fix_join (grid-stride over the block list)


def heavy_slices() -> int:
    if not 1 <= HEAVY_SLICES <= 255:
        raise ValueError(f"msm.HEAVY_SLICES {HEAVY_SLICES} is not in 1..255")
    return HEAVY_SLICES


def fix_heavy_blocks(keys: int, chunks: int, lanes: int, slices: int = 1) -> int:
    """Blocks of msm_fix_heavy: a group of `lanes` for each bucket the warp list can hold (one
    there spans more than FIX_SERIAL chunks, all but two of them its own) and `slices` blocks for
    the block list's first bucket (a block for each further one: the list is rarely more than one or two long,
    and the grid strides over the rest), capped at FIX_HEAVY_BLOCKS."""
    def listed(over: int) -> int:
        return min(keys, chunks // max(over - 1, 1) + 1)

    by_group = -(-listed(FIX_SERIAL) // (8 * (32 // lanes)))
    return max(1, min(FIX_HEAVY_BLOCKS, max(by_group, listed(FIX_WARP_MAX) + slices - 1)))


def run_msm(mod: Module, group: str, plan: MsmPlan, layout: AccumulateLayout, bases: DeviceBuffer | int,
            scalars: DeviceBuffer | int, sort: SortScratch, b: BucketScratch, acc_bytes: int, result: int,
            stream: Stream, result_stride: int | None = None, mark: Mark = None) -> None:
    """One whole MSM (or a batch of plan.batch against the same bases) over a device buffer of
    bases (table t of the fold at bases + t * n points) and scalars: sort, then accumulate."""
    sort_scalars(mod, plan, scalars, sort, stream, mark)
    accumulate(mod, group, plan, layout, bases, sort, b, acc_bytes, result, stream, result_stride, mark)


def precompute(mod: Module, group: str, plan: MsmPlan, bases: DeviceBuffer, stream: Stream) -> None:
    """Fill tables 1..fold-1 of a bases buffer whose table 0 holds the points."""
    if plan.fold > 1:
        launch(mod, precompute_kernel(group, getattr(mod, "curve", None)), -(-plan.n // 128), 128, stream, bases,
               U32(plan.n), U32(plan.c), U32(plan.fold))


def sorted_msms(mod: Module, plan: MsmPlan, layout: AccumulateLayout, scalars: DeviceBuffer | int,
                msms: list[tuple[str, DeviceBuffer | int, int, int]], sort: SortScratch, b: BucketScratch,
                stream: Stream) -> None:
    """Sort `scalars` once, then one MSM per (group, bases, acc_bytes, result address) over them.

    The entry point for callers that bring their own bases already on the device (the host
    tier calls it once per streamed chunk)."""
    sort_scalars(mod, plan, scalars, sort, stream)
    i = 0
    while i < len(msms):  # runs of one group and accumulator share the XYZZ pass's launches
        j = i + 1
        while j < len(msms) and msms[j][0] == msms[i][0] and msms[j][2] == msms[i][2]:
            j += 1
        group, acc = msms[i][0], msms[i][2]
        accumulate_sets(mod, group, plan, layout, [(x[1], x[3]) for x in msms[i:j]], sort, b, acc, stream)
        i = j
