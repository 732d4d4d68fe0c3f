"""The CPU NTT against a direct O(n^2) DFT with the spec §5.2 convention (roots, coset, order)."""
from __future__ import annotations

import random

import pytest

from engine.backends.cpu import CpuBackend
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.limbs import fr_from_ints, to_ints
from engine.algebra.ntt import ntt

CURVES = pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
rng = random.Random()


def dft(curve, x, coset=False):
    """out_i = Σ_j x_j g^j ω^(ij), computed term by term."""
    r, n = curve.r, len(x)
    k = n.bit_length() - 1
    w = curve.root_of_unity(k)
    g = curve.coset_generator(k) if coset else 1
    return [sum(x[j] * pow(g, j, r) * pow(w, i * j, r) for j in range(n)) % r for i in range(n)]


@CURVES
@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5])
def test_forward_ntt_equals_direct_dft(curve, k):
    x = [rng.randrange(curve.r) for _ in range(1 << k)]
    assert ntt(curve, x) == dft(curve, x)
    assert ntt(curve, x, coset=True) == dft(curve, x, coset=True)


@CURVES
@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_inverse_ntt_is_exact_inverse_of_forward(curve, k):
    x = [rng.randrange(curve.r) for _ in range(1 << k)]
    assert ntt(curve, dft(curve, x), inverse=True) == x
    assert ntt(curve, dft(curve, x, coset=True), inverse=True, coset=True) == x


@CURVES
def test_round_trip_at_larger_size(curve):
    x = [rng.randrange(curve.r) for _ in range(1 << 10)]
    for coset in (False, True):
        assert ntt(curve, ntt(curve, x, coset=coset), inverse=True, coset=coset) == x


@CURVES
def test_coset_evaluation_is_polynomial_at_g_omega_i(curve):
    """The coset NTT of coefficients evaluates the polynomial at g·ω^i (how §5.1 step 4 uses it)."""
    r, n = curve.r, 8
    coeffs = [rng.randrange(r) for _ in range(n)]
    g, w = curve.coset_generator(3), curve.root_of_unity(3)
    evals = [sum(c * pow(g * pow(w, i, r), j, r) for j, c in enumerate(coeffs)) % r for i in range(n)]
    assert ntt(curve, coeffs, coset=True) == evals


def test_ntt_of_constants_and_deltas():
    curve = BN254
    n = 16
    assert ntt(curve, [1] + [0] * (n - 1)) == [1] * n
    assert ntt(curve, [0] * n, coset=True) == [0] * n
    assert ntt(curve, [5] * n, inverse=True) == [5] + [0] * (n - 1)


def test_non_power_of_two_length_is_rejected():
    with pytest.raises(ValueError, match="power of two"):
        ntt(BN254, [1, 2, 3])
    with pytest.raises(ValueError, match="power of two"):
        ntt(BN254, [])


@CURVES
def test_backend_ntt_seam_matches_list_ntt(curve):
    x = [rng.randrange(curve.r) for _ in range(32)]
    be = CpuBackend(workers=1)
    for inverse in (False, True):
        for coset in (False, True):
            out = be.ntt(curve, fr_from_ints(x), inverse=inverse, coset=coset)
            assert out.shape == (32, 4) and str(out.dtype) == "uint64"
            assert to_ints(out) == ntt(curve, x, inverse=inverse, coset=coset)


def test_backend_ntt_rejects_unreduced_values():
    be = CpuBackend(workers=1)
    with pytest.raises(ValueError, match="not reduced"):
        be.ntt(BN254, fr_from_ints([1, BN254.r]))
