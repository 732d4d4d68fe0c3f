"""Host-side pieces of the GPU NTT that need no GPU: the pass plan, the twiddle entry size
per curve, and the arithmetic of the Shoup twiddle product the kernels run."""
from __future__ import annotations

import random

import pytest

from engine.curves import BLS12_381, BN254
from engine.gpu import ntt as gntt
from engine.gpu_params import params_header


@pytest.mark.parametrize("k", range(0, 31))
def test_pass_plan_covers_every_level_once(k):
    for dif in (False, True):
        sizes = gntt.pass_sizes(k, dif=dif)
        assert sum(sizes) == k
        assert all(1 <= b <= gntt.MAX_PASS_LEVELS for b in sizes)
        assert len(sizes) == -(-k // gntt.MAX_PASS_LEVELS)
    if k > 2 * gntt.MAX_PASS_LEVELS:  # three passes or more: DIF runs the mirror order
        assert gntt.pass_sizes(k, dif=True) == gntt.pass_sizes(k)[::-1]


def test_pass_plan_puts_the_remainder_on_the_large_twiddle_levels():
    assert gntt.pass_sizes(24) == [10, 10, 4]  # DIT: the last stages read the large table
    assert gntt.pass_sizes(24, dif=True) == [4, 10, 10]  # DIF: the first levels do
    assert gntt.pass_sizes(18) == [9, 9]  # two passes: even


def test_twiddle_entries_are_shoup_pairs_only_where_3r_fits():
    assert gntt.twiddle_bytes(BN254) == 64 and 3 * BN254.r < 1 << 256
    assert gntt.twiddle_bytes(BLS12_381) == 32 and 3 * BLS12_381.r > 1 << 256
    assert "SHOUP = true" in params_header(BN254).split("struct FQ_P")[0]
    assert "SHOUP = false" in params_header(BLS12_381).split("struct FQ_P")[0]


def _shoup_model(x: int, w: int, r: int, n: int = 8) -> int:
    """The generated mul_shoup step by step: q from the columns >= n-1 of x * ws (column
    n-2 contributes its high words), r = x w - q r from the low halves, two subtractions."""
    mask, word = (1 << 32) - 1, 32
    ws = (w << (word * n)) // r
    xl = [(x >> (word * i)) & mask for i in range(n)]
    wl = [(ws >> (word * i)) & mask for i in range(n)]
    s = 0
    for i in range(n):
        for j in range(n):
            prod = xl[i] * wl[j]
            if i + j >= n - 1:
                s += prod << (word * (i + j))
            elif i + j == n - 2:
                s += (prod >> word) << (word * (n - 1))
    q = s >> (word * n)
    assert (x * ws >> (word * n)) - 1 <= q <= x * ws >> (word * n)  # at most one below
    t = (x * w - q * r) % (1 << (word * n))  # low halves only
    assert t == x * w - q * r < 3 * r  # exact: the true value is below 3r < 2^256
    for _ in range(2):
        t = t - r if t >= r else t
    return t


def test_shoup_product_model_on_bn254():
    r, rng = BN254.r, random.Random(7)
    edge = [0, 1, 2, r - 1, r - 2, (r + 1) // 2]
    pairs = [(a, b) for a in edge + [(1 << 256) - 1] for b in edge]  # w < r (a twiddle), x any + [(rng.randrange(r), rng.randrange(r)) for _ in range(3000)]
    pairs += [(rng.randrange(1 << 256), rng.randrange(r)) for _ in range(500)]  # any 256-bit x
    for x, w in pairs:
        assert _shoup_model(x, w, r) == x * w % r


def test_shoup_pair_from_montgomery_form():
    """ws = floor(w 2^256 / r) is -wm r^-1 mod 2^256 for wm = w 2^256 mod r (the kernels'
    exact division, a low-half product by the constant NEGPINV)."""
    r, R, rng = BN254.r, 1 << 256, random.Random(8)
    negpinv = (-pow(r, -1, R)) % R
    for w in [0, 1, r - 1] + [rng.randrange(r) for _ in range(1000)]:
        wm = w * R % r
        assert wm * negpinv % R == (w * R) // r
