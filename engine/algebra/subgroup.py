"""Prime-order subgroup membership of curve points that come from outside (proofs, keys).

A point on the curve need not be in the order-r group the pairing is defined on: BN254's
G2 twist and both BLS12-381 groups have cofactors, and a point with a small-order component
can make a forged proof pass, or leak, in protocols that assume G1/G2.  BN254's G1 has
cofactor 1, so there being on the curve is membership.  The others are tested with an
endomorphism whose eigenvalue on the subgroup is known, which costs a half- or
quarter-length scalar multiplication instead of [r]P (u is the curve's x_param):

* BLS12-381 G1: φ(x, y) = (βx, y) with β a cube root of unity; P ∈ G1 iff φ(P) = [-u²]P
  (Scott, "A note on group membership tests for G1, G2 and GT on BLS pairing-friendly
  curves", 2021).  The kernel of φ + [u²] has (u²)² - u² + 1 = r points: the test is exact.
* BN254 G2: ψ the untwist-Frobenius-twist map; P ∈ G2 iff ψ(P) = [6u²]P.  ψ satisfies
  ψ² - tψ + q = 0 with t = 6u² + 1, so the kernel of ψ - [6u²] has q - 6u² = r points: exact.
* BLS12-381 G2: P ∈ G2 iff ψ(P) = [u]P.  The kernel of ψ - [u] has q - u = r(u - 1)²/3
  points, and (u - 1)²/3 is prime to #E'(Fq²)/r, so on the twist's rational points the
  test is exact too (tests/test_subgroup.py checks these counts and compares every test
  with [r]P = O on points in and out of the subgroup).

The constants (β, and ψ's two Fq2 factors) are chosen once per curve as the candidates under
which the generator has the stated eigenvalue.
"""
from __future__ import annotations

import operator
from functools import lru_cache

from engine.algebra.curves import Curve
from engine.algebra.ec import (
    G1Point, G2Point, _g1_jadd_affine, _g1_jdouble, _g1_to_affine, _g2_jadd_affine, _g2_jdouble, _g2_to_affine,
    _naf_mul, g1_is_on_curve, g1_neg, g2_is_on_curve, g2_neg,
)
from engine.algebra.field import fq2_mul, fq2_pow


def g1_mul_unreduced(curve: Curve, P: G1Point, k: int) -> G1Point:
    """k·P for any int k, NOT reduced mod r (so [r]P tells whether P is in the subgroup)."""
    k = operator.index(k)
    if P is None or k == 0:
        return None
    q = curve.q
    R = _naf_mul(P, g1_neg(curve, P), abs(k), 1, _g1_jdouble, _g1_jadd_affine, _g1_to_affine, q)
    return g1_neg(curve, R) if k < 0 else R


def g2_mul_unreduced(curve: Curve, P: G2Point, k: int) -> G2Point:
    k = operator.index(k)
    if P is None or k == 0:
        return None
    q = curve.q
    R = _naf_mul(P, g2_neg(curve, P), abs(k), (1, 0), _g2_jdouble, _g2_jadd_affine, _g2_to_affine, q)
    return g2_neg(curve, R) if k < 0 else R


def g1_eigenvalue(curve: Curve) -> int:
    """λ with φ(P) = [λ]P on BLS12 G1 (an integer, not reduced: -u²)."""
    return -curve.x_param ** 2


def g2_eigenvalue(curve: Curve) -> int:
    """λ with ψ(P) = [λ]P on G2: 6u² on BN curves, u on BLS12 curves (integers, q ≡ λ mod r)."""
    u = curve.x_param
    return 6 * u * u if curve.family == "bn" else u


@lru_cache(maxsize=None)
def _beta(curve: Curve) -> int:
    q = curve.q
    assert q % 4 == 3
    s = pow(-3 % q, (q + 1) // 4, q)  # √-3
    inv2 = pow(2, -1, q)
    lam = g1_eigenvalue(curve)
    g = curve.g1_gen
    for beta in ((-1 + s) * inv2 % q, (-1 - s) * inv2 % q):
        if (beta * g[0] % q, g[1]) == g1_mul_unreduced(curve, g, lam):
            return beta
    raise AssertionError(f"{curve.name}: no cube root of unity acts as [{lam}] on G1")


def _conj(a: tuple[int, int], q: int) -> tuple[int, int]:
    return (a[0], -a[1] % q)


@lru_cache(maxsize=None)
def _psi_consts(curve: Curve) -> tuple[tuple[int, int], tuple[int, int]]:
    q, xi = curve.q, curve.fq6_nonresidue
    lam = g2_eigenvalue(curve)
    g = curve.g2_gen
    want = g2_mul_unreduced(curve, g, lam)
    for ex in ((q - 1) // 3, -((q - 1) // 3)):
        for ey in ((q - 1) // 2, -((q - 1) // 2)):
            cx = fq2_pow(xi, ex % (q * q - 1), q)
            cy = fq2_pow(xi, ey % (q * q - 1), q)
            if _psi(g, cx, cy, q) == want:
                return cx, cy
    raise AssertionError(f"{curve.name}: no twist-Frobenius constants act as [{lam}] on G2")


def _psi(P, cx, cy, q):
    return (fq2_mul(_conj(P[0], q), cx, q), fq2_mul(_conj(P[1], q), cy, q))


def psi(curve: Curve, P: G2Point) -> G2Point:
    """The untwist-Frobenius-twist endomorphism of the G2 twist curve."""
    if P is None:
        return None
    cx, cy = _psi_consts(curve)
    return _psi(P, cx, cy, curve.q)


def g1_in_subgroup(curve: Curve, P: G1Point) -> bool:
    """P (on the curve: check that first) lies in the order-r subgroup G1."""
    if P is None or curve.family == "bn":  # BN254 G1: cofactor 1
        return True
    return (_beta(curve) * P[0] % curve.q, P[1]) == g1_mul_unreduced(curve, P, g1_eigenvalue(curve))


def g2_in_subgroup(curve: Curve, P: G2Point) -> bool:
    """P (on the twist curve: check that first) lies in the order-r subgroup G2."""
    if P is None:
        return True
    return psi(curve, P) == g2_mul_unreduced(curve, P, g2_eigenvalue(curve))


def subgroup_problem(curve: Curve, P, g2: bool, what: str) -> str | None:
    """A one-line reason when `P` (on its curve) is outside its prime-order group, else None."""
    if (g2_in_subgroup if g2 else g1_in_subgroup)(curve, P):
        return None
    group = "G2" if g2 else "G1"
    return (f"{what} is a point of the {curve.name} {'twist ' if g2 else ''}curve outside its prime-order "
            f"subgroup {group} (not a valid {group} element; the input is corrupt or forged)")


def point_problem(curve: Curve, P, g2: bool, what: str) -> str | None:
    """A one-line reason when `P` is not a valid G1 (G2) element: off its curve, or outside the subgroup."""
    if not (g2_is_on_curve if g2 else g1_is_on_curve)(curve, P):
        return f"{what} is not a point of the {curve.name} {'twist ' if g2 else ''}curve"
    return subgroup_problem(curve, P, g2, what)
