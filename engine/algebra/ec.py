"""G1 and G2 arithmetic on plain Python ints (affine tuples, None = the point at infinity).

Public functions take and return affine points:
G1 ``(x, y)``, G2 ``((x0, x1), (y0, y1))``.  Inside, single operations run in
Jacobian coordinates (X/Z^2, Y/Z^3), so a scalar multiplication costs one
inversion at the end instead of one per step.  Both curves have a = 0
(y^2 = x^3 + b), which the doubling formulas use.

Many independent additions go faster in affine form when they share one
inversion (Montgomery's trick): `GroupOps.batch_add` adds two arrays of points
elementwise with numpy object arrays, and `group_sums` sums points that share
a key with rounds of such batches.  The MSM (engine.algebra.msm) and `g1_sum`/`g2_sum`
are built on those two.
"""
from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

from engine.algebra.curves import Curve
from engine.algebra.field import batch_inverse_array, fq2_inv, fq2_mul, fq2_sqr, inv

G1Point = tuple[int, int] | None
G2Point = tuple[tuple[int, int], tuple[int, int]] | None


def _naf(k: int) -> list[int]:
    """Non-adjacent form of k > 0, least significant digit first (digits -1, 0, 1)."""
    out = []
    while k:
        if k & 1:
            d = 2 - (k & 3)
            k -= d
        else:
            d = 0
        out.append(d)
        k >>= 1
    return out


# =============================================================== G1 (over Fq)
def _g1_jdouble(P, q):
    """dbl-2009-l (a = 0).  P is (X, Y, Z) or None."""
    if P is None:
        return None
    X, Y, Z = P
    if Y == 0:
        return None
    A = X * X % q
    B = Y * Y % q
    C = B * B % q
    D = 2 * ((X + B) * (X + B) - A - C) % q
    E = 3 * A % q
    X3 = (E * E - 2 * D) % q
    Y3 = (E * (D - X3) - 8 * C) % q
    Z3 = 2 * Y * Z % q
    return (X3, Y3, Z3)


def _g1_jadd_affine(P, Q, q):
    """madd-2007-bl: Jacobian P plus affine Q, complete (handles P == ±Q and infinity)."""
    if Q is None:
        return P
    if P is None:
        return (Q[0], Q[1], 1)
    X1, Y1, Z1 = P
    x2, y2 = Q
    Z1Z1 = Z1 * Z1 % q
    U2 = x2 * Z1Z1 % q
    S2 = y2 * Z1 * Z1Z1 % q
    H = (U2 - X1) % q
    rr = 2 * (S2 - Y1) % q
    if H == 0:
        return _g1_jdouble(P, q) if rr == 0 else None
    HH = H * H % q
    I = 4 * HH % q
    J = H * I % q
    V = X1 * I % q
    X3 = (rr * rr - J - 2 * V) % q
    Y3 = (rr * (V - X3) - 2 * Y1 * J) % q
    Z3 = ((Z1 + H) * (Z1 + H) - Z1Z1 - HH) % q
    return (X3, Y3, Z3)


def _g1_jadd(P, Q, q):
    """add-2007-bl: Jacobian plus Jacobian, complete."""
    if P is None:
        return Q
    if Q is None:
        return P
    X1, Y1, Z1 = P
    X2, Y2, Z2 = Q
    Z1Z1 = Z1 * Z1 % q
    Z2Z2 = Z2 * Z2 % q
    U1 = X1 * Z2Z2 % q
    U2 = X2 * Z1Z1 % q
    S1 = Y1 * Z2 * Z2Z2 % q
    S2 = Y2 * Z1 * Z1Z1 % q
    H = (U2 - U1) % q
    rr = 2 * (S2 - S1) % q
    if H == 0:
        return _g1_jdouble(P, q) if rr == 0 else None
    I = 4 * H * H % q
    J = H * I % q
    V = U1 * I % q
    X3 = (rr * rr - J - 2 * V) % q
    Y3 = (rr * (V - X3) - 2 * S1 * J) % q
    Z3 = ((Z1 + Z2) * (Z1 + Z2) - Z1Z1 - Z2Z2) * H % q
    return (X3, Y3, Z3)


def _g1_to_affine(P, q) -> G1Point:
    if P is None:
        return None
    X, Y, Z = P
    zi = inv(Z, q)
    zi2 = zi * zi % q
    return (X * zi2 % q, Y * zi2 * zi % q)


def g1_is_on_curve(curve: Curve, P: G1Point) -> bool:
    """y^2 = x^3 + b with coordinates in [0, q); infinity counts as on the curve."""
    if P is None:
        return True
    q = curve.q
    x, y = P
    if not (0 <= x < q and 0 <= y < q):
        return False
    return (y * y - x * x * x - curve.g1_b) % q == 0


def g1_neg(curve: Curve, P: G1Point) -> G1Point:
    if P is None:
        return None
    return (P[0], -P[1] % curve.q)


def g1_add(curve: Curve, P: G1Point, Q: G1Point) -> G1Point:
    if P is None:
        return Q
    if Q is None:
        return P
    q = curve.q
    return _g1_to_affine(_g1_jadd_affine((P[0], P[1], 1), Q, q), q)


def _naf_mul(P, Pn, k: int, one, jdouble, jadd_affine, to_affine, q):
    """k·P by signed-binary (NAF) double-and-add in Jacobian form; Pn = -P, `one` the field's 1."""
    digits = _naf(k)
    start = P if digits[-1] == 1 else Pn
    acc = (start[0], start[1], one)
    for d in reversed(digits[:-1]):
        acc = jdouble(acc, q)
        if d == 1:
            acc = jadd_affine(acc, P, q)
        elif d == -1:
            acc = jadd_affine(acc, Pn, q)
    return to_affine(acc, q)


def g1_mul(curve: Curve, P: G1Point, k: int) -> G1Point:
    """k·P for any int k (reduced mod r first).  operator.index: a numpy integer is an int too (k %= r
    on an np.int64 overflows), a float is refused (TypeError), never rounded."""
    k = operator.index(k) % curve.r
    if P is None or k == 0:
        return None
    q = curve.q
    return _naf_mul(P, (P[0], -P[1] % q), k, 1, _g1_jdouble, _g1_jadd_affine, _g1_to_affine, q)


def g1_mul2(curve: Curve, P: G1Point, a: int, Q: G1Point, b: int) -> G1Point:
    """a·P + b·Q in one pass (Shamir's trick on the NAF digits): one chain of doublings for
    both scalars, adding one of the eight precomputed ±P, ±Q, ±P±Q where a digit is not 0."""
    r, q = curve.r, curve.q
    a, b = operator.index(a) % r, operator.index(b) % r
    if P is None or a == 0:
        return g1_mul(curve, Q, b)
    if Q is None or b == 0:
        return g1_mul(curve, P, a)
    da, db = _naf(a), _naf(b)
    width = max(len(da), len(db))
    da += [0] * (width - len(da))
    db += [0] * (width - len(db))
    nP, nQ = g1_neg(curve, P), g1_neg(curve, Q)
    S, D = g1_add(curve, P, Q), g1_add(curve, P, nQ)
    table = {(1, 0): P, (-1, 0): nP, (0, 1): Q, (0, -1): nQ,
             (1, 1): S, (-1, -1): g1_neg(curve, S), (1, -1): D, (-1, 1): g1_neg(curve, D)}
    acc = None
    for x, y in zip(reversed(da), reversed(db)):
        acc = _g1_jdouble(acc, q)
        if x or y:
            acc = _g1_jadd_affine(acc, table[x, y], q)
    return _g1_to_affine(acc, q)


def g1_sum(curve: Curve, points: Iterable[G1Point]) -> G1Point:
    """Sum of many G1 points with batched affine additions (one inversion per round)."""
    return G1_OPS(curve).sum(points)


# =============================================================== G2 (over Fq2)
def _f2add(a, b, q):
    return ((a[0] + b[0]) % q, (a[1] + b[1]) % q)


def _f2sub(a, b, q):
    return ((a[0] - b[0]) % q, (a[1] - b[1]) % q)


def _f2small(a, k, q):
    return (a[0] * k % q, a[1] * k % q)


def _g2_jdouble(P, q):
    if P is None:
        return None
    X, Y, Z = P
    if Y == (0, 0):
        return None
    A = fq2_sqr(X, q)
    B = fq2_sqr(Y, q)
    C = fq2_sqr(B, q)
    D = _f2small(_f2sub(_f2sub(fq2_sqr(_f2add(X, B, q), q), A, q), C, q), 2, q)
    E = _f2small(A, 3, q)
    X3 = _f2sub(fq2_sqr(E, q), _f2small(D, 2, q), q)
    Y3 = _f2sub(fq2_mul(E, _f2sub(D, X3, q), q), _f2small(C, 8, q), q)
    Z3 = _f2small(fq2_mul(Y, Z, q), 2, q)
    return (X3, Y3, Z3)


def _g2_jadd_affine(P, Q, q):
    if Q is None:
        return P
    if P is None:
        return (Q[0], Q[1], (1, 0))
    X1, Y1, Z1 = P
    x2, y2 = Q
    Z1Z1 = fq2_sqr(Z1, q)
    U2 = fq2_mul(x2, Z1Z1, q)
    S2 = fq2_mul(y2, fq2_mul(Z1, Z1Z1, q), q)
    H = _f2sub(U2, X1, q)
    rr = _f2small(_f2sub(S2, Y1, q), 2, q)
    if H == (0, 0):
        return _g2_jdouble(P, q) if rr == (0, 0) else None
    HH = fq2_sqr(H, q)
    I = _f2small(HH, 4, q)
    J = fq2_mul(H, I, q)
    V = fq2_mul(X1, I, q)
    X3 = _f2sub(_f2sub(fq2_sqr(rr, q), J, q), _f2small(V, 2, q), q)
    Y3 = _f2sub(fq2_mul(rr, _f2sub(V, X3, q), q), _f2small(fq2_mul(Y1, J, q), 2, q), q)
    Z3 = _f2sub(_f2sub(fq2_sqr(_f2add(Z1, H, q), q), Z1Z1, q), HH, q)
    return (X3, Y3, Z3)


def _g2_jadd(P, Q, q):
    if P is None:
        return Q
    if Q is None:
        return P
    X1, Y1, Z1 = P
    X2, Y2, Z2 = Q
    Z1Z1 = fq2_sqr(Z1, q)
    Z2Z2 = fq2_sqr(Z2, q)
    U1 = fq2_mul(X1, Z2Z2, q)
    U2 = fq2_mul(X2, Z1Z1, q)
    S1 = fq2_mul(Y1, fq2_mul(Z2, Z2Z2, q), q)
    S2 = fq2_mul(Y2, fq2_mul(Z1, Z1Z1, q), q)
    H = _f2sub(U2, U1, q)
    rr = _f2small(_f2sub(S2, S1, q), 2, q)
    if H == (0, 0):
        return _g2_jdouble(P, q) if rr == (0, 0) else None
    I = fq2_sqr(_f2small(H, 2, q), q)
    J = fq2_mul(H, I, q)
    V = fq2_mul(U1, I, q)
    X3 = _f2sub(_f2sub(fq2_sqr(rr, q), J, q), _f2small(V, 2, q), q)
    Y3 = _f2sub(fq2_mul(rr, _f2sub(V, X3, q), q), _f2small(fq2_mul(S1, J, q), 2, q), q)
    Z3 = fq2_mul(_f2sub(_f2sub(fq2_sqr(_f2add(Z1, Z2, q), q), Z1Z1, q), Z2Z2, q), H, q)
    return (X3, Y3, Z3)


def _g2_to_affine(P, q) -> G2Point:
    if P is None:
        return None
    X, Y, Z = P
    zi = fq2_inv(Z, q)
    zi2 = fq2_sqr(zi, q)
    return (fq2_mul(X, zi2, q), fq2_mul(Y, fq2_mul(zi2, zi, q), q))


def g2_is_on_curve(curve: Curve, P: G2Point) -> bool:
    """y^2 = x^3 + b2 over Fq2 with every coordinate in [0, q); infinity counts as on the curve."""
    if P is None:
        return True
    q = curve.q
    x, y = P
    if not all(0 <= c < q for c in (*x, *y)):
        return False
    lhs = fq2_sqr(y, q)
    rhs = _f2add(fq2_mul(fq2_sqr(x, q), x, q), curve.g2_b, q)
    return lhs == rhs


def g2_neg(curve: Curve, P: G2Point) -> G2Point:
    if P is None:
        return None
    q = curve.q
    return (P[0], (-P[1][0] % q, -P[1][1] % q))


def g2_add(curve: Curve, P: G2Point, Q: G2Point) -> G2Point:
    if P is None:
        return Q
    if Q is None:
        return P
    q = curve.q
    return _g2_to_affine(_g2_jadd_affine((P[0], P[1], (1, 0)), Q, q), q)


def g2_mul(curve: Curve, P: G2Point, k: int) -> G2Point:
    """k·P for any int k (reduced mod r first; as g1_mul)."""
    k = operator.index(k) % curve.r
    if P is None or k == 0:
        return None
    return _naf_mul(P, g2_neg(curve, P), k, (1, 0), _g2_jdouble, _g2_jadd_affine, _g2_to_affine, curve.q)


def g2_sum(curve: Curve, points: Iterable[G2Point]) -> G2Point:
    """Sum of many G2 points with batched affine additions."""
    return G2_OPS(curve).sum(points)


# =============================================================== batched affine arithmetic
class GroupOps(ABC):
    """What the batched algorithms need from a group: array layout, batch add, Jacobian steps.

    A batch of affine points is a tuple of 1-D numpy object arrays of coordinates
    (G1: x, y; G2: x0, x1, y0, y1), none of them the point at infinity.
    """

    ncoords: int

    def __init__(self, curve: Curve):
        self.curve = curve
        self.q = curve.q

    # ---- layout
    @abstractmethod
    def to_arrays(self, points: Sequence) -> tuple[np.ndarray, ...]:
        """Finite affine points -> coordinate arrays."""

    @abstractmethod
    def from_arrays(self, coords: tuple[np.ndarray, ...]) -> list:
        """Coordinate arrays -> affine point tuples."""

    @abstractmethod
    def neg_where(self, coords: tuple[np.ndarray, ...], mask: np.ndarray) -> tuple[np.ndarray, ...]:
        """Copy of coords with the points under mask negated (y -> -y)."""

    @abstractmethod
    def batch_add(self, P: tuple, Q: tuple) -> tuple[tuple, np.ndarray]:
        """Elementwise P + Q; returns (sums, mask of sums that are infinity: their coords are junk).

        Coordinates must be canonical (in [0, q)); the sums are canonical too.
        Lanes with P == Q are doublings and lanes with P == -Q give infinity.
        """

    # Subclasses also carry the single-point functions of their group as static
    # methods: jdouble(P, q), jadd_affine(P, Q, q), jadd(P, Q, q), to_affine(P, q)
    # (Jacobian steps for the final combination of an MSM) and mul(curve, P, k).

    # ---- derived
    def sum(self, points: Iterable) -> object:
        finite = [p for p in points if p is not None]
        if not finite:
            return None
        if len(finite) == 1:
            return finite[0]
        keys = np.zeros(len(finite), dtype=np.int64)
        _, coords = group_sums(self, keys, self.to_arrays(finite))
        return self.from_arrays(coords)[0] if len(coords[0]) else None


class _G1Ops(GroupOps):
    ncoords = 2
    jdouble = staticmethod(_g1_jdouble)
    jadd_affine = staticmethod(_g1_jadd_affine)
    jadd = staticmethod(_g1_jadd)
    to_affine = staticmethod(_g1_to_affine)
    mul = staticmethod(g1_mul)

    def to_arrays(self, points):
        n = len(points)
        x = np.empty(n, dtype=object)
        y = np.empty(n, dtype=object)
        x[:] = [p[0] for p in points]
        y[:] = [p[1] for p in points]
        return (x, y)

    def from_arrays(self, coords):
        return list(zip(coords[0].tolist(), coords[1].tolist()))

    def neg_where(self, coords, mask):
        x, y = coords
        y = y.copy()
        y[mask] = (-y[mask]) % self.q
        return (x.copy(), y)

    def batch_add(self, P, Q):
        q = self.q
        x1, y1 = P
        x2, y2 = Q
        num = y2 - y1  # unreduced: only products of these are reduced
        den = x2 - x1
        inf = np.zeros(len(x1), dtype=bool)
        same_x = x1 == x2  # coordinates are canonical, so this is den ≡ 0
        if same_x.any():
            idx = np.flatnonzero(same_x)
            dbl_mask = ((y1[idx] + y2[idx]) % q) != 0  # y2 == y1 != 0: a doubling
            dbl, opp = idx[dbl_mask], idx[~dbl_mask]  # otherwise P + (-P) (or y = 0): infinity
            num[dbl] = 3 * x1[dbl] * x1[dbl] % q
            den[dbl] = 2 * y1[dbl] % q
            num[opp] = 0
            den[opp] = 1
            inf[opp] = True
        lam = num * batch_inverse_array(den, q) % q
        x3 = (lam * lam - x1 - x2) % q
        y3 = (lam * (x1 - x3) - y1) % q
        return (x3, y3), inf


class _G2Ops(GroupOps):
    ncoords = 4
    jdouble = staticmethod(_g2_jdouble)
    jadd_affine = staticmethod(_g2_jadd_affine)
    jadd = staticmethod(_g2_jadd)
    to_affine = staticmethod(_g2_to_affine)
    mul = staticmethod(g2_mul)

    def to_arrays(self, points):
        n = len(points)
        cols = [np.empty(n, dtype=object) for _ in range(4)]
        cols[0][:] = [p[0][0] for p in points]
        cols[1][:] = [p[0][1] for p in points]
        cols[2][:] = [p[1][0] for p in points]
        cols[3][:] = [p[1][1] for p in points]
        return tuple(cols)

    def from_arrays(self, coords):
        x0, x1, y0, y1 = (c.tolist() for c in coords)
        return [((a, b), (c, d)) for a, b, c, d in zip(x0, x1, y0, y1)]

    def neg_where(self, coords, mask):
        x0, x1, y0, y1 = (c.copy() for c in coords)
        y0[mask] = (-y0[mask]) % self.q
        y1[mask] = (-y1[mask]) % self.q
        return (x0, x1, y0, y1)

    def batch_add(self, P, Q):
        q = self.q
        a0, a1, b0, b1 = P  # x1 = a0 + a1 u, y1 = b0 + b1 u
        c0, c1, d0, d1 = Q
        n0, n1 = d0 - b0, d1 - b1  # numerator dy (unreduced: only products are reduced)
        e0, e1 = c0 - a0, c1 - a1  # denominator dx
        inf = np.zeros(len(a0), dtype=bool)
        same_x = (a0 == c0) & (a1 == c1)  # coordinates are canonical
        if same_x.any():
            idx = np.flatnonzero(same_x)
            dbl_mask = (((b0[idx] + d0[idx]) % q) != 0) | (((b1[idx] + d1[idx]) % q) != 0)
            dbl, opp = idx[dbl_mask], idx[~dbl_mask]
            xa0, xa1 = a0[dbl], a1[dbl]
            n0[dbl] = 3 * (xa0 + xa1) * (xa0 - xa1) % q  # 3 x^2
            n1[dbl] = 6 * xa0 * xa1 % q
            e0[dbl] = 2 * b0[dbl] % q  # 2 y
            e1[dbl] = 2 * b1[dbl] % q
            n0[opp], n1[opp], e0[opp], e1[opp] = 0, 0, 1, 0
            inf[opp] = True
        t = batch_inverse_array((e0 * e0 + e1 * e1) % q, q)  # 1/N(dx)
        i0, i1 = e0 * t % q, -e1 * t % q
        t0, t1 = n0 * i0, n1 * i1  # lambda = dy / dx (Karatsuba)
        l0 = (t0 - t1) % q
        l1 = ((n0 + n1) * (i0 + i1) - t0 - t1) % q
        x0 = ((l0 + l1) * (l0 - l1) - a0 - c0) % q  # lambda^2 - x1 - x2
        x1 = (2 * l0 * l1 - a1 - c1) % q
        f0, f1 = a0 - x0, a1 - x1
        s0, s1 = l0 * f0, l1 * f1
        y0 = (s0 - s1 - b0) % q
        y1 = ((l0 + l1) * (f0 + f1) - s0 - s1 - b1) % q
        return (x0, x1, y0, y1), inf


@lru_cache(maxsize=None)
def G1_OPS(curve: Curve) -> GroupOps:
    return _G1Ops(curve)


@lru_cache(maxsize=None)
def G2_OPS(curve: Curve) -> GroupOps:
    return _G2Ops(curve)


def group_sums(ops: GroupOps, keys: np.ndarray, coords: tuple[np.ndarray, ...]) -> tuple[np.ndarray, tuple]:
    """Sum the points that share a key.  keys: int64, sorted ascending (equal keys adjacent).

    Each round adds neighbours pairwise inside every group, all pairs of all
    groups in one `batch_add` (one inversion), which halves every group; so
    log2(largest group) rounds.  Returns (unique keys, their sums); a group
    whose sum is infinity is left out.
    """
    coords = tuple(np.array(c, dtype=object) for c in coords)  # own, writable copies
    keys = np.asarray(keys, dtype=np.int64)
    while len(keys) > 1:
        same = keys[1:] == keys[:-1]
        if not same.any():
            break
        n = len(keys)
        idx = np.arange(n)
        first = np.ones(n, dtype=bool)
        first[1:] = ~same
        rank = idx - np.maximum.accumulate(np.where(first, idx, 0))
        has_next = np.zeros(n, dtype=bool)
        has_next[:-1] = same
        left = np.flatnonzero(has_next & (rank % 2 == 0))
        right = left + 1
        sums, inf = ops.batch_add(tuple(c[left] for c in coords), tuple(c[right] for c in coords))
        for c, s in zip(coords, sums):
            c[left] = s
        keep = np.ones(n, dtype=bool)
        keep[right] = False
        keep[left[inf]] = False
        keys = keys[keep]
        coords = tuple(c[keep] for c in coords)
    return keys, coords
