"""Planning and launching the Pippenger MSM kernels (cuda_kernels/msm.cuh).

A plan fixes the window c, the number of windows W, and the fold f: how many
of the windows share one set of buckets because the key holds 2^(c*t)-shifted
copies of its points (t < f).  With f = W (when memory allows) there is one
bucket set and no doubling chain at the end; with f = 1 the key is stored once
and W bucket sets are combined by Horner's rule.

All buffer sizes depend on n and the plan only, never on the scalars, so a
whole MSM is enqueued without a host round trip.
"""
from __future__ import annotations

from dataclasses import dataclass

from cuda_kernels.driver import Device, DeviceBuffer, Module, Stream, U32, launch

SCAN_BLOCK = 4096
HEAVY_THRESHOLD = 16
TREE_THREADS, TREE_PER_THREAD = 256, 4  # one tree-sum pass folds 1024 points into one
MAX_BUCKET_KEYS = SCAN_BLOCK * SCAN_BLOCK  # what the two-level scan covers


@dataclass(frozen=True)
class MsmPlan:
    n: int
    c: int  # window bits
    windows: int
    fold: int
    scalar_bits: int

    @property
    def groups(self) -> int:
        return -(-self.windows // self.fold)

    @property
    def buckets_per_group(self) -> int:
        return 1 << (self.c - 1)

    @property
    def keys(self) -> int:
        return self.groups * self.buckets_per_group

    @property
    def max_entries(self) -> int:
        return self.n * self.windows


def windows_for(c: int, scalar_bits: int) -> int:
    # signed digits need one bit of headroom for the final carry
    return -(-(scalar_bits + 1) // c)


def plan_msm(n: int, scalar_bits: int, fold: str | int = "full", max_c: int = 22) -> MsmPlan:
    """Pick c minimising point additions: n*W for the buckets, about 3 per bucket to reduce."""
    best = None
    for c in range(2, max_c + 1):
        w = windows_for(c, scalar_bits)
        f = w if fold == "full" else max(1, min(int(fold), w))
        g = -(-w // f)
        if g * (1 << (c - 1)) > MAX_BUCKET_KEYS or n * f >= 1 << 31:
            continue
        cost = n * w + 3 * g * (1 << (c - 1)) + (0 if g == 1 else 40 * c * f * (g - 1))
        if best is None or cost < best[0]:
            best = (cost, MsmPlan(n, c, w, f, scalar_bits))
    assert best is not None
    return best[1]


class SortScratch:
    """Device buffers for sorting one scalar vector into buckets (plan-sized)."""

    def __init__(self, dev: Device, plans: list[MsmPlan], stream: Stream):
        k = max(p.keys for p in plans)
        entries = max(max(p.max_entries for p in plans), 1)
        self.counts = dev.alloc(4 * (k + 1), stream)
        self.offsets = dev.alloc(4 * (k + 1), stream)
        self.cursor = dev.alloc(4 * (k + 1), stream)
        self.sorted = dev.alloc(4 * entries, stream)
        nblocks = -(-k // SCAN_BLOCK)
        self.block_sums = dev.alloc(4 * (nblocks + 1), stream)
        self.block_prefix = dev.alloc(4 * (nblocks + 1), stream)

    @staticmethod
    def nbytes(plans: list[MsmPlan]) -> int:
        k = max(p.keys for p in plans)
        entries = max(max(p.max_entries for p in plans), 1)
        return 12 * (k + 1) + 4 * entries + 8 * (-(-k // SCAN_BLOCK) + 1)

    def free(self, stream: Stream) -> None:
        for b in (self.counts, self.offsets, self.cursor, self.sorted, self.block_sums, self.block_prefix):
            Device.free(b, stream)


def sort_scalars(mod: Module, plan: MsmPlan, scalars: DeviceBuffer | int, s: SortScratch, stream: Stream) -> None:
    """Count digits per bucket, scan to offsets, place each (point, sign) in its bucket."""
    k = plan.keys
    Device.memset32(s.counts, 0, k + 1, stream)
    grid = -(-plan.n // 256)
    launch(mod, "msm_count", grid, 256, stream, scalars, U32(plan.n), U32(plan.c), U32(plan.windows),
           U32(plan.fold), s.counts)
    nblocks = -(-k // SCAN_BLOCK)
    launch(mod, "scan_blocks", nblocks, 1024, stream, s.counts, U32(k), s.offsets, s.block_sums)
    # exclusive scan of the block sums; its total lands in offsets[k]
    launch(mod, "scan_blocks", 1, 1024, stream, s.block_sums, U32(nblocks), s.block_prefix,
           s.offsets.ptr + 4 * k)
    launch(mod, "scan_add", -(-k // 1024), 1024, stream, s.offsets, s.cursor, U32(k), s.block_prefix,
           U32(nblocks))
    launch(mod, "msm_scatter", grid, 256, stream, scalars, U32(plan.n), U32(plan.c), U32(plan.windows),
           U32(plan.fold), s.cursor, s.sorted)


@dataclass
class AccumulateLayout:
    """Chunking of the sorted entries and segmenting of the buckets for one device."""

    chunk: int  # T: entries per accumulating thread
    chunks: int
    seg_len: int
    segs: int

    @staticmethod
    def for_plan(plan: MsmPlan, sm_count: int) -> "AccumulateLayout":
        target_threads = max(sm_count * 1024, 1)
        chunk = max(1, -(-plan.max_entries // target_threads))
        chunks = max(1, -(-plan.max_entries // chunk))
        B = plan.buckets_per_group
        # short segments keep the serial running sums short; the tree sum takes the rest
        seg_len = min(max(8, -(-(B * plan.groups) // max(sm_count * 512, 1))), B)
        segs = -(-B // seg_len)
        return AccumulateLayout(chunk, chunks, seg_len, segs)

    def tree_levels(self) -> list[int]:
        """Points per group before each tree-sum pass (the last pass leaves one)."""
        levels, count = [], self.segs
        while True:
            levels.append(count)
            if count == 1:
                return levels
            count = -(-count // (TREE_THREADS * TREE_PER_THREAD))


class BucketScratch:
    """Buckets, partial sums and reduction space, big enough for each (plan, layout) given,
    run one after another on one stream; acc_bytes is the largest accumulator used."""

    def __init__(self, dev: Device, shapes: list[tuple[MsmPlan, AccumulateLayout]], acc_bytes: int,
                 stream: Stream):
        keys, chunks, segs, tree = self.sizes(shapes)
        self.buckets = dev.alloc(keys * acc_bytes, stream)
        self.partials = dev.alloc(2 * chunks * acc_bytes, stream)
        self.heavy = dev.alloc(4 * keys + 4, stream)
        self.segments = dev.alloc(segs * acc_bytes, stream)
        self.tree = dev.alloc(tree * acc_bytes, stream)

    @staticmethod
    def sizes(shapes: list[tuple[MsmPlan, AccumulateLayout]]) -> tuple[int, int, int, int]:
        return (max(p.keys for p, _ in shapes), max(l.chunks for _, l in shapes),
                max(p.groups * l.segs for p, l in shapes),
                max(p.groups * sum(l.tree_levels()[1:]) for p, l in shapes))

    @classmethod
    def nbytes(cls, shapes: list[tuple[MsmPlan, AccumulateLayout]], acc_bytes: int) -> int:
        keys, chunks, segs, tree = cls.sizes(shapes)
        return acc_bytes * (keys + 2 * chunks + segs + tree) + 4 * keys + 4

    def free(self, stream: Stream) -> None:
        for b in (self.buckets, self.partials, self.heavy, self.segments, self.tree):
            Device.free(b, stream)


def accumulate(mod: Module, group: str, plan: MsmPlan, layout: AccumulateLayout, bases: DeviceBuffer | int,
               sort: SortScratch, b: BucketScratch, acc_bytes: int, result: int, stream: Stream) -> None:
    """Bucket sums, their weighted reduction, and the final point (XYZZ) written at `result`."""
    K = plan.keys
    T = layout.chunk
    launch(mod, f"msm_accumulate_{group}", -(-layout.chunks // 128), 128, stream, sort.sorted, sort.offsets,
           U32(K), bases, U32(T), b.buckets, b.partials)
    heavy_count = b.heavy.ptr + 4 * K
    Device.memset32(heavy_count, 0, 1, stream)
    launch(mod, f"msm_fix_{group}", -(-K // 128), 128, stream, sort.offsets, U32(K), U32(T), b.partials, b.buckets,
           b.heavy, heavy_count, U32(HEAVY_THRESHOLD))
    launch(mod, f"msm_fix_heavy_{group}", 256, 256, stream, b.heavy, heavy_count, sort.offsets, U32(T), b.partials,
           b.buckets, shared=8 * acc_bytes)
    B = plan.buckets_per_group
    total_segs = plan.groups * layout.segs
    launch(mod, f"msm_reduce_segments_{group}", -(-total_segs // 128), 128, stream, b.buckets, U32(B),
           U32(plan.groups), U32(layout.seg_len), b.segments)
    src, dst = b.segments.ptr, b.tree.ptr
    levels = layout.tree_levels()
    for count, nxt in zip(levels, levels[1:]):
        launch(mod, f"msm_tree_sum_{group}", (nxt, plan.groups, 1), TREE_THREADS, stream, src, U32(count),
               U32(TREE_PER_THREAD), dst, shared=(TREE_THREADS // 32) * acc_bytes)
        src, dst = dst, dst + plan.groups * nxt * acc_bytes
    launch(mod, f"msm_combine_{group}", 1, 1, stream, src, U32(plan.groups), U32(plan.c * plan.fold), result)


def precompute(mod: Module, group: str, plan: MsmPlan, bases: DeviceBuffer, stream: Stream) -> None:
    """Fill tables 1..fold-1 of a bases buffer whose table 0 holds the points."""
    if plan.fold > 1:
        launch(mod, f"msm_precompute_{group}", -(-plan.n // 128), 128, stream, bases, U32(plan.n), U32(plan.c),
               U32(plan.fold))


def sorted_msms(mod: Module, plan: MsmPlan, layout: AccumulateLayout, scalars: DeviceBuffer | int,
                msms: list[tuple[str, DeviceBuffer | int, int, int]], sort: SortScratch, b: BucketScratch,
                stream: Stream) -> None:
    """Sort `scalars` once, then one MSM per (group, bases, acc_bytes, result address) over them.

    The entry point for callers that bring their own bases already on the device (the host
    tier calls it once per streamed chunk)."""
    sort_scalars(mod, plan, scalars, sort, stream)
    for group, bases, acc, result in msms:
        accumulate(mod, group, plan, layout, bases, sort, b, acc, result, stream)
