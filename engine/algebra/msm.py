"""Multi-scalar multiplication on the CPU: Pippenger with signed digits and batch-affine buckets.

Σ k_i·P_i is computed as follows (pure Python ints, numpy for bookkeeping):

1. Points at infinity and zero scalars are dropped; points whose scalar is 1
   are summed directly (witnesses are full of 0/1 values).
2. The other scalars are cut into c-bit signed digits in [-2^(c-1), 2^(c-1)),
   c chosen from n.  Every (window, |digit|) pair is a bucket; a negative digit
   puts -P_i into it.
3. Buckets are filled by `ec.group_sums`: rounds of pairwise affine additions
   in which all additions of all buckets of all windows share one inversion.
4. Each window's Σ_b (b+1)·B_b is reduced by halving, also in batches:
   Σ_{b<2H} (b+1) B_b = Σ_{b<H} (b+1)(B_b + B_{b+H}) + H·Σ_{b<H} B_{b+H},
   so every term ends up as (sum of points)·2^e with e = c·window + j.
5. A Horner pass over e (Jacobian doublings) combines them.

Large inputs are split by point range over the shared CPU process pool
(scheduler/cpu_pool.py: forkserver or spawn, never fork; created on first use,
reused, shut down at exit).  A worker that dies fails the MSM it was part of
with `CpuWorkerCrashedError` and is replaced; the next MSM uses the pool again.
"""
from __future__ import annotations

from concurrent.futures import wait
from operator import index
from typing import Callable, Sequence

import numpy as np

from scheduler import cpu_pool
from engine.algebra.curves import Curve, curve_by_name
from engine.algebra.ec import G1_OPS, G2_OPS, G1Point, G2Point, GroupOps, group_sums

# Fewest (non-trivial) points for which splitting an MSM over the pool pays.
# `perf/cpu_msm.py --sweep` on the 2-core dev machine: sending 512 (2048) G1
# points to a worker and back costs ~4 (~8) ms, while the serial MSM costs
# ~0.23 ms per G1 point and ~0.5 ms per G2 point at these sizes; so halving
# the work pays from a few hundred points on idle cores.
PARALLEL_MIN_POINTS = {1: 512, 2: 256}


class MsmStopped(Exception):
    """A pooled MSM given up because its `stop` said so (its proof's job was cancelled)."""


def msm_g1(curve: Curve, points: Sequence[G1Point], scalars: Sequence[int], *, workers: int | None = None,
           stop: Callable[[], bool] | None = None) -> G1Point:
    """Σ scalars_i·points_i in G1 (affine tuples, None = infinity); scalars are reduced mod r.

    workers: processes for a large MSM (None: one per CPU; 0 or 1: this process only).
    stop: polled while the pool works on a large MSM; once true, MsmStopped is raised at once.
    """
    return _msm(G1_OPS(curve), 1, points, scalars, workers, stop)


def msm_g2(curve: Curve, points: Sequence[G2Point], scalars: Sequence[int], *, workers: int | None = None,
           stop: Callable[[], bool] | None = None) -> G2Point:
    """Σ scalars_i·points_i in G2; as msm_g1."""
    return _msm(G2_OPS(curve), 2, points, scalars, workers, stop)


def _msm(ops: GroupOps, group: int, points, scalars, workers, stop=None):
    if len(points) != len(scalars):
        raise ValueError(f"MSM: {len(points)} points but {len(scalars)} scalars")
    r = ops.curve.r
    ones: list = []
    rest_p: list = []
    rest_k: list[int] = []
    for P, k in zip(points, scalars):
        if P is None:
            continue
        k = index(k) % r  # a numpy integer is an int (np.int64 % r overflows); a float: TypeError
        if k == 1:
            ones.append(P)
        elif k:
            rest_p.append(P)
            rest_k.append(k)
    nproc = _resolve_workers(workers)
    results = None
    if nproc > 1 and len(rest_p) >= PARALLEL_MIN_POINTS[group]:
        results = _run_chunks(ops.curve, group, rest_p, rest_k, nproc, ops, ones, stop)
    else:
        results = [ops.sum(ones), pippenger(ops, rest_p, rest_k)]
    return ops.sum(results)


# ------------------------------------------------------------------ the serial algorithm
def window_bits(n: int, bits: int) -> int:
    """The c minimising (windows)·(bucket additions + bucket reduction) ≈ ⌈bits/c⌉·(n + 2^c)."""
    return min(range(2, 21), key=lambda c: (-(-bits // c)) * (n + (1 << c)))


def signed_digits(scalars: Sequence[int], c: int, bits: int) -> np.ndarray:
    """(windows, n) int64 digits d_w in [-2^(c-1), 2^(c-1)) with k = Σ d_w 2^(c·w)."""
    n = len(scalars)
    limbs = np.frombuffer(b"".join(k.to_bytes(40, "little") for k in scalars), dtype="<u8").reshape(n, 5)
    n_win = -(-bits // c)
    mask, half = np.uint64((1 << c) - 1), 1 << (c - 1)
    out = np.empty((n_win + 1, n), dtype=np.int64)
    carry = np.zeros(n, dtype=np.int64)
    for w in range(n_win):
        li, sh = divmod(w * c, 64)
        v = limbs[:, li] >> np.uint64(sh)
        if sh + c > 64:
            v = v | (limbs[:, li + 1] << np.uint64(64 - sh))
        v = (v & mask).astype(np.int64) + carry
        carry = (v >= half).astype(np.int64)
        out[w] = v - (carry << c)
    out[n_win] = carry
    return out if carry.any() else out[:n_win]


def pippenger(ops: GroupOps, points: list, scalars: list[int]):
    """Σ k_i P_i for finite points and scalars in (0, r); see the module docstring."""
    n = len(points)
    if n == 0:
        return None
    q = ops.q
    bits = ops.curve.r.bit_length()
    c = window_bits(n, bits)
    if n * bits * 1.2 <= (-(-bits // c)) * (n + (1 << c)):  # a handful of points: double-and-add
        acc = None
        for P, k in zip(points, scalars):
            acc = ops.jadd_affine(acc, ops.mul(ops.curve, P, k), q)
        return ops.to_affine(acc, q)
    digits = signed_digits(scalars, c, bits)
    half = 1 << (c - 1)
    win, idx = np.nonzero(digits)
    d = digits[win, idx]
    keys = win.astype(np.int64) * half + (np.abs(d) - 1)
    order = np.argsort(keys, kind="stable")
    keys, idx, neg = keys[order], idx[order], d[order] < 0
    base = ops.to_arrays(points)
    coords = ops.neg_where(tuple(col[idx] for col in base), neg)
    keys, coords = group_sums(ops, keys, coords)  # one point per non-empty bucket

    term_keys, term_coords = [], []
    size, log = half, c - 1
    while size > 1:  # halve: Σ_{b<2H}(b+1)B_b = Σ_{b<H}(b+1)(B_b+B_{b+H}) + H·Σ_{b<H} B_{b+H}
        h, log = size >> 1, log - 1
        w, b = np.divmod(keys, half)
        hi = b >= h
        term_keys.append(w[hi] * c + log)
        term_coords.append(tuple(col[hi] for col in coords))
        keys = w * half + np.where(hi, b - h, b)
        order = np.argsort(keys, kind="stable")
        keys, coords = group_sums(ops, keys[order], tuple(col[order] for col in coords))
        size = h
    term_keys.append((keys // half) * c)
    term_coords.append(coords)
    tk = np.concatenate(term_keys)
    tc = tuple(np.concatenate([t[j] for t in term_coords]) for j in range(ops.ncoords))
    order = np.argsort(tk, kind="stable")
    ek, ec = group_sums(ops, tk[order], tuple(col[order] for col in tc))
    if len(ek) == 0:
        return None
    table = dict(zip(ek.tolist(), ops.from_arrays(ec)))
    acc = None
    for e in range(int(ek[-1]), -1, -1):  # Horner over the powers of two
        acc = ops.jdouble(acc, q)
        T = table.get(e)
        if T is not None:
            acc = ops.jadd_affine(acc, T, q)
    return ops.to_affine(acc, q)


# ------------------------------------------------------------------ the process pool
_resolve_workers = cpu_pool.resolve_workers


def _get_pool(nproc: int) -> cpu_pool.CpuPool:
    return cpu_pool.get_pool(nproc)


def shutdown_pool() -> None:
    """Stop the shared CPU workers (scheduler.cpu_pool); the next large MSM restarts them."""
    cpu_pool.shutdown()


def warm_pool(workers: int | None = None) -> None:
    """Start the workers now (they take a moment to import), so the first large MSM does not wait."""
    nproc = _resolve_workers(workers)
    if nproc > 1:
        pool = _get_pool(nproc)
        list(pool.map(_noop, range(nproc)))


def _noop(_: int) -> None:
    return None


_STOP_POLL_S = 0.02


def _run_chunks(curve: Curve, group: int, points: list, scalars: list[int], nproc: int, ops: GroupOps, ones: list,
                stop: Callable[[], bool] | None = None):
    """Partial sums: one per point range from the workers, plus the ones summed here meanwhile.

    A worker that dies raises CpuWorkerCrashedError (an EngineError) here: this MSM fails, the pool
    replaces the worker.  The other ranges still queued are dropped, not computed for nothing; so
    are they when `stop` turns true (MsmStopped).
    """
    n = len(points)
    bounds = [n * i // nproc for i in range(nproc + 1)]
    pool = _get_pool(nproc)
    futures = [
        pool.submit(_chunk_task, curve.name, group, points[lo:hi], scalars[lo:hi])
        for lo, hi in zip(bounds, bounds[1:])
        if hi > lo
    ]
    try:
        ones_sum = ops.sum(ones)
        if stop is not None:
            pending = set(futures)
            while pending:
                _, pending = wait(pending, timeout=_STOP_POLL_S)
                if pending and stop():
                    raise MsmStopped("the MSM was stopped: its proof's job was cancelled")
        return [ones_sum] + [f.result() for f in futures]
    finally:
        for f in futures:
            f.cancel()  # after a failure: what no worker has taken yet is not computed


def _chunk_task(curve_name: str, group: int, points: list, scalars: list[int]):
    """Runs in a worker: the serial MSM of one range of points."""
    curve = curve_by_name(curve_name)
    return pippenger(G1_OPS(curve) if group == 1 else G2_OPS(curve), points, scalars)
