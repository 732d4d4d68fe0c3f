"""The heavy work of a development setup behind one small interface, so a GPU can take it.

`SetupOps` has two group operations, fixed-base scalar multiplications of the
G1 and G2 generators (every point of a Groth16 key is k·G for a known k), and
one field operation, `key_scalars` (those k), which has a CPU implementation
here that a GPU class may replace.  Arrays at the seam follow
docs/internals.md: scalars (n, 4) uint64 plain, points Montgomery affine
uint64, all-zero = infinity, so the results drop straight into a zkey.

`CpuSetupOps` does the group work on Python ints: per window of w bits a table
of d·2^(w·i)·G for every digit d, then each scalar is the sum of one table
point per window.  Every addition of a round shares one inversion (batched
affine, Montgomery's trick) and, for many scalars, chunks run in a process
pool that inherits the tables by fork.

No addition is exceptional (P = ±Q), so the incomplete affine formula is
enough: for a scalar k < r, the partial sum after windows 0..i-1 is k'·G with
0 < k' < 2^(w·i) and the next table point is d·2^(w·i)·G with
k' + d·2^(w·i) <= k < r.  While building a table of B = 2^(w·i)·G, d·B
meets 2^j·B with 0 < d < 2^j, and (2^j ± d)·2^(w·i) is never a multiple of
the odd prime r.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from engine.algebra.curves import Curve
from engine.algebra.ec import G1_OPS, G2_OPS, GroupOps, g1_add, g2_add
from engine.algebra.limbs import from_ints
from engine.groth16.setup_scalars import KeyScalars, key_scalars
from scheduler.setup_pool import default_workers, fork_map

MAX_WINDOW = 16  # G1 table of 16 windows × 2^16 points: ~150 MB of Python ints
MAX_WORKERS_PER_CPU = 4  # more processes only slow CPU-bound work; each is a fork, all started at once


@dataclass(frozen=True)
class ToxicWaste:
    """The secrets of a key.  Whoever knows them can forge proofs for every circuit of that key."""

    tau: int
    alpha: int
    beta: int
    delta: int


class SetupOps(ABC):
    """Where the heavy stages of `engine.groth16.setup` run."""

    name = "abstract"
    workers: int | None = None  # processes for the CPU field work; None: every core
    memory_factor = 1.0  # host memory at the peak, at least, in units of the key's bytes (setup.key_bytes)

    @abstractmethod
    def g1_fixed_base(self, curve: Curve, scalars: np.ndarray) -> np.ndarray:
        """k_i·G1 for scalars (n, 4) plain uint64 < r -> (n, 2, Lq) Montgomery affine; k = 0 -> zeros."""

    @abstractmethod
    def g2_fixed_base(self, curve: Curve, scalars: np.ndarray) -> np.ndarray:
        """k_i·G2 for scalars (n, 4) plain uint64 < r -> (n, 2, 2, Lq) Montgomery affine; k = 0 -> zeros."""

    def key_scalars(self, curve: Curve, r1cs, log_domain: int, waste: ToxicWaste, progress=None) -> KeyScalars:
        """The scalars of every key point from the circuit and the secrets (CPU: engine.groth16.setup_scalars).

        A subclass may compute them elsewhere (a GPU: NTTs for the Lagrange values).
        """
        return key_scalars(curve, r1cs, log_domain, waste, progress, workers=self.workers or default_workers())

    def close(self) -> None:
        """Release pools or devices; idempotent."""


# =============================================================== CPU fixed-base multiplication
def choose_window(n: int, bits: int) -> int:
    """The window w that minimises table building plus per-scalar additions, (n + 2^w)·ceil(bits/w)."""
    best_w, best_cost = 1, None
    for w in range(1, MAX_WINDOW + 1):
        cost = (n + (1 << w)) * math.ceil(bits / w)
        if best_cost is None or cost < best_cost:
            best_w, best_cost = w, cost
    return best_w


def scalar_digits(scalars: np.ndarray, window: int, n_windows: int) -> np.ndarray:
    """(n, 4) uint64 scalars -> (n, n_windows) int64 base-2^window digits, least significant first."""
    limbs = np.ascontiguousarray(scalars, dtype=np.uint64)
    n_limbs = limbs.shape[1]
    mask = np.uint64((1 << window) - 1)
    out = np.zeros((limbs.shape[0], n_windows), dtype=np.int64)
    for i in range(n_windows):
        limb, off = divmod(window * i, 64)
        if limb >= n_limbs:
            break
        val = limbs[:, limb] >> np.uint64(off)
        if off + window > 64 and limb + 1 < n_limbs:
            val |= limbs[:, limb + 1] << np.uint64(64 - off)
        out[:, i] = (val & mask).astype(np.int64)
    return out


@dataclass
class _Table:
    """table[c][i, d] = coordinate c of d·2^(w·i)·G (column 0 unused); coordinates as object arrays."""

    window: int
    n_windows: int
    coords: tuple[np.ndarray, ...]


def _doubling_chain(curve: Curve, group: str, count: int) -> list:
    """[G, 2G, 4G, ..., 2^(count-1) G] as affine points."""
    add = g1_add if group == "g1" else g2_add
    p = curve.g1_gen if group == "g1" else curve.g2_gen
    out = [p]
    for _ in range(count - 1):
        p = add(curve, p, p)
        out.append(p)
    return out


def build_table(curve: Curve, group: str, window: int, n_windows: int, size: int) -> _Table:
    """Tables of `size` (a power of two <= 2^window) entries per window, one batched level per bit."""
    ops: GroupOps = G1_OPS(curve) if group == "g1" else G2_OPS(curve)
    chain = _doubling_chain(curve, group, window * n_windows)
    coords = tuple(np.zeros((n_windows, size), dtype=object) for _ in range(ops.ncoords))
    level = 1
    j = 0
    while level < size:
        # entries [level, 2·level) = entries [0, level) + level·base; entry `level` is the chain point
        base = ops.to_arrays([chain[window * i + j] for i in range(n_windows)])
        for c, b in zip(coords, base):
            c[:, level] = b
        if level > 1:
            rows = np.repeat(np.arange(n_windows), level - 1)
            cols = np.tile(np.arange(1, level), n_windows)
            p = tuple(c[rows, cols] for c in coords)
            q = tuple(b[rows] for b in base)
            sums, inf = ops.batch_add(p, q)
            assert not inf.any(), "fixed-base table: unexpected infinity"
            for c, s in zip(coords, sums):
                c[rows, cols + level] = s
        level *= 2
        j += 1
    return _Table(window, n_windows, coords)


def _to_mont_rows(curve: Curve, coords: tuple[np.ndarray, ...], present: np.ndarray) -> np.ndarray:
    """Affine coordinates (junk where not present) -> (n, ncoords, Lq) Montgomery uint64, zeros for infinity."""
    q, rq, lq = curve.q, curve.rq, curve.q_limbs64
    n = len(present)
    out = np.zeros((n, len(coords), lq), dtype=np.uint64)
    idx = np.flatnonzero(present)
    if idx.size:
        cols = [from_ints((c[idx] * rq % q).tolist(), lq) for c in coords]
        out[idx] = np.stack(cols, axis=1)
    return out


def fixed_base_chunk(curve: Curve, group: str, table: _Table, scalars: np.ndarray) -> np.ndarray:
    """k·G for a chunk of scalars with a prepared table -> Montgomery rows (n, ncoords, Lq)."""
    ops: GroupOps = G1_OPS(curve) if group == "g1" else G2_OPS(curve)
    n = scalars.shape[0]
    digits = scalar_digits(scalars, table.window, table.n_windows)
    acc = tuple(np.zeros(n, dtype=object) for _ in range(ops.ncoords))
    have = np.zeros(n, dtype=bool)
    for i in range(table.n_windows):
        d = digits[:, i]
        nz = d != 0
        if not nz.any():
            continue
        rows = [c[i] for c in table.coords]
        first = np.flatnonzero(nz & ~have)
        for a, t in zip(acc, rows):
            a[first] = t[d[first]]
        more = np.flatnonzero(nz & have)
        if more.size:
            dm = d[more]
            sums, inf = ops.batch_add(tuple(a[more] for a in acc), tuple(t[dm] for t in rows))
            assert not inf.any(), "fixed-base: unexpected infinity"
            for a, s in zip(acc, sums):
                a[more] = s
        have |= nz
    out = _to_mont_rows(curve, acc, have)
    return out.reshape(n, 2, 2, -1) if group == "g2" else out


def _fixed_base_worker(st: dict, start: int, stop: int) -> np.ndarray:
    return fixed_base_chunk(st["curve"], st["group"], st["table"], st["scalars"][start:stop])


def _check_scalars(curve: Curve, scalars: np.ndarray) -> np.ndarray:
    s = np.ascontiguousarray(scalars, dtype=np.uint64)
    if s.ndim != 2 or s.shape[1] != 4:
        raise ValueError(f"scalars must be (n, 4) uint64, got shape {s.shape}")
    from engine.formats.binfile import first_row_ge  # noqa: PLC0415

    bad = first_row_ge(s, curve.r)
    if bad >= 0:
        raise ValueError(f"scalar {bad} is not reduced modulo r")
    return s


class CpuSetupOps(SetupOps):
    """Fixed-base multiplications on Python ints: windowed tables, batched affine additions, a process pool."""

    name = "cpu"
    memory_factor = 3.0  # Python ints for scalars and points: measured 4.7x on a 2^17 domain

    def __init__(self, workers: int | None = None, parallel_min: int = 4096, window: int | None = None):
        cap = MAX_WORKERS_PER_CPU * default_workers()  # `workers=10**5` forked 10**5 processes
        self.workers = default_workers() if workers is None else max(1, min(workers, cap))
        self.parallel_min = parallel_min  # fewer scalars than this run in this process
        self.window = window  # None: chosen per call by choose_window

    def g1_fixed_base(self, curve: Curve, scalars: np.ndarray) -> np.ndarray:
        return self._fixed_base(curve, "g1", scalars)

    def g2_fixed_base(self, curve: Curve, scalars: np.ndarray) -> np.ndarray:
        return self._fixed_base(curve, "g2", scalars)

    def _fixed_base(self, curve: Curve, group: str, scalars: np.ndarray) -> np.ndarray:
        s = _check_scalars(curve, scalars)
        n = s.shape[0]
        lq = curve.q_limbs64
        shape = (n, 2, lq) if group == "g1" else (n, 2, 2, lq)
        if n == 0:
            return np.zeros(shape, dtype=np.uint64)
        bits = curve.r.bit_length()
        w = self.window or choose_window(n, bits)
        n_windows = math.ceil(bits / w)
        max_digit = max(int(scalar_digits(s[i : i + 65536], w, n_windows).max(initial=0))
                        for i in range(0, n, 65536))
        size = 1 << max(1, max_digit.bit_length())  # entries 0..max_digit, a power of two
        table = build_table(curve, group, w, n_windows, size)
        state = {"curve": curve, "group": group, "table": table, "scalars": s}
        parts = fork_map(_fixed_base_worker, n, state, workers=self.workers, min_parallel=self.parallel_min)
        return np.concatenate(parts, axis=0)
