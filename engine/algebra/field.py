"""Field arithmetic on plain Python ints: Fq2 tuples, square roots and batch inversion.

Fq and Fr elements are ints in [0, p); Fq2 = Fq[u]/(u^2 + 1) elements are
tuples (c0, c1) meaning c0 + c1·u (both curves use u^2 = -1).  Functions take
the modulus as an argument so one implementation serves both curves; the
pairing builds faster closures of its own over the same formulas.

Batch inversion exists because an inversion costs tens of multiplications:
Montgomery's trick turns n inversions into one inversion and 3(n-1)
multiplications, which is what makes affine point addition cheap in batches
(engine.algebra.msm).  `batch_inverse_array` is the same idea as a product tree over
numpy object arrays, so the work runs in numpy's loops instead of bytecode.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

Fq2 = tuple[int, int]


# ---------------------------------------------------------------- prime fields
def inv(a: int, p: int) -> int:
    """a^-1 mod p; ZeroDivisionError for a ≡ 0 (never a silent 0)."""
    a %= p
    if a == 0:
        raise ZeroDivisionError("inverse of zero")
    return pow(a, -1, p)


def sqrt(a: int, p: int) -> int | None:
    """A square root of a mod p, or None when a is not a square (p ≡ 3 mod 4, as for both q)."""
    if p % 4 != 3:
        raise ValueError("sqrt: only primes p ≡ 3 (mod 4) are supported (both base fields are)")
    a %= p
    s = pow(a, (p + 1) >> 2, p)
    return s if s * s % p == a else None


def batch_inverse(values: Sequence[int], p: int) -> list[int]:
    """Inverses of many nonzero elements with one modular inversion (Montgomery's trick)."""
    n = len(values)
    if n == 0:
        return []
    prefix = [0] * n
    acc = 1
    for i, v in enumerate(values):
        prefix[i] = acc
        acc = acc * v % p
    if acc == 0:
        raise ZeroDivisionError("batch_inverse: an element is zero")
    acc_inv = pow(acc, -1, p)
    out = [0] * n
    for i in range(n - 1, -1, -1):
        out[i] = prefix[i] * acc_inv % p
        acc_inv = acc_inv * values[i] % p
    return out


def batch_inverse_array(values: np.ndarray, p: int) -> np.ndarray:
    """batch_inverse for a 1-D numpy object array of nonzero ints in [0, p), as a product tree.

    Level products go up (pairwise), one inversion at the root, and each
    child's inverse is its parent's inverse times its sibling on the way down:
    3n multiplications in log2(n) vectorised steps.
    """
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=object)
    levels = []
    cur = np.asarray(values, dtype=object)
    while len(cur) > 1:
        if len(cur) % 2:
            cur = np.concatenate((cur, np.ones(1, dtype=object)))
        levels.append(cur)
        cur = cur[0::2] * cur[1::2] % p
    root = int(cur[0]) % p
    if root == 0:
        raise ZeroDivisionError("batch_inverse_array: an element is zero")
    inv_cur = np.array([pow(root, -1, p)], dtype=object)
    for lvl in reversed(levels):
        inv_cur = inv_cur[: len(lvl) // 2]  # drop the inverse of this level's padding
        out = np.empty(len(lvl), dtype=object)
        out[0::2] = inv_cur * lvl[1::2] % p
        out[1::2] = inv_cur * lvl[0::2] % p
        inv_cur = out
    return inv_cur[:n]


# ---------------------------------------------------------------- Fq2 = Fq[u]/(u^2+1)
def fq2_add(a: Fq2, b: Fq2, q: int) -> Fq2:
    return ((a[0] + b[0]) % q, (a[1] + b[1]) % q)


def fq2_sub(a: Fq2, b: Fq2, q: int) -> Fq2:
    return ((a[0] - b[0]) % q, (a[1] - b[1]) % q)


def fq2_neg(a: Fq2, q: int) -> Fq2:
    return (-a[0] % q, -a[1] % q)


def fq2_conj(a: Fq2, q: int) -> Fq2:
    """The q-power Frobenius of Fq2: c0 - c1·u."""
    return (a[0], -a[1] % q)


def fq2_mul(a: Fq2, b: Fq2, q: int) -> Fq2:
    """Karatsuba: three base-field products instead of four."""
    a0, a1 = a
    b0, b1 = b
    t0 = a0 * b0
    t1 = a1 * b1
    return ((t0 - t1) % q, ((a0 + a1) * (b0 + b1) - t0 - t1) % q)


def fq2_sqr(a: Fq2, q: int) -> Fq2:
    """(a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: two products."""
    a0, a1 = a
    return ((a0 + a1) * (a0 - a1) % q, 2 * a0 * a1 % q)


def fq2_mul_fq(a: Fq2, s: int, q: int) -> Fq2:
    return (a[0] * s % q, a[1] * s % q)


def fq2_inv(a: Fq2, q: int) -> Fq2:
    """1/(a0 + a1 u) = (a0 - a1 u)/(a0^2 + a1^2)."""
    a0, a1 = a
    t = inv(a0 * a0 + a1 * a1, q)
    return (a0 * t % q, -a1 * t % q)


def fq2_pow(a: Fq2, e: int, q: int) -> Fq2:
    if e < 0:
        a, e = fq2_inv(a, q), -e
    result = (1, 0)
    while e:
        if e & 1:
            result = fq2_mul(result, a, q)
        a = fq2_sqr(a, q)
        e >>= 1
    return result


def fq2_sqrt(a: Fq2, q: int) -> Fq2 | None:
    """A square root in Fq2 for q ≡ 3 (mod 4), or None when a is not a square.

    Uses the norm: if a = x^2 then N(a) = a0^2 + a1^2 = N(x)^2, so with
    n = sqrt(N(a)) the root has x0^2 = (a0 ± n)/2 and x1 = a1/(2 x0).
    """
    a0, a1 = a[0] % q, a[1] % q
    if a1 == 0:
        s = sqrt(a0, q)
        if s is not None:
            return (s, 0)
        s = sqrt(-a0, q)  # a0 = -(s^2) = (s u)^2
        return (0, s)
    n = sqrt(a0 * a0 + a1 * a1, q)
    if n is None:
        return None
    half = (q + 1) >> 1
    for cand in ((a0 + n) * half % q, (a0 - n) * half % q):
        x0 = sqrt(cand, q)
        if x0 is not None and x0 != 0:
            x1 = a1 * inv(2 * x0, q) % q
            if fq2_sqr((x0, x1), q) == (a0, a1):
                return (x0, x1)
    return None


def fq2_batch_inverse(values: Sequence[Fq2], q: int) -> list[Fq2]:
    """Inverses of many nonzero Fq2 elements through one batch inversion of their norms."""
    norms = batch_inverse([(a0 * a0 + a1 * a1) % q for a0, a1 in values], q)
    return [(a0 * t % q, -a1 * t % q) for (a0, a1), t in zip(values, norms)]


def geometric(first: int, ratio: int, count: int, p: int) -> np.ndarray:
    """[first·ratio^i for i < count] mod p as an object array, doubling the filled prefix each
    step (vectorised: O(log count) numpy passes instead of a Python loop per element)."""
    out = np.empty(count, dtype=object)
    if count == 0:
        return out
    out[0] = first % p
    filled, step = 1, ratio % p
    while filled < count:
        take = min(filled, count - filled)
        out[filled : filled + take] = out[:take] * step % p
        filled += take
        step = step * step % p
    return out
