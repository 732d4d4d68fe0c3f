"""A host model of the binned bucket sort (cuda_kernels/msm_bin_sort.cuh) against the direct sort's definition.

The model follows the kernels step by step (the bins' counts a block of MSM_BINS scalars at a time, their
starts, each block's runs at its bins' fill counters, then a block a bin: counters, the per-thread ranges of
the block scan, the offsets it writes, the placement in key sub-ranges), so an indexing error shows up here
and not only on the GPU.  The direct sort's definition: offsets = the exclusive scan of the keys' counts,
bucket k = the multiset of the entries with key k.  tests/test_gpu_msm.py checks the kernels against both."""
from __future__ import annotations

import random

import numpy as np
import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_sort as gsort

UNSET = 0xFFFFFFFF


def pairs(plan, vectors: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, entries, valid) of every (vector, scalar, window), shape (batch, n, windows), as msm.cuh makes
    them: signed c-bit digits (window_digit), key = vector * K_v + (w / fold) * B + |d| - 1, entry =
    ((w % fold) * n + i) | sign << 31; valid where the digit is nonzero."""
    c, n, B = plan.c, plan.n, plan.buckets_per_group
    per_vector = plan.groups * B
    limbs = np.array([[[(s >> (64 * q)) & (2**64 - 1) for q in range(4)] for s in v] for v in vectors],
                     dtype=np.uint64).reshape(len(vectors), n, 4)
    keys = np.zeros((len(vectors), n, plan.windows), dtype=np.int64)
    entries = np.zeros_like(keys)
    digit = np.zeros_like(keys)
    carry = np.zeros((len(vectors), n), dtype=np.int64)
    for w in range(plan.windows):
        bit = w * c
        limb, sh = bit >> 6, bit & 63
        val = np.zeros((len(vectors), n), dtype=np.uint64)
        if limb < 4:
            val = limbs[..., limb] >> np.uint64(sh)
            if sh and limb + 1 < 4:
                val |= limbs[..., limb + 1] << np.uint64(64 - sh)
        v = (val & np.uint64((1 << c) - 1)).astype(np.int64) + carry
        over = v > (1 << (c - 1))
        d = np.where(over, v - (1 << c), v)
        carry = over.astype(np.int64)
        digit[..., w] = d
        keys[..., w] = np.arange(len(vectors))[:, None] * per_vector + (w // plan.fold) * B + np.abs(d) - 1
        entries[..., w] = ((w % plan.fold) * n + np.arange(n))[None, :] | np.where(d < 0, 1 << 31, 0)
    return keys, entries, digit != 0


def direct_sort(plan, vectors) -> tuple[np.ndarray, np.ndarray]:
    """The direct sort's definition: offsets[0..K] and the (key, entry) pairs of every bucket, key-major."""
    keys, entries, valid = pairs(plan, vectors)
    k, e = keys[valid], entries[valid]
    offsets = np.zeros(plan.keys + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(np.bincount(k, minlength=plan.keys))
    order = np.lexsort((e, k))
    return offsets, np.stack([k[order], e[order]])


def bucket_pairs(offsets: np.ndarray, sorted_: np.ndarray) -> np.ndarray:
    """A sort's result as its (key, entry) pairs, key-major then by entry: equal for two sorts exactly where
    their offsets agree and each bucket holds the same multiset of entries."""
    k = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    e = np.asarray(sorted_[:offsets[-1]], dtype=np.int64)
    order = np.lexsort((e, k))
    return np.stack([k[order], e[order]])


def binned_model(plan, vectors, passes: int = 1, threads: int = gsort.SORT_THREADS,
                 rng: random.Random | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """msm_bin_count, msm_bin_scan, msm_bin_runs and msm_bin_sort on the host: (offsets, sorted, the
    intermediate buffers).  `rng` orders what atomics order on the device (blocks reserving their runs,
    pairs within a block's bin)."""
    rng = rng or random.Random(0)
    keys, entries, valid = pairs(plan, vectors)
    K, shift, nbins = plan.keys, gsort.bin_shift(plan.keys), gsort.MSM_BINS
    bins = gsort.bins_of(K)
    blocks = [(j, blk) for j in range(len(vectors)) for blk in range(-(-plan.n // nbins))]

    def block_pairs(j, blk):  # a thread a scalar, its windows in order
        sl = slice(blk * nbins, (blk + 1) * nbins)
        m = valid[j, sl]
        return keys[j, sl][m], entries[j, sl][m]

    bin_count = np.zeros(nbins, dtype=np.int64)
    for j, blk in blocks:  # msm_bin_count: a shared histogram, then one add a nonzero bin
        hist = np.bincount(block_pairs(j, blk)[0] >> shift, minlength=nbins)
        assert len(hist) == nbins, "a key past the last bin"
        bin_count += hist
    assert not bin_count[bins:].any()
    bin_start = np.zeros(nbins + 1, dtype=np.int64)  # msm_bin_scan
    bin_start[1:bins + 1] = np.cumsum(bin_count[:bins])
    total = int(bin_start[bins])
    fill = np.zeros(nbins, dtype=np.int64)  # bin_count zeroed: msm_bin_runs's fill counters
    bin_keys = np.full(total, UNSET, dtype=np.int64)
    bin_entries = np.full(total, UNSET, dtype=np.int64)
    for j, blk in rng.sample(blocks, len(blocks)):  # msm_bin_runs, blocks in any order
        k, e = block_pairs(j, blk)
        b = k >> shift
        hist = np.bincount(b, minlength=nbins)
        start = np.concatenate([[0], np.cumsum(hist)[:-1]])
        stage_k, stage_e = np.zeros(len(k), dtype=np.int64), np.zeros(len(k), dtype=np.int64)
        cursor = start.copy()
        for p in rng.sample(range(len(k)), len(k)):  # shared atomics: any order within a bin
            stage_k[cursor[b[p]]], stage_e[cursor[b[p]]] = k[p], e[p]
            cursor[b[p]] += 1
        out = np.zeros(nbins, dtype=np.int64)
        for t in range(nbins):
            if hist[t]:
                out[t] = bin_start[t] + fill[t]
                fill[t] += hist[t]
        for jj in range(len(k)):
            bb = stage_k[jj] >> shift
            at = out[bb] + (jj - start[bb])
            assert bin_keys[at] == UNSET
            bin_keys[at], bin_entries[at] = stage_k[jj], stage_e[jj]
    assert (fill[:bins] == bin_count[:bins]).all()
    offsets = np.full(K + 1, UNSET, dtype=np.int64)
    sorted_ = np.full(total, UNSET, dtype=np.int64)
    size = 1 << shift
    for b in range(bins):  # msm_bin_sort, a block a bin
        lo, hi = int(bin_start[b]), int(bin_start[b + 1])
        key_lo = b << shift
        local = bin_keys[lo:hi] - key_lo
        assert ((local >= 0) & (local < size)).all(), "a pair outside its bin"
        cnt = np.bincount(local, minlength=size)
        per = -(-size // threads)
        sums = [int(cnt[min(t * per, size):min(min(t * per, size) + per, size)].sum()) for t in range(threads)]
        prefix = np.concatenate([[0], np.cumsum(sums)[:-1]])
        keys_here = min(size, K - key_lo)
        for tid in range(threads):
            first = min(tid * per, size)
            run = int(prefix[tid])
            for t in range(first, min(first + per, size)):
                v = int(cnt[t])
                cnt[t] = run
                if t < keys_here:
                    assert offsets[key_lo + t] == UNSET
                    offsets[key_lo + t] = lo + run
                run += v
        if b == bins - 1:
            offsets[K] = hi
        for part in range(passes):
            for jj in range(lo, hi):
                t = int(local[jj - lo])
                if (t * passes) >> shift == part:
                    assert sorted_[lo + cnt[t]] == UNSET
                    sorted_[lo + cnt[t]] = bin_entries[jj]
                    cnt[t] += 1
    return offsets, sorted_, {"bin_start": bin_start[:bins + 1], "bin_keys": bin_keys, "bins": bins}


def check_against_direct(plan, vectors, offsets, sorted_) -> None:
    """offsets exactly the direct sort's, every bucket the same multiset of entries."""
    want_off, want = direct_sort(plan, vectors)
    assert (np.asarray(offsets, dtype=np.int64) == want_off).all()
    got = bucket_pairs(np.asarray(offsets, dtype=np.int64), sorted_)
    assert got.shape == want.shape and (got == want).all()


def sort_case(name: str, curve, n: int, rng: random.Random) -> list[int]:
    r = curve.r
    if name == "random":
        return [0, 1, r - 1, 2][:n] + [rng.randrange(r) for _ in range(n - 4)]
    if name == "zeros":
        return [0] * n
    if name == "ones":
        return [1] * n
    return [rng.choice([0, 0, 1, 1, 1, 1, 2, r - 1, rng.randrange(r)]) for _ in range(n)]  # skewed


# (c, fold (None: full), batch, n): keys over fewer and more than the 256 bins, several keys a counter
# thread (c = 22: 2^13 keys a bin), a last bin holding fewer than 2^shift keys (c = 7, fold 1, batch 7:
# 16576 keys in bins of 128), n = 1 and n off a multiple of 256
SHAPES = [(7, None, 1, 300), (12, 1, 1, 257), (12, None, 3, 1), (22, None, 1, 600), (7, 1, 7, 40),
          (9, 2, 3, 513)]


def shape_plan(curve, c, fold, batch, n):
    w = gmsm.windows_for(c, curve.r.bit_length())
    return gmsm.MsmPlan(n, c, w, w if fold is None else fold, curve.r.bit_length(), batch=batch)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "c%d-f%s-b%d-n%d" % s)
@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_binned_model_matches_the_direct_sort(curve, shape):
    rng = random.Random(1000 * shape[0] + shape[3])
    plan = shape_plan(curve, *shape)
    kinds = ["random", "zeros", "ones", "skewed"]
    vectors = [sort_case(kinds[j % 4] if plan.batch > 1 else "random", curve, plan.n, rng) for j in range(plan.batch)]
    offsets, sorted_, mid = binned_model(plan, vectors, rng=rng)
    check_against_direct(plan, vectors, offsets, sorted_)
    assert mid["bins"] <= gsort.MSM_BINS and mid["bins"] << gsort.bin_shift(plan.keys) >= plan.keys


@pytest.mark.parametrize("kind", ["zeros", "ones", "skewed"])
def test_binned_model_on_skewed_and_empty_inputs(kind):
    """All zero (no entries: every bin empty, offsets all 0), all one (one heavy bucket, every other bin
    empty), mostly 0/1; with the placement split into key sub-ranges too (passes 3: not a power of two)."""
    curve, rng = BN254, random.Random(5)
    plan = shape_plan(curve, 12, 1, 2, 700)
    vectors = [sort_case(kind, curve, plan.n, rng) for _ in range(plan.batch)]
    for passes in (1, 3):
        offsets, sorted_, mid = binned_model(plan, vectors, passes=passes, rng=rng)
        check_against_direct(plan, vectors, offsets, sorted_)
    if kind == "zeros":
        assert not offsets.any()
    if kind == "ones":  # window 0's digit 1: key 0 of each vector, every other bucket empty
        assert offsets[-1] == plan.batch * plan.n and (np.diff(mid["bin_start"]) > 0).sum() == plan.batch


def test_binned_model_with_fewer_threads_than_counters():
    """A counter thread scanning several keys, a key range not a multiple of the threads, passes 4."""
    curve, rng = BLS12_381, random.Random(9)
    plan = shape_plan(curve, 14, None, 1, 900)
    vectors = [sort_case("skewed", curve, plan.n, rng)]
    for threads, passes in ((96, 1), (1000, 4), (32, 7)):
        offsets, sorted_, _ = binned_model(plan, vectors, passes=passes, threads=threads, rng=rng)
        check_against_direct(plan, vectors, offsets, sorted_)


def test_the_binned_sort_needs_its_bins_counters_in_shared_memory(monkeypatch):
    """msm_bin_sort holds 2^bin_shift counters a block: plans whose bins hold more keys than
    BIN_SORT_MAX_KEYS sort directly (BN254 2^26 at fold 2: 12.6M keys, 2^16 a bin)."""
    monkeypatch.setattr(gsort, "SORT", "binned")
    big = gmsm.plan_msm(1 << 26, 254, 2, curve="bn128", accumulation="xyzz")
    full = gmsm.plan_msm(1 << 24, 254, "full", curve="bn128", accumulation="xyzz")
    assert 1 << gsort.bin_shift(big.keys) > gsort.BIN_SORT_MAX_KEYS and not gsort.binned_sort(big)
    assert gsort.bin_shift(full.keys) == 13 and gsort.binned_sort(full)
    assert gsort.binned_sort(gmsm.plan_msm(1 << 16, 254, "full"))  # any size whose bins fit
    for keys in (1, 255, 256, 257, 16576, (1 << 21) - 5):
        bins = gsort.bins_of(keys)
        assert bins <= gsort.MSM_BINS and (bins - 1) << gsort.bin_shift(keys) < keys <= bins << gsort.bin_shift(keys)
