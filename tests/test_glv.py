"""G1's endomorphism and the GLV split (engine/algebra/glv.py) that the device tail's mid phase uses."""
from __future__ import annotations

import random

import numpy as np
import pytest

from engine.algebra import ec, glv
from engine.algebra.curves import BLS12_381, BN254


@pytest.fixture(params=[BN254, BLS12_381], ids=lambda c: c.name)
def curve(request):
    return request.param


def _edge_scalars(curve) -> list[int]:
    r, lam = curve.r, glv.endomorphism(curve)[1]
    (a1, b1), (a2, b2) = glv._basis(curve)
    edges = [0, 1, 2, r - 1, r - 2, lam, lam - 1, lam + 1, r - lam, r // 2, (r + 1) // 2, 1 << 127, (1 << 128) - 1,
             1 << 128, (1 << 254) % r, (1 << 256) - 1]
    edges += [(a1 * x + a2 * y) % r for x in (-1, 0, 1) for y in (-1, 0, 1)]  # multiples of the basis
    edges += [(a1 // 2 + lam * (b1 // 2)) % r, (a2 // 2 + lam * (b2 // 2)) % r]  # halfway points of the rounding
    return edges


def test_phi_acts_as_lambda_on_g1(curve):
    beta, lam = glv.endomorphism(curve)
    assert pow(beta, 3, curve.q) == 1 and beta != 1
    assert pow(lam, 3, curve.r) == 1 and lam != 1
    rng = random.Random(5)
    for _ in range(3):
        p = ec.g1_mul(curve, curve.g1_gen, rng.randrange(1, curve.r))
        assert (beta * p[0] % curve.q, p[1]) == ec.g1_mul(curve, p, lam)


def test_decompose_reassembles_with_halves_below_128_bits(curve):
    lam = glv.endomorphism(curve)[1]
    rng = random.Random(6)
    for k in _edge_scalars(curve) + [rng.randrange(curve.r) for _ in range(3000)]:
        k1, k2 = glv.decompose(curve, k)
        assert (k1 + k2 * lam - k) % curve.r == 0
        assert abs(k1) < 1 << glv.HALF_BITS and abs(k2) < 1 << glv.HALF_BITS


def test_split_words_gives_magnitudes_and_signs(curve):
    rng = random.Random(7)
    lam = glv.endomorphism(curve)[1]
    seen = set()
    for k in _edge_scalars(curve) + [rng.randrange(curve.r) for _ in range(200)]:
        halves, signs = glv.split_words(curve, k)
        k1, k2 = halves & ((1 << 128) - 1), halves >> 128
        k1, k2 = -k1 if signs & 1 else k1, -k2 if signs & 2 else k2
        assert (k1 + k2 * lam - k) % curve.r == 0 and signs < 4
        seen.add(signs)
    assert len(seen) >= 2  # both signs occur among these (the device's negation is exercised)


def test_glv_halves_give_k_times_p(curve):
    beta, _ = glv.endomorphism(curve)
    rng = random.Random(8)
    p = ec.g1_mul(curve, curve.g1_gen, rng.randrange(1, curve.r))
    phi = (beta * p[0] % curve.q, p[1])
    for k in [0, 1, curve.r - 1, rng.randrange(curve.r)]:
        k1, k2 = glv.decompose(curve, k)
        got = ec.g1_add(curve, ec.g1_mul(curve, p, k1 % curve.r), ec.g1_mul(curve, phi, k2 % curve.r))
        assert got == ec.g1_mul(curve, p, k)


def test_blinding_scalars_carry_the_splits_of_s_and_r(curve):
    from engine.backends.gpu import epilogue as gepi

    lam = glv.endomorphism(curve)[1]
    draws = iter([curve.r - 1, glv.endomorphism(curve)[1]])  # r, then s
    rows = gepi.blinding_scalars(curve, draw=lambda _n: next(draws))
    assert rows.shape == (6, 4) and rows.nbytes == gepi.SCALAR_BYTES
    vals = [int.from_bytes(np.ascontiguousarray(row).tobytes(), "little") for row in rows]
    r, s, rs = vals[:3]
    assert (r, s, rs) == (curve.r - 1, lam, (curve.r - 1) * lam % curve.r)
    signs = vals[5]
    for k, halves, sg in ((s, vals[3], signs & 0xFFFFFFFF), (r, vals[4], signs >> 32)):
        assert (halves, sg) == glv.split_words(curve, k)


def test_the_halves_are_below_128_bits_for_every_scalar(curve):
    """decompose's rounding leaves (k1, k2) = (e1 a1 + e2 a2, e1 b1 + e2 b2) with |e1|, |e2| <= 1/2 for the
    basis (a1, b1), (a2, b2): so |k1| <= (|a1| + |a2|) / 2 and |k2| <= (|b1| + |b2|) / 2 for every k, and both
    bounds fit the device's 128-bit halves (its AssertionError never fires)."""
    (a1, b1), (a2, b2) = glv._basis(curve)
    assert a1 * b2 - a2 * b1 != 0
    assert (abs(a1) + abs(a2)) // 2 + 1 < 1 << glv.HALF_BITS
    assert (abs(b1) + abs(b2)) // 2 + 1 < 1 << glv.HALF_BITS
