"""The split Montgomery product of cuda_kernels/gen_mont_split.py (double-width products and
squarings; the reduction REDC, of one value or of a difference), run on the host by the PTX interpreter
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
from test_mont_eo import cases, extremes, limbs, value  # noqa: E402  (the same operands as the fused product's)


def operands(first: int, *groups: list[int]) -> dict[int, int]:
    flat = [w for g in groups for w in g]
    return {first + k: v for k, v in enumerate(flat)}


FIELDS = [(BN254.q, 8), (BLS12_381.q, 12)]
IDS = ["bn254-q", "bls12381-q"]


def run(kind: str, n: int, ops: dict[int, int], n_out: int) -> tuple[int, int]:
    """The result, and how many carries the chains dropped (none may)."""
    stats: dict = {}
    got = ptx_sim.run(gen_mont_split.product(n, kind), ops, n_out, stats)
    return value(got), stats.get("dropped", 0)


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
@pytest.mark.parametrize("kind", ["wide"])
def test_double_width_products_are_exact(p, n, kind):
    """a b in 2n words for every pair of words below 2^(32n) (not only below p)."""
    rng = random.Random(11)
    top = (1 << (32 * n)) - 1
    todo = list(cases(p, 300, 3, n)) + [(top, top), (top, 0), (0, top), (top, 1)]
    todo += [(rng.randrange(1 << (32 * n)), rng.randrange(1 << (32 * n))) for _ in range(200)]
    for a, b in todo:
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
def test_fq2_product_from_double_width_pieces(p, n):
    """The Fq2 product over the split form (field.cuh fp2 operator*): w0 = a0 b0, w1 = a1 b1,
    ws = (a0 + a1 mod p)(b0 + b1 mod p), each by the "wide" body; redc_diff2 (ws + 2 p^2 - (w0 + w1)) / R
    (the sum added in C++ by field.cuh): c1 = (a0 b1 + a1 b0) / R mod p though ws < w0 + w1 as integers,
    fully reduced; the end T2 = 2 (p - 1)^2 with T1 = 0."""
    r = 1 << (32 * n)
    rinv = pow(r, -1, p)
    mod, inv = redc_consts(p, n)
    rng = random.Random(31)
    ext = [0, 1, p - 1, p - 2, (p + 1) // 2]
    quads = [(a0, a1, b0, b1) for a0 in ext for a1 in ext for b0 in (0, p - 1) for b1 in (1, p - 1)]
    quads += [tuple(rng.randrange(p) for _ in range(4)) for _ in range(300)]
    for a0, a1, b0, b1 in quads:
        w0, w1, ws = a0 * b0, a1 * b1, (a0 + a1) % p * ((b0 + b1) % p)
        assert run("wide", n, operands(2 * n, limbs((a0 + a1) % p, n), limbs((b0 + b1) % p, n)), 2 * n) == (ws, 0)
        ops = operands(n, limbs(ws, 2 * n), limbs(w0 + w1, 2 * n), limbs(2 * p * p, 2 * n), mod, inv)
        got, dropped = run("redcd2", n, ops, n)
        assert got == (a0 * b1 + a1 * b0) * rinv % p, (a0, a1, b0, b1)
        assert dropped == 0
    ops = operands(n, limbs(0, 2 * n), limbs(2 * (p - 1) ** 2, 2 * n), limbs(2 * p * p, 2 * n), mod, inv)
    assert run("redcd2", n, ops, n)[0] == -2 * (p - 1) ** 2 * rinv % p


@pytest.mark.parametrize("p,n", FIELDS, ids=IDS)
def test_fused_squaring_matches_montgomery(p, n):
    """sqr_split: a^2 / R mod p, fully reduced."""
    rinv = pow(1 << (32 * n), -1, p)
    mod, inv = redc_consts(p, n)
    for a, _ in cases(p, 300, 21, n):
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
    assert wides("wide") == n * n
    assert wides("sqr") == n * (n + 1) // 2
    assert wides("redc") == n * n


def first_output_write_and_last_input_read(lines: list[str], n_out: int) -> tuple[int, int]:
    """Line indices: the first instruction writing an output operand %0..%(n_out-1), the last reading
    any other operand."""
    first_write, last_read = len(lines), -1
    for k, line in enumerate(lines):
        toks = [t.strip() for t in line.strip().rstrip(";").replace(",", " ").split()[1:]]
        if not toks or line.startswith(("{", "}", ".reg")):
            continue
        dst, srcs = toks[0], toks[1:]
        if dst.startswith("%") and int(dst[1:]) < n_out:
            first_write = min(first_write, k)
        if any(t.startswith("%") and int(t[1:]) >= n_out for t in srcs):
            last_read = k
    return first_write, last_read


def test_outputs_are_written_after_the_last_input_is_read():
    """An asm output may share a register with an input unless it is early-clobbered: every body a
    wrapper compiles writes its outputs only after its last read of an input, and the wrappers declare
    them "=&r" besides (the bare squaring's diagonal chain writes outputs early: it runs only inside
    sqr_split, into its own registers)."""
    text = gen_mont_split.wrappers(8) + gen_mont_split.wrappers(12)
    assert '"=r"(' not in text and text.count('"=&r"(') > 0
    for n in (8, 12):
        for kind, n_out in (("wide", 2 * n), ("redcd", n), ("redcd2", n), ("sqrm", n), ("redc", n)):
            first, last = first_output_write_and_last_input_read(gen_mont_split.product(n, kind), n_out)
            assert first > last, kind
        first, last = first_output_write_and_last_input_read(gen_mont_split.product(n, "sqr"), 2 * n)
        assert first < last
