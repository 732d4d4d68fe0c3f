"""The MSM's bucket sort (cuda_kernels/msm.cuh: msm_count, the scan, msm_scatter or msm_bin + msm_place):
each nonzero signed digit of each scalar becomes an entry (point index, sign) in its bucket's run of one
array, so the accumulation reads a bucket's points one after another.  Sized by the plan only, never by
the scalars (engine/backends/gpu/msm.py plans; this module only places).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from cuda_kernels.driver import Device, DeviceBuffer, Module, Stream, U32, launch


class MsmPlan(Protocol):
    """What the sort reads of a plan (msm.py's MsmPlan; this module does not import msm.py, which imports it)."""

    n: int
    c: int
    windows: int
    fold: int
    batch: int
    groups: int
    buckets_per_group: int
    keys: int
    max_entries: int

SCAN_BLOCK = 4096


def scan(mod: Module, counts: int, k: int, offsets: int, cursor: int, block_sums: int, block_prefix: int,
         stream: Stream) -> None:
    """Exclusive scan of k counters into offsets[0..k] (offsets[k] = total) and cursor[0..k)."""
    nblocks = -(-k // SCAN_BLOCK)
    launch(mod, "scan_blocks", nblocks, 1024, stream, counts, U32(k), offsets, block_sums)
    # exclusive scan of the block sums; its total lands in offsets[k]
    launch(mod, "scan_blocks", 1, 1024, stream, block_sums, U32(nblocks), block_prefix, offsets + 4 * k)
    launch(mod, "scan_add", -(-k // 1024), 1024, stream, offsets, cursor, U32(k), block_prefix, U32(nblocks))


# The bucket sort places entries directly (a random 4-byte write each into `sorted`) or in two
# passes through coarse bins (cuda_kernels/msm.cuh msm_bin / msm_place: writes that the L2
# merges), which takes 8 bytes an entry more scratch (BN254 2^24: 1.6 GB).  On the H200 binned
# placed BN254 G1's 2e8 entries at 2^24 in 9.0 against 12.2 ms and 8e8 at 2^26 in 36.7 against
# 49.5, but 5.5e7 at 2^22 in 3.2 against 2.4.  SORT: "auto" (the default: binned from
# SORT_BINNED_ENTRIES entries, where the scratch has the bins: a key's footprint grants them only
# where they fit beside its proofs without a smaller fold or the host tier, footprint.plan_key),
# "direct" (never), "binned" (wherever the scratch has them); perf/msm.py --sort compares them.
# Where the bins are granted: the curves whose sorts measured faster binned at 2^24 (perf/RESULTS.md
# "Session 25": BN254 G1 56.8 against 60.1 ms; BLS12-381 G1 112.1 against 107.0, slower, though an
# earlier session measured it 3.4 ms faster: not granted until that is settled).
BINNED_CURVES = frozenset({"bn128"})
SORTS = ("auto", "direct", "binned")
SORT = "auto"
SORT_BINNED_ENTRIES = 1 << 27
MSM_BINS = 256  # cuda_kernels/msm.cuh's MSM_BINS: bins, and the threads of a msm_bin block
BIN_MAX_WINDOWS = 40  # a msm_bin block stages MSM_BINS * windows pairs in shared memory


def binned_sort(plan: MsmPlan) -> bool:
    """Whether sort_scalars places `plan`'s entries through coarse bins (SORT), given a scratch with them."""
    if SORT not in SORTS:
        raise ValueError(f"msm sort {SORT!r} is not one of {SORTS}")
    if plan.windows > BIN_MAX_WINDOWS or SORT == "direct":
        return False
    return SORT == "binned" or plan.max_entries >= SORT_BINNED_ENTRIES


def bin_shift(keys: int) -> int:
    """Key bits below the coarse bin: at most MSM_BINS bins over `keys` keys."""
    return max(0, (keys - 1).bit_length() - (MSM_BINS.bit_length() - 1))


def bin_shared_bytes(plan: MsmPlan) -> int:
    """msm_bin's shared memory: four MSM_BINS-word tables, the scan's 32 words, the stage."""
    return 4 * (4 * MSM_BINS + 32) + 8 * MSM_BINS * plan.windows


class SortScratch:
    """Device buffers for sorting one scalar vector into buckets (plan-sized); `binned` adds the binned
    order's keys and entries (used where binned_sort(plan) says so; without them every sort is direct)."""

    def __init__(self, dev: Device, plans: list[MsmPlan], stream: Stream, binned: bool = False):
        k = max(p.keys for p in plans)
        entries = max(max(p.max_entries for p in plans), 1)
        self.counts = dev.alloc(4 * (k + 1), stream)
        self.offsets = dev.alloc(4 * (k + 1), stream)
        self.cursor = dev.alloc(4 * (k + 1), stream)
        self.sorted = dev.alloc(4 * entries, stream)
        nblocks = -(-k // SCAN_BLOCK)
        self.block_sums = dev.alloc(4 * (nblocks + 1), stream)
        self.block_prefix = dev.alloc(4 * (nblocks + 1), stream)
        self.binned = bool(binned)
        self.bin_bufs = [dev.alloc(4 * entries, stream), dev.alloc(4 * entries, stream),
                         dev.alloc(4 * MSM_BINS, stream)] if self.binned else []

    @staticmethod
    def nbytes(plans: list[MsmPlan], binned: bool = False) -> int:
        k = max(p.keys for p in plans)
        entries = max(max(p.max_entries for p in plans), 1)
        bins = 8 * entries + 4 * MSM_BINS if binned else 0
        return 12 * (k + 1) + 4 * entries + 8 * (-(-k // SCAN_BLOCK) + 1) + bins

    @staticmethod
    def wants_bins(plans: list[MsmPlan]) -> bool:
        """Whether a scratch for `plans` would use bins if it had them (SORT, the plans' sizes)."""
        return any(binned_sort(p) for p in plans)

    def free(self, stream: Stream) -> None:
        for b in (self.counts, self.offsets, self.cursor, self.sorted, self.block_sums, self.block_prefix,
                  *self.bin_bufs):
            Device.free(b, stream)


Mark = Callable[[str], None] | None  # called after each phase with its name (perf/msm.py --breakdown)


def _mark(mark: Mark, name: str) -> None:
    if mark is not None:
        mark(name)


def sort_scalars(mod: Module, plan: MsmPlan, scalars: DeviceBuffer | int, s: SortScratch, stream: Stream,
                 mark: Mark = None, bins: bool = True) -> None:
    """Count digits per bucket, scan to offsets, place each (point, sign) in its bucket.

    `scalars` holds plan.batch vectors of n scalars one after another.  `bins`: through the scratch's
    bins where it has them and binned_sort says so; False: directly (a caller whose accumulation reads
    the direct order faster)."""
    k = plan.keys
    Device.memset32(s.counts, 0, k + 1, stream)
    grid = (-(-plan.n // 256), plan.batch, 1)
    per_vector = plan.groups * plan.buckets_per_group
    launch(mod, "msm_count", grid, 256, stream, scalars, U32(plan.n), U32(plan.c), U32(plan.windows),
           U32(plan.fold), U32(per_vector), s.counts)
    _mark(mark, "count")
    scan(mod, s.counts.ptr, k, s.offsets.ptr, s.cursor.ptr, s.block_sums.ptr, s.block_prefix.ptr, stream)
    _mark(mark, "scan")
    if bins and s.binned and binned_sort(plan):
        bin_keys, bin_entries, bin_fill = s.bin_bufs
        Device.memset32(bin_fill, 0, MSM_BINS, stream)
        shared = bin_shared_bytes(plan)
        if shared > 48 * 1024:
            mod.allow_shared("msm_bin", shared)
        launch(mod, "msm_bin", (-(-plan.n // MSM_BINS), plan.batch, 1), MSM_BINS, stream, scalars, U32(plan.n),
               U32(plan.c), U32(plan.windows), U32(plan.fold), U32(per_vector), U32(bin_shift(k)), s.offsets,
               bin_fill, bin_keys, bin_entries, shared=shared)
        _mark(mark, "bin")
        launch(mod, "msm_place", -(-plan.max_entries // 256), 256, stream, bin_keys, bin_entries, s.offsets,
               U32(k), s.cursor, s.sorted)
        _mark(mark, "place")
        return
    launch(mod, "msm_scatter", grid, 256, stream, scalars, U32(plan.n), U32(plan.c), U32(plan.windows),
           U32(plan.fold), U32(per_vector), s.cursor, s.sorted)
    _mark(mark, "scatter")
