"""The MSM's bucket sort (cuda_kernels/msm.cuh: msm_count, the scan and msm_scatter, or the binned sort: msm_bin
and two msm_regroup passes, each after its own count and scan):
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


# The bucket sort places entries directly (a count and a random 4-byte write each into `sorted`: BN254 G1
# at 2^24, 2e8 entries, 14.7 ms) or through coarse bins (cuda_kernels/msm.cuh's bins' count and msm_bin, then
# the regrouping passes below, each after its count: 5.4 ms there), which takes 12 bytes an entry more
# scratch (BN254 2^24: 2.4 GB).  Measured on the H200 (perf/RESULTS.md "Session 37", perf/msm.py --sort
# direct,binned): the binned sort is ahead from 2^18 to 2^26 points, G1 and G2, both curves (a whole MSM
# 1-17% faster: BN254 G1 2^24 60.0 -> 50.8 ms, 2^26 221.5 -> 184.2, BLS12-381 G1 2^24 103.4 -> 96.8) and
# behind at 2^16-2^17.  SORT: "auto" (the default: binned
# from SORT_BINNED_ENTRIES entries, where the scratch has the bins: a key's footprint grants them only
# where they fit beside its proofs without a smaller fold or the host tier, footprint.plan_key),
# "direct" (never), "binned" (wherever the scratch has them); perf/msm.py --sort compares them.
# (Before the regrouping passes, msm_place finished the binned sort: BLS12-381 measured slower so and
# was not granted the bins.)
BINNED_CURVES = frozenset({"bn128", "bls12381"})
# Whether a big proof's witness sort (launch._msms: A, B1, C and B2 over one sorted vector) takes the bins
# too where they are granted: the 2^24 BLS12-381 proof's A, B1, C 152.8 -> 150.3 ms with them; a vector
# of 0/1 values only (SHA-256's witness) sorts 0.5 ms slower binned at 2^24, the bench circuit's share
# (37% full values) 2.6 ms faster.
WITNESS_BINS = True
SORTS = ("auto", "direct", "binned")
SORT = "auto"
SORT_BINNED_ENTRIES = 3 << 20  # measured: 2^18 points (3.9-4.2e6 entries) gain 1-2%, 2^17 (2.0-2.1e6) lose 1-2%
MSM_BINS = 256  # cuda_kernels/msm.cuh's MSM_BINS: bins, and the threads of a msm_bin block
BIN_MAX_WINDOWS = 40  # a msm_bin block stages MSM_BINS * windows pairs in shared memory
# After msm_bin, the binned order reaches the sorted one through two regrouping passes
# (cuda_kernels/msm_regroup.cuh: coarse bin -> groups of 2^m keys -> keys, each after counting its groups over
# the order before it; a global atomic a group a slice of 4096 entries, the runs written whole).
RG_THREADS, RG_SLICE, RG_LOCAL = 512, 4096, 1024  # msm_regroup.cuh's block, slice and tables
REGROUP_LOCAL = RG_LOCAL  # the widest range of groups a slice regroups in shared memory (tests narrow it)


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


def regroup_shift(keys: int) -> int:
    """Key bits below the regrouping's middle groups: halfway below the coarse bin, so that a slice's
    groups in both passes span at most 2^9 of a bin's or group's (RG_LOCAL holds two such)."""
    return bin_shift(keys) // 2


def regroup_groups(keys: int) -> int:
    """The middle order's groups of 2^regroup_shift keys (their counts, offsets and cursors)."""
    return (max(keys, 1) - 1 >> regroup_shift(keys)) + 1


def bin_shared_bytes(plan: MsmPlan) -> int:
    """msm_bin's shared memory: four MSM_BINS-word tables, the scan's 32 words, the stage."""
    return 4 * (4 * MSM_BINS + 32) + 8 * MSM_BINS * plan.windows


class SortScratch:
    """Device buffers for sorting one scalar vector into buckets (plan-sized); `binned` adds the binned
    order's keys and entries, the middle order's keys, and the bins' and groups' counts, offsets and cursors
    (used where binned_sort(plan) says so; without them every sort is direct)."""

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
        # bin_keys, bin_entries, mid_keys; the bins' counts, offsets, cursor; the groups' likewise (msm_bin's
        # entries go to `sorted` until the last pass, the middle order's to bin_entries)
        self.bin_bufs = [dev.alloc(n, stream) for n in self._bin_sizes(plans)] if self.binned else []

    @staticmethod
    def _bin_sizes(plans: list[MsmPlan]) -> list[int]:
        entries = max(max(p.max_entries for p in plans), 1)
        groups = max(regroup_groups(p.keys) for p in plans)
        return [4 * entries] * 3 + [4 * (MSM_BINS + 1)] * 3 + [4 * (groups + 1)] * 3

    @staticmethod
    def nbytes(plans: list[MsmPlan], binned: bool = False) -> int:
        k = max(p.keys for p in plans)
        entries = max(max(p.max_entries for p in plans), 1)
        bins = sum(SortScratch._bin_sizes(plans)) if binned else 0
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
    grid = (-(-plan.n // 256), plan.batch, 1)
    per_vector = plan.groups * plan.buckets_per_group
    if bins and s.binned and binned_sort(plan):
        _binned(mod, plan, scalars, s, stream, mark)
        return
    Device.memset32(s.counts, 0, k + 1, stream)
    launch(mod, "msm_count", grid, 256, stream, scalars, U32(plan.n), U32(plan.c), U32(plan.windows),
           U32(plan.fold), U32(per_vector), s.counts)
    _mark(mark, "count")
    scan(mod, s.counts.ptr, k, s.offsets.ptr, s.cursor.ptr, s.block_sums.ptr, s.block_prefix.ptr, stream)
    _mark(mark, "scan")
    launch(mod, "msm_scatter", grid, 256, stream, scalars, U32(plan.n), U32(plan.c), U32(plan.windows),
           U32(plan.fold), U32(per_vector), s.cursor, s.sorted)
    _mark(mark, "scatter")


def _binned(mod: Module, plan: MsmPlan, scalars: DeviceBuffer | int, s: SortScratch, stream: Stream,
            mark: Mark) -> None:
    """Count by coarse bin, bin; count by group, regroup; count by key, regroup (cuda_kernels/msm.cuh,
    msm_regroup.cuh); s.offsets, s.cursor and s.sorted end as the direct sort leaves them."""
    k = plan.keys
    bin_keys, bin_entries, mid_keys, bin_counts, bin_offsets, bin_cursor, grp_counts, grp_offsets, grp_cursor = (
        s.bin_bufs)
    shift, m, groups = bin_shift(k), regroup_shift(k), regroup_groups(k)
    local = min(REGROUP_LOCAL, RG_LOCAL)
    scalar_args = (scalars, U32(plan.n), U32(plan.c), U32(plan.windows), U32(plan.fold),
                   U32(plan.groups * plan.buckets_per_group), U32(shift))
    Device.memset32(bin_counts, 0, MSM_BINS + 1, stream)
    launch(mod, "msm_bin_count", (-(-plan.n // MSM_BINS), plan.batch, 1), MSM_BINS, stream, *scalar_args,
           bin_counts)
    scan(mod, bin_counts.ptr, MSM_BINS, bin_offsets.ptr, bin_cursor.ptr, s.block_sums.ptr, s.block_prefix.ptr,
         stream)
    _mark(mark, "count")
    shared = bin_shared_bytes(plan)
    if shared > 48 * 1024:
        mod.allow_shared("msm_bin", shared)
    launch(mod, "msm_bin", (-(-plan.n // MSM_BINS), plan.batch, 1), MSM_BINS, stream, *scalar_args, bin_cursor,
           bin_keys, s.sorted, shared=shared)
    _mark(mark, "bin")
    total = bin_offsets.ptr + 4 * MSM_BINS  # every pass's entry count (the scan's last word)
    grid = -(-plan.max_entries // RG_SLICE)
    Device.memset32(grp_counts, 0, groups + 1, stream)
    launch(mod, "msm_regroup_count", grid, RG_THREADS, stream, bin_keys, U32(shift), U32(m), U32(local), total,
           grp_counts)
    scan(mod, grp_counts.ptr, groups, grp_offsets.ptr, grp_cursor.ptr, s.block_sums.ptr, s.block_prefix.ptr, stream)
    launch(mod, "msm_regroup", grid, RG_THREADS, stream, bin_keys, s.sorted, U32(shift), U32(m), U32(local), total,
           grp_cursor, mid_keys, bin_entries)
    _mark(mark, "regroup")
    Device.memset32(s.counts, 0, k + 1, stream)
    launch(mod, "msm_regroup_count", grid, RG_THREADS, stream, mid_keys, U32(m), U32(0), U32(local), total, s.counts)
    scan(mod, s.counts.ptr, k, s.offsets.ptr, s.cursor.ptr, s.block_sums.ptr, s.block_prefix.ptr, stream)
    launch(mod, "msm_regroup", grid, RG_THREADS, stream, mid_keys, bin_entries, U32(m), U32(0), U32(local), total,
           s.cursor, 0, s.sorted)
    _mark(mark, "place")
