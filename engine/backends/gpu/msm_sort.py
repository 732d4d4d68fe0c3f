"""The MSM's bucket sort (cuda_kernels/msm.cuh: msm_count, the scan, msm_scatter; or binned,
cuda_kernels/msm_bin_sort.cuh: msm_bin_count, msm_bin_scan, msm_bin_runs, msm_bin_sort): each nonzero
signed digit of each scalar becomes an entry (point index, sign) in its bucket's run of one array, so
the accumulation reads a bucket's points one after another.  Sized by the plan only, never by the
scalars (engine/backends/gpu/msm.py plans; this module only places).
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


# The bucket sort places entries directly (count, scan, a random 4-byte write each into `sorted`: a global
# atomic an entry in the count and another in the placement) or through coarse bins
# (cuda_kernels/msm_bin_sort.cuh: the bins counted and their entries grouped in shared memory, then each
# bin counting-sorted into its buckets by one block in shared memory), which takes 8 bytes an entry more
# scratch (BN254 2^24: 1.6 GB).  The binned passes before the per-bin counting sort (a global count,
# then msm_place: a global cursor an entry) placed BN254 G1's 2e8 entries at 2^24 in 9.0 against
# 12.2 ms and 8e8 at 2^26 in 36.7 against 49.5, but 5.5e7 at 2^22 in 3.2 against 2.4.  SORT: "auto"
# (the default: binned from SORT_BINNED_ENTRIES entries, where the scratch has the bins: a key's
# footprint grants them only where they fit beside its proofs without a smaller fold or the host tier,
# footprint.plan_key), "direct" (never), "binned" (wherever the scratch has them and a bin's counters
# fit: BIN_SORT_MAX_KEYS); perf/msm.py --sort compares them (--binned-entries moves auto's threshold).
# Where the bins are granted: the curves whose sorts measured faster binned at 2^24 (perf/RESULTS.md
# "Session 25": BN254 G1 56.8 against 60.1 ms; BLS12-381 G1 112.1 against 107.0, slower, though an
# earlier session measured it 3.4 ms faster: not granted until that is settled).
BINNED_CURVES = frozenset({"bn128"})
SORTS = ("auto", "direct", "binned")
SORT = "auto"
SORT_BINNED_ENTRIES = 1 << 27
MSM_BINS = 256  # cuda_kernels/msm.cuh's MSM_BINS: bins, and the threads of a msm_bin_count / msm_bin_runs block
BIN_MAX_WINDOWS = 40  # a msm_bin_runs block stages MSM_BINS * windows pairs in shared memory
# msm_bin_sort: a block of SORT_THREADS a bin, its 2^shift keys' counters in shared memory (at most
# BIN_SORT_MAX_KEYS: 128 KiB, one block an SM; BN254 2^24's full fold needs 2^13, 32 KiB); PLACE_PASSES
# key sub-ranges placed one after another (1: all at once; more: fewer slots written at once, each
# pass reading the bin again), for perf/msm.py --place-passes
SORT_THREADS = 1024  # cuda_kernels/msm_bin_sort.cuh's MSM_SORT_THREADS
BIN_SORT_MAX_KEYS = 1 << 15
PLACE_PASSES = 1


def binned_sort(plan: MsmPlan) -> bool:
    """Whether sort_scalars places `plan`'s entries through coarse bins (SORT), given a scratch with them."""
    if SORT not in SORTS:
        raise ValueError(f"msm sort {SORT!r} is not one of {SORTS}")
    if plan.windows > BIN_MAX_WINDOWS or SORT == "direct" or 1 << bin_shift(plan.keys) > BIN_SORT_MAX_KEYS:
        return False
    return SORT == "binned" or plan.max_entries >= SORT_BINNED_ENTRIES


def bin_shift(keys: int) -> int:
    """Key bits below the coarse bin: at most MSM_BINS bins over `keys` keys."""
    return max(0, (keys - 1).bit_length() - (MSM_BINS.bit_length() - 1))


def bins_of(keys: int) -> int:
    """Coarse bins over `keys` keys (the last one may hold fewer than 2^bin_shift keys)."""
    return ((keys - 1) >> bin_shift(keys)) + 1


def bin_shared_bytes(plan: MsmPlan) -> int:
    """msm_bin_runs's shared memory: four MSM_BINS-word tables, the scan's 32 words, the stage."""
    return 4 * (4 * MSM_BINS + 32) + 8 * MSM_BINS * plan.windows


class SortScratch:
    """Device buffers for sorting one scalar vector into buckets (plan-sized); `binned` adds the binned
    order's keys and entries and the bins' counts and starts (used where binned_sort(plan) says so;
    without them every sort is direct)."""

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
        # bin_keys, bin_entries (the binned order), bin_count, bin_start (MSM_BINS + 1: its total last)
        self.bin_bufs = [dev.alloc(4 * entries, stream), dev.alloc(4 * entries, stream),
                         dev.alloc(4 * MSM_BINS, stream), dev.alloc(4 * (MSM_BINS + 1), stream)] if self.binned else []

    @staticmethod
    def nbytes(plans: list[MsmPlan], binned: bool = False) -> int:
        k = max(p.keys for p in plans)
        entries = max(max(p.max_entries for p in plans), 1)
        bins = 8 * entries + 4 * (2 * MSM_BINS + 1) if binned else 0
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
    if bins and s.binned and binned_sort(plan):
        _sort_binned(mod, plan, scalars, s, stream, mark)
        return
    k = plan.keys
    Device.memset32(s.counts, 0, k + 1, stream)
    grid = (-(-plan.n // 256), plan.batch, 1)
    per_vector = plan.groups * plan.buckets_per_group
    launch(mod, "msm_count", grid, 256, stream, scalars, U32(plan.n), U32(plan.c), U32(plan.windows),
           U32(plan.fold), U32(per_vector), s.counts)
    _mark(mark, "count")
    scan(mod, s.counts.ptr, k, s.offsets.ptr, s.cursor.ptr, s.block_sums.ptr, s.block_prefix.ptr, stream)
    _mark(mark, "scan")
    launch(mod, "msm_scatter", grid, 256, stream, scalars, U32(plan.n), U32(plan.c), U32(plan.windows),
           U32(plan.fold), U32(per_vector), s.cursor, s.sorted)
    _mark(mark, "scatter")


def _sort_binned(mod: Module, plan: MsmPlan, scalars: DeviceBuffer | int, s: SortScratch, stream: Stream,
                 mark: Mark) -> None:
    """The binned sort (cuda_kernels/msm_bin_sort.cuh): the same offsets and buckets as the direct one, a
    bucket's entries in another order.  Phases named as the direct sort's, for perf/msm.py --breakdown."""
    k, shift = plan.keys, bin_shift(plan.keys)
    bins = bins_of(k)
    bin_keys, bin_entries, bin_count, bin_start = s.bin_bufs
    Device.memset32(bin_count, 0, MSM_BINS, stream)
    grid = (-(-plan.n // MSM_BINS), plan.batch, 1)
    digits = (scalars, U32(plan.n), U32(plan.c), U32(plan.windows), U32(plan.fold),
              U32(plan.groups * plan.buckets_per_group), U32(shift))
    launch(mod, "msm_bin_count", grid, MSM_BINS, stream, *digits, bin_count)
    _mark(mark, "count")
    launch(mod, "msm_bin_scan", 1, MSM_BINS, stream, bin_count, U32(bins), bin_start)
    _mark(mark, "scan")
    shared = bin_shared_bytes(plan)
    if shared > 48 * 1024:
        mod.allow_shared("msm_bin_runs", shared)
    launch(mod, "msm_bin_runs", grid, MSM_BINS, stream, *digits, bin_start, bin_count, bin_keys, bin_entries,
           shared=shared)
    _mark(mark, "bin")
    counters = 4 << shift
    if counters > 48 * 1024:
        mod.allow_shared("msm_bin_sort", counters)
    launch(mod, "msm_bin_sort", bins, SORT_THREADS, stream, bin_keys, bin_entries, bin_start, U32(bins), U32(k),
           U32(shift), U32(max(1, min(PLACE_PASSES, 1 << shift))), s.offsets, s.sorted, shared=counters)
    _mark(mark, "place")
