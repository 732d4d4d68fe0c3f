"""The split Montgomery product of cuda_kernels/gen_mont_split.py (double-width products by rows,
by Karatsuba and as squarings; the reduction REDC), run on the host by the PTX interpreter
(tests/ptx_sim.py) against Python integers: seeded random operands and extremes, both limb counts
(8: BN254, 12: BLS12-381), no carry dropped where no bound allows it."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from cuda_kernels import gen_mont_split
from engine.algebra.curves import BLS12_381, BN254

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ptx_sim  # noqa: E402


def limbs(x: int, n: int) -> list[int]:
    return [(x >> (32 * j)) & 0xFFFFFFFF for j in range(n)]


def value(ws: list[int]) -> int:
    return sum(w << (32 * j) for j, w in enumerate(ws))


def operands(first: int, *groups: list[int]) -> dict[int, int]:
    flat = [w for g in groups for w in g]
    return {first + k: v for k, v in enumerate(flat)}


FIELDS = [(BN254.q, 8), (BLS12_381.q, 12)]
IDS = ["bn254-q", "bls12381-q"]


def extremes(p: int, n: int) -> list[int]:
    r = 1 << (32 * n)
    h = 16 * n  # the Karatsuba halves' boundary: equal halves, one half zero, halves in either order
    return [0, 1, 2, p - 1, p - 2, (p - 1) // 2, r % p, (r - 1) % p, (1 << h) - 1, 1 << h, ((1 << h) + 1) % p,
            (((1 << h) - 1) << h) % p, p - (1 << (32 * n - 64)), (1 << (32 * n - 32)) - 1]


def pairs(p: int, n: int, count: int, seed: int):
    rng = random.Random(seed)
    ext = extremes(p, n)
    for x in ext:
        for y in ext:
            yield x, y
    for _ in range(count):
        yield rng.randrange(p), rng.randrange(p)


def run(kind: str, n: int, ops: dict[int, int], n_out: int) -> tuple[int, int]:
    """The result, and the carries dropped other than the one Karatsuba means to: the middle's top
    word adds the sign extension (all ones) of a negated product, mod 2^32."""
    stats: dict = {}
    got = ptx_sim.run(gen_mont_split.product(n, kind), ops, n_out, stats)
    meant = f"addc.u32 km{n}, km{n}, ks"
    return value(got), sum(1 for line in stats.get("dropped_at", []) if line != meant)


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
@pytest.mark.parametrize("kind", ["wide", "kara"])
def test_double_width_products_are_exact(p, n, kind):
    """wide and Karatsuba: a b in 2n words for every pair of words below 2^(32n) (not only below p)."""
    rng = random.Random(11)
    top = (1 << (32 * n)) - 1
    cases = list(pairs(p, n, 300, 3)) + [(top, top), (top, 0), (0, top), (top, 1)]
    cases += [(rng.randrange(1 << (32 * n)), rng.randrange(1 << (32 * n))) for _ in range(200)]
    for a, b in cases:
        got, dropped = run(kind, n, operands(2 * n, limbs(a, n), limbs(b, n)), 2 * n)
        assert got == a * b, (kind, hex(a), hex(b))
        assert dropped == 0


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
def test_squaring_is_exact(p, n):
    rng = random.Random(5)
    top = (1 << (32 * n)) - 1
    cases = extremes(p, n) + [top, top >> 1, 1 << (32 * n - 1)] + [rng.randrange(1 << (32 * n)) for _ in range(300)]
    for a in cases:
        got, dropped = run("sqr", n, operands(2 * n, limbs(a, n)), 2 * n)
        assert got == a * a, hex(a)
        assert dropped == 0


def redc_consts(p: int, n: int) -> tuple[list[int], list[int]]:
    return limbs(p, n), [(-pow(p, -1, 1 << 32)) % (1 << 32)]


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
def test_reduction_of_any_value_below_p_times_r(p, n):
    """REDC(T) = T R^-1 mod p, fully reduced, for T across [0, p R): the products of two elements,
    the lazy sums the XYZZ formulas feed it (up to 3 p^2), and the ends of the range."""
    r = 1 << (32 * n)
    rinv = pow(r, -1, p)
    rng = random.Random(9)
    mod, inv = redc_consts(p, n)
    ts = [0, 1, p, p * p, 2 * p * p, 3 * p * p, p * r - 1, p * r - p, r - 1, r, (p - 1) * r, (p - 1) * (r + 1)]
    ts += [rng.randrange(p * r) for _ in range(400)] + [rng.randrange(p) * rng.randrange(p) for _ in range(200)]
    for t in ts:
        assert t < p * r
        got, dropped = run("redc", n, operands(n, limbs(t, 2 * n), mod, inv), n)
        assert got == t * rinv % p, hex(t)
        assert dropped == 0


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
def test_reduction_of_a_difference_of_products(p, n):
    """redc_diff: (T1 - T2) R^-1 mod p for T1, T2 below p^2 (the products of two elements), T1 below,
    equal to and above T2, and the ends 0 and p^2 - 1."""
    r = 1 << (32 * n)
    rinv = pow(r, -1, p)
    mod, inv = redc_consts(p, n)
    rng = random.Random(13)
    ends = [0, 1, p * p - 1, (p - 1) * (p - 1), p]
    cases = [(x, y) for x in ends for y in ends]
    cases += [(rng.randrange(p) * rng.randrange(p), rng.randrange(p) * rng.randrange(p)) for _ in range(400)]
    for t1, t2 in cases:
        ops = operands(n, limbs(t1, 2 * n), limbs(t2, 2 * n), limbs(p * p, 2 * n), mod, inv)
        got, dropped = run("redcd", n, ops, n)
        assert got == (t1 - t2) * rinv % p, (hex(t1), hex(t2))
        assert dropped == 0


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
def test_reduction_of_an_fq2_middle_term(p, n):
    """redc_diff2 and wide_add, as an Fq2 product's c1 = s - v0 - v1 takes them: (Ts - (T0 + T1)) R^-1
    mod p with Ts, T0, T1 below p^2 (Ts the product of reduced sums, so the difference may be negative)."""
    r = 1 << (32 * n)
    rinv = pow(r, -1, p)
    mod, inv = redc_consts(p, n)
    rng = random.Random(17)
    ends = [0, p * p - 1, (p - 1) * (p - 1)]
    cases = [(x, y, z) for x in ends for y in ends for z in ends]
    cases += [tuple(rng.randrange(p) * rng.randrange(p) for _ in range(3)) for _ in range(300)]
    for ts, t0, t1 in cases:
        got, dropped = run("wadd", n, operands(2 * n, limbs(t0, 2 * n), limbs(t1, 2 * n)), 2 * n)
        assert got == t0 + t1 and dropped == 0
        ops = operands(n, limbs(ts, 2 * n), limbs(t0 + t1, 2 * n), limbs(2 * p * p, 2 * n), mod, inv)
        got, dropped = run("redcd2", n, ops, n)
        assert got == (ts - t0 - t1) * rinv % p, (hex(ts), hex(t0), hex(t1))
        assert dropped == 0


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
def test_fused_products_match_montgomery(p, n):
    """mul_split (Karatsuba + REDC) and sqr_split: a b / R mod p, fully reduced."""
    rinv = pow(1 << (32 * n), -1, p)
    mod, inv = redc_consts(p, n)
    for a, b in pairs(p, n, 300, 21):
        got, dropped = run("mul", n, operands(n, limbs(a, n), limbs(b, n), mod, inv), n)
        assert got == a * b * rinv % p, (hex(a), hex(b))
        assert dropped == 0
        got, dropped = run("sqrm", n, operands(n, limbs(a, n), mod, inv), n)
        assert got == a * a * rinv % p, hex(a)
        assert dropped == 0


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
def test_wide_product_counts(p, n):
    """The point of the split: wide products a kind (mad.lo/madc.hi pairs and mul.hi), against the
    fused product's 2 n^2."""
    def wides(kind: str) -> int:
        lines = gen_mont_split.product(n, kind)
        return sum(1 for ln in lines if ln.startswith(("madc.hi", "mad.hi", "mul.hi")))
    h = n // 2
    assert wides("wide") == n * n
    assert wides("kara") == 3 * h * h
    assert wides("sqr") == n * (n + 1) // 2
    assert wides("redc") == n * n
