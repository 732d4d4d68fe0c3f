"""Number-theoretic transform over Fr, natural order in and out (spec §5.2).

forward:  out_i = Σ_j x_j·g^j·ω^(ij)    (g = curve.coset_generator(k) when coset, else 1)
inverse:  the exact inverse of forward with the same coset flag.

ω = curve.root_of_unity(k) for n = 2^k.  The transform is the iterative
radix-2 decimation-in-time algorithm: one bit-reversal gather, then log2(n)
stages whose butterflies run as whole-array operations on numpy object arrays
of Python ints (no interpreter loop per element).  Inside the stages only the
twiddle products are reduced; sums and differences stay unreduced (they grow
by at most p per stage) and one reduction at the end brings them back.
"""
from __future__ import annotations

import operator
from collections import OrderedDict
from threading import Lock
from typing import Sequence

import numpy as np

from engine.algebra.curves import Curve
from engine.algebra.field import geometric

_CACHE_SIZE = 8
_cache: OrderedDict = OrderedDict()
_cache_lock = Lock()


def _powers(base: int, count: int, p: int) -> np.ndarray:
    """[1, base, base^2, ...] (count values) as an object array."""
    return geometric(1, base, count, p)


def _cached(key, make):
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    value = make()
    with _cache_lock:
        _cache[key] = value
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return value


def _bit_reverse(k: int) -> np.ndarray:
    idx = np.arange(1 << k, dtype=np.int64)
    rev = np.zeros_like(idx)
    for b in range(k):
        rev |= ((idx >> b) & 1) << (k - 1 - b)
    return rev


def _plan(curve: Curve, k: int, inverse: bool, coset: bool):
    """(bit-reversal permutation, twiddles ω^j for j < n/2, post-scale or None, pre-scale or None)."""

    def make():
        r, n = curve.r, 1 << k
        w = curve.root_of_unity(k)
        if inverse:
            w = pow(w, -1, r)
        tw = _powers(w, n // 2, r)
        pre = post = None
        if coset:
            g = curve.coset_generator(k)
            if inverse:  # x_j = g^-j · n^-1 · Σ_i e_i ω^-ij
                post = _powers(pow(g, -1, r), n, r) * pow(n, -1, r) % r
            else:
                pre = _powers(g, n, r)
        elif inverse:
            post = pow(n, -1, r)
        return _bit_reverse(k), tw, post, pre

    return _cached((curve.name, k, inverse, coset), make)


def ntt(curve: Curve, values: Sequence[int], inverse: bool = False, coset: bool = False) -> list[int]:
    """NTT (or inverse) of a power-of-two number of Fr values, natural order in and out."""
    n = len(values)
    k = n.bit_length() - 1
    if n == 0 or n != 1 << k:
        raise ValueError(f"NTT: length {n} is not a power of two")
    if k > curve.two_adicity:
        raise ValueError(f"NTT: length 2^{k} exceeds {curve.name}'s largest domain 2^{curve.two_adicity}")
    r = curve.r
    rev, tw, post, pre = _plan(curve, k, inverse, coset)
    a = np.empty(n, dtype=object)
    # Python ints only: numpy scalars would run the butterflies in wrapping 64-bit arithmetic, floats as floats
    a[:] = [operator.index(v) for v in (values.tolist() if isinstance(values, np.ndarray) else values)]
    if pre is not None:
        a = a * pre % r
    a = a[rev]
    m = 1
    while m < n:
        blocks = a.reshape(n // (2 * m), 2, m)
        top = blocks[:, 0, :]
        t = blocks[:, 1, :] if m == 1 else blocks[:, 1, :] * tw[:: n // (2 * m)] % r  # ω^0 = 1
        a = np.stack((top + t, top - t), axis=1).reshape(n)
        m *= 2
    a = a * post % r if post is not None else a % r
    return a.tolist()
