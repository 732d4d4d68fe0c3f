"""Turning the kernels' XYZZ results (Montgomery limbs) into affine Python-int points.

x = X/ZZ and y = Y/ZZZ: the Montgomery factor R cancels in each quotient, so
the raw limbs are divided directly.  Used a few times per proof, never per point.
"""
from __future__ import annotations

import numpy as np

from engine.algebra.curves import Curve


def _ints(curve: Curve, raw: np.ndarray, count: int) -> list[int]:
    b = bytes(np.ascontiguousarray(raw, dtype=np.uint8)[: count * curve.n8q])
    w = curve.n8q
    return [int.from_bytes(b[i * w:(i + 1) * w], "little") for i in range(count)]


def decode_xyzz_g1(curve: Curve, raw: np.ndarray):
    x, y, zz, zzz = _ints(curve, raw, 4)
    q = curve.q
    if zz % q == 0:
        return None
    return x * pow(zz, -1, q) % q, y * pow(zzz, -1, q) % q


def _fq2_div(curve: Curve, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    q = curve.q
    norm_inv = pow((b[0] * b[0] + b[1] * b[1]) % q, -1, q)
    inv = (b[0] * norm_inv % q, (-b[1]) * norm_inv % q)
    return (a[0] * inv[0] - a[1] * inv[1]) % q, (a[0] * inv[1] + a[1] * inv[0]) % q


def decode_xyzz_g2(curve: Curve, raw: np.ndarray):
    v = _ints(curve, raw, 8)
    x, y, zz, zzz = (v[0], v[1]), (v[2], v[3]), (v[4], v[5]), (v[6], v[7])
    q = curve.q
    if zz[0] % q == 0 and zz[1] % q == 0:
        return None
    return _fq2_div(curve, x, zz), _fq2_div(curve, y, zzz)

