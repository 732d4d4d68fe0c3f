"""The MSM's bucket sort on the device, read back and checked bucket by bucket against the digits
computed here: the direct placement, and the binned sort (the bins' count and msm_bin, then two counts and
regrouping passes, msm_regroup) with its slices' shared-memory tables and with the per-entry fallback that
wide slices take.

Marked `gpu`: skipped only when no CUDA device exists."""
from __future__ import annotations

import random
import zlib

import numpy as np
import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.limbs import from_ints
from engine.backends.select import cuda_device_count
from test_gpu_kernels import backend  # noqa: F401  (the module's GpuBackend fixture)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]


def expected_buckets(vectors: list[list[int]], plan) -> dict[int, list[int]]:
    """Each bucket's entries as cuda_kernels/msm.cuh makes them: signed digits with the carry taken
    above 2^(c-1), key (vector, fold group, |digit| - 1), entry (fold table row, point, sign bit)."""
    n, c, fold = plan.n, plan.c, plan.fold
    half = 1 << (c - 1)
    per_vector = plan.groups * plan.buckets_per_group
    keys, entries = [], []
    idx = np.arange(n, dtype=np.int64)
    for j, scalars in enumerate(vectors):
        limbs = from_ints(scalars, 4).view(np.uint32).reshape(n, 8).astype(np.uint64)
        limbs = np.concatenate([limbs, np.zeros((n, 2), dtype=np.uint64)], axis=1)
        carry = np.zeros(n, dtype=np.int64)
        for w in range(plan.windows):
            limb, shift = divmod(w * c, 32)
            pair = limbs[:, limb] | (limbs[:, limb + 1] << np.uint64(32))
            v = ((pair >> np.uint64(shift)) & np.uint64((1 << c) - 1)).astype(np.int64) + carry
            neg = v > half
            carry = neg.astype(np.int64)
            d = np.where(neg, v - (1 << c), v)
            hit = d != 0
            keys.append(j * per_vector + (w // fold) * plan.buckets_per_group + np.abs(d[hit]) - 1)
            entries.append((w % fold) * n + idx[hit] | np.where(d[hit] < 0, 0x80000000, 0))
    k, e = np.concatenate(keys), np.concatenate(entries)
    order = np.lexsort((e, k))
    k, e = k[order], e[order]
    cuts = np.flatnonzero(np.diff(k)) + 1
    return {int(kk[0]): [int(x) for x in ee] for kk, ee in zip(np.split(k, cuts), np.split(e, cuts)) if len(kk)}


def sort_on_device(backend, curve, plan, vectors):
    from cuda_kernels.driver import Device
    from engine.backends.gpu import msm as gmsm

    mod, stream = backend._run(curve)
    sc = backend._upload_fr(np.concatenate([from_ints(v, 4) for v in vectors]), stream)
    s = gmsm.SortScratch(backend.device, [plan], stream, binned=True)
    gmsm.sort_scalars(mod, plan, sc, s, stream)
    k = plan.keys
    offsets = np.empty(k + 1, dtype=np.uint32)
    Device.download(offsets, s.offsets, stream)
    stream.synchronize()
    total = int(offsets[k])
    placed = np.empty(max(total, 1), dtype=np.uint32)
    Device.download(placed, s.sorted, stream)
    stream.synchronize()
    s.free(stream)
    Device.free(sc, stream)
    got = {}
    for key in np.flatnonzero(np.diff(offsets.astype(np.int64))):
        got[int(key)] = sorted(int(e) for e in placed[offsets[key]:offsets[key + 1]])
    return got


# (n, c, fold, vectors): the full fold and fold 1; keys from a few hundred (every slice local) to ~10^5
# (the last pass's slices wide at n = 1501); a batch with an all-zero vector and a mostly 0/1 one (one
# bucket holding most entries, across many slices); n not a power of two
CASES = [(1501, 7, "full", "random"), (1501, 12, 1, "random"), (20000, 10, "full", "random"),
         (9000, 9, "full", "batch"), (1, 8, "full", "random"), (30000, 13, 2, "witness")]


def vectors_for(curve, n, kind, rng):
    edge = [0, 1, curve.r - 1, 2]
    if kind == "random":
        return [(edge + [rng.randrange(curve.r) for _ in range(n)])[:n]]
    skew = [rng.choice([0, 0, 1, 1, 1, 1, 2, curve.r - 1, rng.randrange(curve.r)]) for _ in range(n)]
    if kind == "witness":
        return [skew]
    return [[rng.randrange(curve.r) for _ in range(n)], [0] * n, skew]


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
@pytest.mark.parametrize("place", ["regroup", "regroup-wide", "regroup-mixed", "direct"])
def test_sorted_buckets_match_the_digits(backend, curve, place, monkeypatch):
    """Every bucket's run holds exactly its entries and the offsets bound the runs, whichever placement:
    `regroup` with the slices' tables (1024 groups), `regroup-wide` with every slice on the per-entry
    fallback (tables of 1 group), `regroup-mixed` with tables of 64 groups (some slices each way), `direct`."""
    from engine.backends.gpu import msm as gmsm
    from engine.backends.gpu import msm_sort as gsort

    monkeypatch.setattr(gsort, "SORT", "direct" if place == "direct" else "binned")
    monkeypatch.setattr(gsort, "REGROUP_LOCAL", {"regroup-wide": 1, "regroup-mixed": 64}.get(place, gsort.RG_LOCAL))
    rng = random.Random(zlib.crc32(f"{curve.name}:{place}".encode()))
    bits = curve.r.bit_length()
    for n, c, fold, kind in CASES:
        vectors = vectors_for(curve, n, kind, rng)
        w = gmsm.windows_for(c, bits)
        plan = gmsm.MsmPlan(n, c, w, w if fold == "full" else fold, bits, batch=len(vectors))
        assert gsort.binned_sort(plan) == (place != "direct")
        got = sort_on_device(backend, curve, plan, vectors)
        assert got == expected_buckets(vectors, plan), (n, c, fold, kind)
