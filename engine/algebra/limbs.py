"""Conversions between numpy limb buffers and Python ints (plain and Montgomery).

The buffers are the engine's interchange format (docs/internals.md): uint64
little-endian limbs, one row per element.  These helpers are the only place
that turns them into Python ints and back, in batches through `bytes`, so no
caller walks limbs by hand.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from engine.algebra.curves import Curve


def to_ints(arr: np.ndarray) -> list[int]:
    """Rows of little-endian uint64 limbs -> list of ints (no reduction, no Montgomery)."""
    a = np.ascontiguousarray(arr, dtype="<u8")
    if a.ndim == 1:
        a = a.reshape(1, -1) if a.size else a.reshape(0, 0)  # one element's limbs; empty: no element
    a = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])  # not -1: numpy cannot infer it when the size is 0
    width = a.shape[1] * 8
    if width == 0:  # rows of no limbs (a length-0 axis): each row is 0, and range() below needs a step
        return [0] * a.shape[0]
    raw = a.tobytes()
    frm = int.from_bytes
    return [frm(raw[i : i + width], "little") for i in range(0, len(raw), width)]


def from_ints(values: Iterable[int], n_limbs: int) -> np.ndarray:
    """Ints in [0, 2^(64*n_limbs)) -> (n, n_limbs) uint64 array."""
    width = 8 * n_limbs
    raw = b"".join(v.to_bytes(width, "little") for v in values)
    return np.frombuffer(raw, dtype="<u8").reshape(-1, n_limbs).copy()


def fr_to_ints(curve: Curve, arr: np.ndarray) -> list[int]:
    """Plain Fr buffer -> ints, checking each is < r (a value >= r is a caller's bug or a bad file)."""
    vals = to_ints(arr)
    r = curve.r
    for i, v in enumerate(vals):
        if v >= r:
            raise ValueError(f"element {i} is not reduced modulo r ({v} >= r)")
    return vals


def fr_from_ints(values: Iterable[int]) -> np.ndarray:
    return from_ints(values, 4)


def fq_from_mont(curve: Curve, values: Sequence[int]) -> list[int]:
    inv, q = curve.rq_inv, curve.q
    return [v * inv % q for v in values]


def fq_to_mont(curve: Curve, values: Iterable[int]) -> list[int]:
    rq, q = curve.rq, curve.q
    return [v * rq % q for v in values]


def g1_from_mont(curve: Curve, arr: np.ndarray) -> list:
    """(n, 2, Lq) Montgomery affine -> list of (x, y) plain tuples; all-zero rows -> None."""
    a = np.asarray(arr).reshape(-1, 2 * curve.q_limbs64)
    raw = to_ints(a.reshape(-1, curve.q_limbs64))
    xs, ys = fq_from_mont(curve, raw[0::2]), fq_from_mont(curve, raw[1::2])
    return [None if (x == 0 and y == 0) else (x, y) for x, y in zip(xs, ys)]


def g2_from_mont(curve: Curve, arr: np.ndarray) -> list:
    """(n, 2, 2, Lq) Montgomery affine -> list of ((x0, x1), (y0, y1)); all-zero rows -> None."""
    a = np.asarray(arr).reshape(-1, 4 * curve.q_limbs64)
    raw = fq_from_mont(curve, to_ints(a.reshape(-1, curve.q_limbs64)))
    out = []
    for i in range(0, len(raw), 4):
        x0, x1, y0, y1 = raw[i : i + 4]
        out.append(None if not (x0 or x1 or y0 or y1) else ((x0, x1), (y0, y1)))
    return out


def g1_to_mont(curve: Curve, points: Sequence) -> np.ndarray:
    """List of affine G1 points (None = infinity) -> (n, 2, Lq) Montgomery uint64."""
    flat: list[int] = []
    for p in points:
        flat.extend((0, 0) if p is None else p)
    return from_ints(fq_to_mont(curve, flat), curve.q_limbs64).reshape(-1, 2, curve.q_limbs64)


def g2_to_mont(curve: Curve, points: Sequence) -> np.ndarray:
    """List of affine G2 points (None = infinity) -> (n, 2, 2, Lq) Montgomery uint64."""
    flat: list[int] = []
    for p in points:
        flat.extend((0, 0, 0, 0) if p is None else (*p[0], *p[1]))
    return from_ints(fq_to_mont(curve, flat), curve.q_limbs64).reshape(-1, 2, 2, curve.q_limbs64)
