"""G1's endomorphism and the GLV split of a scalar into two half-length ones.

Both curves' G1 (y² = x³ + b over Fq with q ≡ 1 mod 3) have φ(x, y) = (βx, y), β a cube
root of unity in Fq, acting on the order-r group as [λ] with λ a cube root of unity mod r.
So k·P = k1·P + k2·φ(P) whenever k ≡ k1 + k2·λ (mod r), and a lattice reduction of
{(a, b) : a + bλ ≡ 0 (mod r)} gives k1, k2 of about half r's length (Gallant, Lambert and
Vanstone, CRYPTO 2001).  The proof's tail on the device (groth16_check.cuh's mid phase)
uses it for s·A and r·B1: the point is only known on the device, the scalar on the host,
so the host splits r and s once per proof and each half runs on its own warp, half the
doublings of a 256-bit product on one.
"""
from __future__ import annotations

import math
from functools import lru_cache

from engine.algebra.curves import Curve

HALF_BITS = 128  # every half of either curve's split fits here (checked by decompose)


def _cube_roots_of_unity(p: int) -> tuple[int, int]:
    """The two primitive cube roots of unity mod a prime p ≡ 1 (mod 3)."""
    if p % 3 != 1:
        raise ValueError(f"{p} has no primitive cube root of unity")
    for h in range(2, 1000):
        w = pow(h, (p - 1) // 3, p)
        if w != 1:
            return w, w * w % p
    raise AssertionError("no cube non-residue below 1000")


@lru_cache(maxsize=None)
def endomorphism(curve: Curve) -> tuple[int, int]:
    """(β, λ): φ(x, y) = (βx, y) equals [λ](x, y) on G1 (β in Fq, λ mod r), matched on the
    generator (of the two cube roots of unity mod q, one goes with each mod r)."""
    from engine.algebra.ec import g1_mul

    g = curve.g1_gen
    lam = _cube_roots_of_unity(curve.r)[0]
    want = g1_mul(curve, g, lam)
    for beta in _cube_roots_of_unity(curve.q):
        if (beta * g[0] % curve.q, g[1]) == want:
            return beta, lam
    raise AssertionError(f"{curve.name}: no cube root of unity in Fq acts as [{lam}] on G1")


@lru_cache(maxsize=None)
def _basis(curve: Curve) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two short vectors (a, b) with a + bλ ≡ 0 (mod r), from the extended Euclidean
    algorithm on (r, λ) stopped at √r (Guide to Elliptic Curve Cryptography, alg. 3.74)."""
    r, lam = curve.r, endomorphism(curve)[1]
    root = math.isqrt(r)
    r0, r1, t0, t1 = r, lam, 0, 1  # invariant: r_i ≡ t_i λ (mod r)
    while r1 > root:
        q = r0 // r1
        r0, r1, t0, t1 = r1, r0 - q * r1, t1, t0 - q * t1
    q = r0 // r1
    r2, t2 = r0 - q * r1, t0 - q * t1
    v1 = (r1, -t1)
    v2 = min((r0, -t0), (r2, -t2), key=lambda v: v[0] * v[0] + v[1] * v[1])
    for a, b in (v1, v2):
        assert (a + b * lam) % r == 0
    return v1, v2


def _round_div(n: int, d: int) -> int:
    """n / d rounded to the nearest integer (d != 0, any signs)."""
    if d < 0:
        n, d = -n, -d
    return (2 * n + d) // (2 * d)


def decompose(curve: Curve, k: int) -> tuple[int, int]:
    """(k1, k2) with k ≡ k1 + k2·λ (mod r) and |k1|, |k2| < 2^HALF_BITS (signed)."""
    (a1, b1), (a2, b2) = _basis(curve)
    k %= curve.r
    det = a1 * b2 - a2 * b1
    c1, c2 = _round_div(k * b2, det), _round_div(-k * b1, det)
    k1, k2 = k - c1 * a1 - c2 * a2, -c1 * b1 - c2 * b2
    if max(abs(k1), abs(k2)) >> HALF_BITS:
        raise AssertionError(f"{curve.name}: GLV halves of {k} exceed {HALF_BITS} bits")
    return k1, k2


def split_words(curve: Curve, k: int) -> tuple[int, int]:
    """The device's form of k's split: (|k1| + |k2|·2^128 as one 256-bit value, sign bits:
    bit 0 set when k1 < 0, bit 1 when k2 < 0)."""
    k1, k2 = decompose(curve, k)
    return abs(k1) | abs(k2) << HALF_BITS, int(k1 < 0) | int(k2 < 0) << 1
