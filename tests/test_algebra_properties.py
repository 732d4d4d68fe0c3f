"""Edge and property probes of the CPU reference algebra (engine/algebra) on both curves.

Every result is compared with a slow reference written here (textbook chord-and-tangent addition,
double-and-add, naive sums, schoolbook DFT, direct powers), at the inputs where fast formulas break:
0, 1, p-1, values >= p or negative, P+P, P+(-P), infinity, scalars r-1, r, r+1, empty and one-element
inputs.  Seeded and small, so the file runs in seconds.
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from engine.algebra import ec, field, glv, limbs, msm, ntt, pairing, subgroup
from engine.algebra.curves import BLS12_381, BN254

CURVES = [pytest.param(BN254, id="bn128"), pytest.param(BLS12_381, id="bls12381")]
SEED = 20261205


# ============================================================ slow references
class _Fq:
    """Fq as plain ints."""

    def __init__(self, q):
        self.q, self.zero, self.one = q, 0, 1

    def add(self, a, b):
        return (a + b) % self.q

    def sub(self, a, b):
        return (a - b) % self.q

    def mul(self, a, b):
        return a * b % self.q

    def inv(self, a):
        return pow(a, self.q - 2, self.q)  # Fermat: no extended Euclid shared with the code under test


class _Fq2(_Fq):
    """Fq[u]/(u^2 + 1) as schoolbook pairs."""

    def __init__(self, q):
        self.q, self.zero, self.one = q, (0, 0), (1, 0)

    def add(self, a, b):
        return ((a[0] + b[0]) % self.q, (a[1] + b[1]) % self.q)

    def sub(self, a, b):
        return ((a[0] - b[0]) % self.q, (a[1] - b[1]) % self.q)

    def mul(self, a, b):
        return ((a[0] * b[0] - a[1] * b[1]) % self.q, (a[0] * b[1] + a[1] * b[0]) % self.q)

    def inv(self, a):
        n = pow((a[0] * a[0] + a[1] * a[1]) % self.q, self.q - 2, self.q)
        return (a[0] * n % self.q, -a[1] * n % self.q)


def _F(curve, g2):
    return _Fq2(curve.q) if g2 else _Fq(curve.q)


def ref_add(curve, P, Q, g2=False):
    """Affine chord-and-tangent addition, straight from the definition."""
    F = _F(curve, g2)
    if P is None:
        return Q
    if Q is None:
        return P
    (x1, y1), (x2, y2) = P, Q
    if x1 == x2:
        if F.add(y1, y2) == F.zero:
            return None
        lam = F.mul(F.mul(F.add(F.add(x1, x1), x1), x1), F.inv(F.add(y1, y1)))  # 3x^2 / 2y
    else:
        lam = F.mul(F.sub(y2, y1), F.inv(F.sub(x2, x1)))
    x3 = F.sub(F.sub(F.mul(lam, lam), x1), x2)
    return (x3, F.sub(F.mul(lam, F.sub(x1, x3)), y1))


def ref_neg(curve, P, g2=False):
    return None if P is None else (P[0], _F(curve, g2).sub(_F(curve, g2).zero, P[1]))


def ref_mul(curve, P, k, g2=False):
    """Plain double-and-add over k's bits, no reduction of k (negative k: (-k)(-P))."""
    if k < 0:
        P, k = ref_neg(curve, P, g2), -k
    acc, base = None, P
    while k:
        if k & 1:
            acc = ref_add(curve, acc, base, g2)
        base = ref_add(curve, base, base, g2)
        k >>= 1
    return acc


def ref_sum(curve, pts, g2=False):
    acc = None
    for P in pts:
        acc = ref_add(curve, acc, P, g2)
    return acc


def gen(curve, g2):
    return curve.g2_gen if g2 else curve.g1_gen


def rand_point(curve, rng, g2=False):
    return (ec.g2_mul if g2 else ec.g1_mul)(curve, gen(curve, g2), rng.randrange(1, curve.r))


# ============================================================ prime field and Fq2
@pytest.mark.parametrize("curve", CURVES)
def test_inverse_sqrt_at_zero_one_minus_one_and_unreduced_values(curve):
    rng = random.Random(SEED)
    for p in (curve.q, curve.r):
        for a in (1, p - 1, p + 1, 2 * p - 1, -1, -p - 1, rng.randrange(p) + 5 * p):
            assert field.inv(a, p) * a % p == 1, (p, a)
        for z in (0, p, -p, 3 * p):
            with pytest.raises(ZeroDivisionError):
                field.inv(z, p)
    q = curve.q
    for a in (0, 1, q - 1, q, q + 4, -4, rng.randrange(q), rng.randrange(q)):
        s = field.sqrt(a, q)
        euler = pow(a % q, (q - 1) // 2, q)
        if s is None:
            assert euler == q - 1, a  # a non-residue (Euler's criterion)
        else:
            assert 0 <= s < q and s * s % q == a % q and euler in (0, 1), a


@pytest.mark.parametrize("curve", CURVES)
def test_fq2_inverse_power_and_sqrt_against_schoolbook(curve):
    rng = random.Random(SEED + 1)
    q, F = curve.q, _Fq2(curve.q)
    with pytest.raises(ZeroDivisionError):
        field.fq2_inv((0, 0), q)
    with pytest.raises(ZeroDivisionError):
        field.fq2_inv((q, -q), q)
    for a in ((1, 0), (0, 1), (q - 1, q - 1), (rng.randrange(q), rng.randrange(q))):
        assert F.mul(field.fq2_inv(a, q), a) == (1, 0)
        for e in (0, 1, 2, 5, -1, -3):
            want = (1, 0)
            for _ in range(abs(e)):
                want = F.mul(want, a)
            assert field.fq2_pow(a, e, q) == (want if e >= 0 else F.inv(want)), (a, e)
    for a in ((0, 0), (1, 0), (q - 1, 0), (0, 1), (0, q - 1), (rng.randrange(q), rng.randrange(q))):
        s = field.fq2_sqrt(a, q)
        norm = (a[0] * a[0] + a[1] * a[1]) % q
        if s is None:
            assert pow(norm, (q - 1) // 2, q) == q - 1, a  # a square in Fq2 iff its norm is one in Fq
        else:
            assert F.mul(s, s) == a, a
    t = next(t for t in range(1, 100) if pow(1 + t * t, (q - 1) // 2, q) == q - 1)
    assert field.fq2_sqrt((1, t), q) is None  # a norm that is no square in Fq: no root in Fq2
    squares = [F.mul(x, x) for x in ((rng.randrange(q), rng.randrange(q)) for _ in range(4))]
    for a in squares:
        s = field.fq2_sqrt(a, q)
        assert s is not None and F.mul(s, s) == a


# ============================================================ group law and scalar multiplication
@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("g2", [False, True], ids=["G1", "G2"])
def test_addition_special_cases_match_the_chord_and_tangent_rule(curve, g2):
    rng = random.Random(SEED + 2)
    add, neg = (ec.g2_add, ec.g2_neg) if g2 else (ec.g1_add, ec.g1_neg)
    P, Q = rand_point(curve, rng, g2), rand_point(curve, rng, g2)
    cases = [(P, P), (P, neg(curve, P)), (P, None), (None, P), (None, None), (P, Q), (Q, P),
             (P, ref_add(curve, P, P, g2)), (neg(curve, P), neg(curve, P))]
    for A, B in cases:
        assert add(curve, A, B) == ref_add(curve, A, B, g2), (A, B)
    total = (ec.g2_sum if g2 else ec.g1_sum)(curve, [P, P, neg(curve, P), None, Q, neg(curve, Q), P])
    assert total == ref_mul(curve, P, 2, g2)


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("g2", [False, True], ids=["G1", "G2"])
def test_jacobian_steps_with_random_z_match_the_chord_and_tangent_rule(curve, g2):
    """The Jacobian formulas (the MSM's final combination, every scalar multiplication) on points with a
    random Z, at P+P, P+(-P) and infinity on either side."""
    rng = random.Random(SEED + 12)
    F = _F(curve, g2)
    ops = msm.G2_OPS(curve) if g2 else msm.G1_OPS(curve)
    q = curve.q
    z_rand = (lambda: (rng.randrange(1, q), rng.randrange(q))) if g2 else (lambda: rng.randrange(1, q))

    def jac(P):
        if P is None:
            return None
        z = z_rand()
        z2 = F.mul(z, z)
        return (F.mul(P[0], z2), F.mul(P[1], F.mul(z2, z)), z)

    P, Q = rand_point(curve, rng, g2), rand_point(curve, rng, g2)
    for A, B in ((P, P), (P, ref_neg(curve, P, g2)), (P, None), (None, P), (None, None), (P, Q)):
        want = ref_add(curve, A, B, g2)
        assert ops.to_affine(ops.jadd(jac(A), jac(B), curve.q), curve.q) == want
        assert ops.to_affine(ops.jadd_affine(jac(A), B, curve.q), curve.q) == want
        assert ops.to_affine(ops.jdouble(jac(A), curve.q), curve.q) == ref_add(curve, A, A, g2)


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("g2", [False, True], ids=["G1", "G2"])
def test_scalar_multiplication_at_edge_scalars(curve, g2):
    rng = random.Random(SEED + 3)
    mul = ec.g2_mul if g2 else ec.g1_mul
    mul_u = subgroup.g2_mul_unreduced if g2 else subgroup.g1_mul_unreduced
    r = curve.r
    P = rand_point(curve, rng, g2)
    for k in (0, 1, 2, 3, r - 1, r, r + 1, 2 * r, 1 << 64, 1 << 200, -1, -2, -(r + 1), rng.randrange(r)):
        want = ref_mul(curve, P, k % r, g2)
        assert mul(curve, P, k) == want, k
        assert mul_u(curve, P, k) == ref_mul(curve, P, k, g2) == want, k  # P is in the subgroup
        assert mul(curve, None, k) is None
    assert mul_u(curve, P, r) is None and mul_u(curve, P, -r) is None


@pytest.mark.parametrize("curve", CURVES)
def test_mul2_when_the_points_coincide_or_cancel(curve):
    rng = random.Random(SEED + 4)
    r = curve.r
    P, Q = rand_point(curve, rng), rand_point(curve, rng)
    nP = ec.g1_neg(curve, P)
    for A, a, B, b in ((P, 3, P, 5), (P, 3, nP, 3), (P, 1, P, r - 1), (P, r, Q, 2), (P, -1, Q, -1),
                       (None, 4, Q, 5), (P, 4, None, 5), (P, 0, Q, 0), (P, r - 1, Q, r + 7)):
        want = ref_add(curve, ref_mul(curve, A, a % r), ref_mul(curve, B, b % r))
        assert ec.g1_mul2(curve, A, a, B, b) == want, (a, b)


# ============================================================ GLV
@pytest.mark.parametrize("curve", CURVES)
def test_glv_split_at_its_boundaries(curve):
    rng = random.Random(SEED + 5)
    r = curve.r
    beta, lam = glv.endomorphism(curve)
    (a1, b1), (a2, b2) = glv._basis(curve)
    ks = [0, 1, r - 1, r, r + 1, lam, r - lam, lam * lam % r, -1, (1 << 128) * lam % r,
          ((1 << 127) + 1) * lam % r, (r >> 1), (r >> 1) + 1, a1 % r, b1 * lam % r,
          ((a1 + a2) // 2) % r, ((1 << 128) - 1 + ((1 << 128) - 1) * lam) % r]
    ks += [rng.randrange(1 << 127) * lam + rng.randrange(1 << 127) for _ in range(4)]
    P = rand_point(curve, rng)
    phiP = (beta * P[0] % curve.q, P[1])
    for i, k in enumerate(ks):
        k1, k2 = glv.decompose(curve, k)
        assert (k1 + k2 * lam - k) % r == 0, k
        assert max(abs(k1), abs(k2)) < 1 << glv.HALF_BITS, k
        mul = ref_mul if i < 4 else subgroup.g1_mul_unreduced  # the slow reference on a few (it is slow)
        got = ref_add(curve, mul(curve, P, k1), mul(curve, phiP, k2))
        assert got == ec.g1_mul(curve, P, k) == mul(curve, P, k % r), k
        mag, signs = glv.split_words(curve, k)
        assert mag == abs(k1) | abs(k2) << 128 and signs == (k1 < 0) | (k2 < 0) << 1


# ============================================================ MSM
def _naive_msm(curve, pts, ks, g2=False):
    return ref_sum(curve, [ref_mul(curve, P, k % curve.r, g2) for P, k in zip(pts, ks)], g2)


def _fast_naive_msm(curve, pts, ks):
    """Σ k_i P_i one product at a time (g1_mul: checked against ref_mul above), summed by the chord rule."""
    return ref_sum(curve, [ec.g1_mul(curve, P, k) for P, k in zip(pts, ks)])


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("g2", [False, True], ids=["G1", "G2"])
def test_msm_small_and_degenerate_inputs(curve, g2):
    rng = random.Random(SEED + 6)
    run = msm.msm_g2 if g2 else msm.msm_g1
    r = curve.r
    P, Q = rand_point(curve, rng, g2), rand_point(curve, rng, g2)
    nP = ref_neg(curve, P, g2)
    cases = [([], []), ([P], [5]), ([P], [r]), ([P], [r + 1]), ([None], [7]), ([P, Q], [0, 0]),
             ([P, nP], [3, 3]), ([P, P, P], [1, r - 1, 2]), ([P, Q, None], [r - 1, -1, 9]),
             ([P, P], [1, 1]), ([P, Q, P], [1 << 255, -(r + 2), 2 * r])]
    for pts, ks in cases:
        assert run(curve, pts, ks, workers=1) == _naive_msm(curve, pts, ks, g2), ks


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("c", [2, 3, 4, 5, 7, 8])
def test_pippenger_buckets_for_each_window_size(curve, c, monkeypatch):
    """The bucket path (not the double-and-add shortcut) with window c forced, on repeats, cancelling
    pairs and edge scalars; n is just above the size where the shortcut stops."""
    rng = random.Random(SEED + c)
    r, bits = curve.r, curve.r.bit_length()
    windows = -(-bits // c)
    n = max(3, windows * (1 << c) // int(1.2 * bits - windows) + 2)
    monkeypatch.setattr(msm, "window_bits", lambda n_, bits_: c)
    base = [rand_point(curve, rng) for _ in range(3)]
    pts = [base[i % 3] for i in range(n)]
    edge = [1, 2, r - 1, r - 2, (1 << (bits - 1)), (1 << c) - 1, 1 << (c - 1), (1 << (c * windows)) % r]
    ks = [edge[i] if i < len(edge) else rng.randrange(1, r) for i in range(n)]
    pts.append(ref_neg(curve, pts[-1]))
    ks.append(ks[n - 1])  # cancels the last term
    ks = [k % r or 1 for k in ks]
    assert msm.pippenger(msm.G1_OPS(curve), pts, ks) == _fast_naive_msm(curve, pts, ks)


@pytest.mark.parametrize("curve", CURVES)
def test_signed_digits_of_edge_scalars_reconstruct_them(curve):
    r, bits = curve.r, curve.r.bit_length()
    ks = [0, 1, r - 1, (1 << bits) - 1, (1 << (bits - 1)), (1 << (bits - 1)) - 1, int("10" * (bits // 2), 2)]
    for c in range(2, 21):
        d = msm.signed_digits(ks, c, bits)
        assert d.min() >= -(1 << (c - 1)) and d.max() < 1 << (c - 1), c
        assert d.shape[0] in (-(-bits // c), -(-bits // c) + 1), c  # at most one carry window
        for j, k in enumerate(ks):
            assert sum(int(d[w, j]) << (c * w) for w in range(d.shape[0])) == k, (c, k)


# ============================================================ NTT
def _dft(curve, xs, inverse, coset):
    n, r = len(xs), curve.r
    k = n.bit_length() - 1
    w = curve.root_of_unity(k)
    g = curve.coset_generator(k) if coset else 1
    if not inverse:
        return [sum(x * pow(g, j, r) * pow(w, i * j, r) for j, x in enumerate(xs)) % r for i in range(n)]
    ninv, winv, ginv = pow(n, r - 2, r), pow(w, r - 2, r), pow(g, r - 2, r)
    return [sum(e * pow(winv, i * j, r) for i, e in enumerate(xs)) * ninv * pow(ginv, j, r) % r for j in range(n)]


@pytest.mark.parametrize("curve", CURVES)
def test_ntt_matches_schoolbook_dft_at_every_small_size(curve):
    rng = random.Random(SEED + 7)
    r = curve.r
    for k in range(0, 6):
        n = 1 << k
        xs = [rng.randrange(r) for _ in range(n)]
        xs[0] = r - 1
        for inverse in (False, True):
            for coset in (False, True):
                got = ntt.ntt(curve, xs, inverse=inverse, coset=coset)
                assert got == _dft(curve, xs, inverse, coset), (k, inverse, coset)
                assert ntt.ntt(curve, got, inverse=not inverse, coset=coset) == xs, (k, inverse, coset)
        unreduced = [x + r if i % 2 else x - r for i, x in enumerate(xs)]
        assert ntt.ntt(curve, unreduced, coset=True) == _dft(curve, xs, False, True)
    for bad in (0, 3, 6):
        with pytest.raises(ValueError):
            ntt.ntt(curve, [1] * bad)


# ============================================================ pairing
@pytest.mark.parametrize("curve", CURVES)
def test_pairing_infinity_inverse_and_cyclotomic_membership(curve):
    rng = random.Random(SEED + 8)
    P, Q = curve.g1_gen, curve.g2_gen
    one = pairing.FQ12_ONE
    assert pairing.pairing(curve, None, Q) == one and pairing.pairing(curve, P, None) == one
    assert pairing.pairing_check(curve, []) and pairing.pairing_check(curve, [(None, None)])
    e = pairing.pairing(curve, P, Q)
    assert e != one  # non-degenerate
    a = rng.randrange(2, 1 << 20)
    ea = pairing.pairing(curve, ec.g1_mul(curve, P, a), Q)
    assert ea == pairing.pairing(curve, P, ec.g2_mul(curve, Q, a)) == pairing.fq12_pow(curve, e, a)
    assert pairing.pairing(curve, ec.g1_neg(curve, P), Q) == pairing.fq12_conj(curve, e)
    assert pairing.pairing_check(curve, [(P, Q), (ec.g1_neg(curve, P), Q)])
    assert pairing.fq12_pow(curve, e, curve.r) == one  # order r
    q4 = pairing.fq12_frobenius(curve, pairing.fq12_frobenius(curve, e, 2), 2)
    q2 = pairing.fq12_frobenius(curve, e, 2)
    # cyclotomic subgroup: e^(q^4 - q^2 + 1) = 1
    assert pairing.fq12_mul(curve, pairing.fq12_mul(curve, q4, e), pairing.fq12_inv(curve, q2)) == one


def _rand_fq12(curve, rng):
    q = curve.q
    return tuple(tuple((rng.randrange(q), rng.randrange(q)) for _ in range(3)) for _ in range(2))


@pytest.mark.parametrize("curve", CURVES)
def test_fq12_pow_with_negative_exponents_is_a_power_of_the_inverse(curve):
    rng = random.Random(SEED + 9)
    a = _rand_fq12(curve, rng)
    ainv = pairing.fq12_inv(curve, a)
    assert pairing.fq12_mul(curve, a, ainv) == pairing.FQ12_ONE
    cube = pairing.fq12_mul(curve, pairing.fq12_sqr(curve, a), a)
    assert pairing.fq12_pow(curve, a, 3) == cube
    assert pairing.fq12_pow(curve, a, 0) == pairing.FQ12_ONE
    assert pairing.fq12_pow(curve, a, -1) == ainv
    assert pairing.fq12_pow(curve, a, -3) == pairing.fq12_inv(curve, cube)


@pytest.mark.parametrize("curve", CURVES)
def test_fq12_inverse_of_zero_is_the_same_error_as_every_field_inverse_of_zero(curve):
    """ZeroDivisionError, as field.inv and fq2_inv raise: not pow()'s "base is not invertible" ValueError."""
    zero = (((0, 0),) * 3,) * 2
    with pytest.raises(ZeroDivisionError, match="inverse of zero"):
        pairing.fq12_inv(curve, zero)
    with pytest.raises(ZeroDivisionError, match="inverse of zero"):
        pairing.fq12_pow(curve, zero, -1)


# ============================================================ subgroup
def _curve_point(curve, rng, g2):
    q = curve.q
    while True:
        if g2:
            x = (rng.randrange(q), rng.randrange(q))
            y = field.fq2_sqrt(field.fq2_add(field.fq2_mul(field.fq2_sqr(x, q), x, q), curve.g2_b, q), q)
        else:
            x = rng.randrange(q)
            y = field.sqrt((x * x * x + curve.g1_b) % q, q)
        if y is not None:
            return (x, y)


@pytest.mark.parametrize("curve,g2", [pytest.param(BLS12_381, False, id="bls-G1"),
                                      pytest.param(BN254, True, id="bn-G2"),
                                      pytest.param(BLS12_381, True, id="bls-G2")])
def test_points_outside_the_subgroup_are_refused_and_cleared_ones_pass(curve, g2):
    rng = random.Random(SEED + 10)
    is_in = subgroup.g2_in_subgroup if g2 else subgroup.g1_in_subgroup
    mul_u = subgroup.g2_mul_unreduced if g2 else subgroup.g1_mul_unreduced
    P = _curve_point(curve, rng, g2)
    assert mul_u(curve, P, curve.r) is not None and not is_in(curve, P)
    assert subgroup.point_problem(curve, P, g2, "pi_x") is not None
    # r·P lies in the cofactor part; P·(#E / r) is cleared into the subgroup
    order = _curve_order(curve, g2)
    cleared = mul_u(curve, P, order // curve.r)
    assert cleared is not None and is_in(curve, cleared) and mul_u(curve, cleared, curve.r) is None
    assert subgroup.point_problem(curve, cleared, g2, "pi_x") is None
    assert is_in(curve, None)


def _curve_order(curve, g2):
    """#E(Fq) (#E'(Fq2) for the twist) from the trace t = u + 1 (BLS12) or 6u^2 + 1 (BN)."""
    q, u = curve.q, curve.x_param
    t = 6 * u * u + 1 if curve.family == "bn" else u + 1
    if not g2:
        return q + 1 - t
    t2 = t * t - 2 * q  # trace over Fq2
    f2 = (4 * q - t * t) // 3  # t^2 - 4q = -3 f^2
    f = math.isqrt(f2)
    assert f * f == f2
    for cand in (q * q + 1 - (t2 + 3 * f * t) // 2, q * q + 1 - (t2 - 3 * f * t) // 2):
        if cand % curve.r == 0:
            return cand
    raise AssertionError("no twist order divisible by r")


# ============================================================ limbs
@pytest.mark.parametrize("curve", CURVES)
def test_limb_conversions_round_trip_at_the_edges(curve):
    q, r, L = curve.q, curve.r, curve.q_limbs64
    for n_limbs, vals in ((4, [0, 1, r - 1, (1 << 256) - 1]), (L, [0, 1, q - 1, (1 << (64 * L)) - 1])):
        arr = limbs.from_ints(vals, n_limbs)
        assert arr.shape == (len(vals), n_limbs) and arr.dtype == np.uint64
        assert limbs.to_ints(arr) == vals
        assert limbs.to_ints(arr[:1]) == vals[:1] and limbs.to_ints(arr[0]) == vals[:1]
        assert limbs.to_ints(arr[:0]) == [] and limbs.from_ints([], n_limbs).shape == (0, n_limbs)
    assert limbs.to_ints(np.empty(0, dtype=np.uint64)) == []
    edge = [0, 1, q - 1]
    assert limbs.fq_from_mont(curve, limbs.fq_to_mont(curve, edge)) == edge
    assert limbs.fq_to_mont(curve, [1]) == [curve.rq]
    assert limbs.fr_to_ints(curve, limbs.fr_from_ints([0, 1, r - 1])) == [0, 1, r - 1]
    with pytest.raises(ValueError, match="not reduced"):
        limbs.fr_to_ints(curve, limbs.from_ints([r], 4))
    g1 = [curve.g1_gen, None, ec.g1_neg(curve, curve.g1_gen)]
    assert limbs.g1_from_mont(curve, limbs.g1_to_mont(curve, g1)) == g1
    assert limbs.g1_from_mont(curve, limbs.g1_to_mont(curve, [])) == []
    g2 = [None, curve.g2_gen]
    assert limbs.g2_from_mont(curve, limbs.g2_to_mont(curve, g2)) == g2
    assert limbs.g2_to_mont(curve, []).shape == (0, 2, 2, L)


@pytest.mark.parametrize("curve", CURVES)
def test_numpy_integer_scalars_are_ints_and_non_integers_are_refused(curve):
    """Scalars taken from a numpy array (np.int64, np.uint64) are integers like any other; k %= r on one
    overflowed (r does not fit int64).  A float is a caller's bug: a TypeError, never a rounded product."""
    P = curve.g1_gen
    ks = np.array([5, 2, 3], dtype=np.int64)
    want = _fast_naive_msm(curve, [P, P, P], [5, 2, 3])
    assert msm.msm_g1(curve, [P] * 3, list(ks), workers=1) == want
    assert msm.msm_g1(curve, [P] * 3, list(ks.astype(np.uint64)), workers=1) == want
    assert msm.msm_g2(curve, [curve.g2_gen], [np.uint64(7)], workers=1) == ec.g2_mul(curve, curve.g2_gen, 7)
    assert ec.g1_mul(curve, P, np.int64(-5)) == ec.g1_mul(curve, P, -5)
    assert ec.g2_mul(curve, curve.g2_gen, np.uint64(9)) == ec.g2_mul(curve, curve.g2_gen, 9)
    for bad in (2.0, "3"):
        with pytest.raises(TypeError):
            msm.msm_g1(curve, [P], [bad], workers=1)
        with pytest.raises(TypeError):
            ec.g1_mul(curve, P, bad)


@pytest.mark.parametrize("curve", CURVES)
def test_ntt_of_numpy_integers_is_the_ntt_of_their_values_and_floats_are_refused(curve):
    """Values from a numpy int array: the butterflies ran in 64-bit numpy scalars (wrapping, with only a
    RuntimeWarning) and then overflowed on % r; floats went through as floats.  Both must act as ints."""
    for dtype in (np.uint64, np.int64):
        for inverse in (False, True):
            for coset in (False, True):
                arr = np.array([1, 2, 3, (1 << 63) - 1], dtype=dtype)
                want = ntt.ntt(curve, [int(v) for v in arr], inverse=inverse, coset=coset)
                assert ntt.ntt(curve, arr, inverse=inverse, coset=coset) == want
                assert ntt.ntt(curve, list(arr[:1]), inverse=inverse, coset=coset) == [int(arr[0])]
    with pytest.raises(TypeError):
        ntt.ntt(curve, [1.0, 2.0])


@pytest.mark.parametrize("curve", CURVES)
def test_frobenius_of_any_order_is_that_power(curve):
    """a^(q^k) for every k >= 0 (q^12 = 1 on Fq12): k outside 1..3 raised a bare KeyError."""
    a = _rand_fq12(curve, random.Random(SEED + 11))
    assert pairing.fq12_frobenius(curve, a, 1) == pairing.fq12_pow(curve, a, curve.q)
    want = a
    for k in range(0, 14):
        assert pairing.fq12_frobenius(curve, a, k) == want, k
        want = pairing.fq12_frobenius(curve, want, 1)
    with pytest.raises(ValueError, match="Frobenius"):
        pairing.fq12_frobenius(curve, a, -1)


def test_curve_by_name_of_a_non_string_is_a_type_error_that_says_so():
    from engine.algebra.curves import curve_by_name

    assert curve_by_name("BN-254") is BN254 and curve_by_name("bls12_381") is BLS12_381
    with pytest.raises(KeyError, match="unknown curve"):
        curve_by_name("bn256")
    for bad in (None, 254, b"bn128"):
        with pytest.raises(TypeError, match="curve name"):
            curve_by_name(bad)


@pytest.mark.parametrize("curve", CURVES)
def test_pairing_of_points_given_as_lists_equals_that_of_tuples(curve):
    """json.load gives lists: a G2 point as [[x0, x1], [y0, y1]] failed in the line cache ("unhashable type:
    'list'"), a traceback out of verify, which promises True/False for any well-formed values."""
    P, Q = curve.g1_gen, curve.g2_gen
    listed = [list(Q[0]), list(Q[1])]
    want = pairing.pairing(curve, P, Q)
    assert pairing.pairing(curve, list(P), listed) == want
    assert pairing.pairing_check(curve, [(P, listed), (ec.g1_neg(curve, P), Q)])


@pytest.mark.parametrize("name", ["bn128", "bls12381"])
def test_verify_takes_a_proof_whose_points_are_lists(name):
    import dataclasses
    import json

    from conftest import FIXTURES
    from engine.formats.json import read_proof, read_vkey
    from engine.groth16.verifier import verify

    d = FIXTURES / "interop" / name
    vk, proof = read_vkey(d / "verification_key.json"), read_proof(d / "proof.json")
    public = json.loads((d / "public.json").read_text())
    listed = dataclasses.replace(proof, pi_a=list(proof.pi_a), pi_b=[list(c) for c in proof.pi_b],
                                 pi_c=list(proof.pi_c))
    assert verify(vk, public, listed) is True
    bad = dataclasses.replace(listed, pi_c=list(ec.g1_neg(vk.curve, proof.pi_c)))
    assert verify(vk, public, bad) is False
