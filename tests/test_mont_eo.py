"""The even/odd product chains of cuda_kernels/gen_mont_eo.py, run on the host by a PTX
interpreter (tests/ptx_sim.py) against Python integers: seeded random operands and the
extremes (0, 1, p-1, operands whose products fill every word)."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from cuda_kernels import gen_mont_eo
from engine.algebra.curves import BLS12_381, BN254

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ptx_sim  # noqa: E402

N = 8
R = 1 << (32 * N)


def limbs(x: int, n: int = N) -> list[int]:
    return [(x >> (32 * j)) & 0xFFFFFFFF for j in range(n)]


def value(ws: list[int]) -> int:
    return sum(w << (32 * j) for j, w in enumerate(ws))


def operands(*groups: list[int], n: int = N) -> dict[int, int]:
    """%n.. numbering after the n outputs: each group's words in order."""
    flat = [w for g in groups for w in g]
    return {n + k: v for k, v in enumerate(flat)}


def extremes(p: int, n: int = N) -> list[int]:
    r = 1 << (32 * n)
    return [0, 1, 2, p - 1, p - 2, (p - 1) // 2, r % p, (r - 1) % p, (1 << 128) - 1, p - (1 << 200),
            (1 << (32 * n - 32)) - 1, p - (1 << (32 * n - 64))]


def shoup(p: int, x: int, w: int) -> tuple[int, int]:
    lines, _ = gen_mont_eo.mul_shoup_eo(N)
    ws = w * R // p
    ops = operands(limbs(x), limbs(w), limbs(ws), limbs(p), limbs(R - p))
    return value(ptx_sim.run(lines, ops, N)), x * w % p


def mont(p: int, a: int, b: int, n: int = N, stats: dict | None = None) -> tuple[int, int]:
    lines, _ = gen_mont_eo.mul_mont_eo(n)
    inv = (-pow(p, -1, 1 << 32)) % (1 << 32)
    ops = operands(limbs(a, n), limbs(b, n), limbs(p, n), [inv], n=n)
    got = ptx_sim.run(lines, ops, n, stats) if stats is not None else ptx_sim.run(lines, ops, n)
    return value(got), a * b * pow(1 << (32 * n), -1, p) % p


def cases(p: int, count: int, seed: int, n: int = N):
    rng = random.Random(seed)
    ext = extremes(p, n)
    for x in ext:
        for y in ext:
            yield x, y
    for _ in range(count):
        yield rng.randrange(p), rng.randrange(p)


@pytest.mark.parametrize("p", [BN254.r, BLS12_381.r], ids=["bn128-fr", "bls12381-fr"])
def test_shoup_even_odd_matches_python(p):
    assert 2 * p < R  # the product's precondition (one conditional subtraction)
    for x, w in cases(p, 400, 1):
        got, want = shoup(p, x, w)
        assert got == want, (x, w)


@pytest.mark.parametrize("p", [BN254.r, BLS12_381.r], ids=["bn128-fr", "bls12381-fr"])
def test_shoup_quotient_chains_drop_no_carry(p):
    """Only the low half (x w + q p' mod 2^256) may lose carries out of its top word; the
    quotient's chains end where their bound says nothing carries out."""
    lines, _ = gen_mont_eo.mul_shoup_eo(N)
    cut = next(k for k, ln in enumerate(lines) if ln.startswith("add.cc.u32 q0"))
    quotient = lines[:cut]
    stats: dict = {}
    for x, w in cases(p, 200, 4):
        ws = w * R // p
        ops = operands(limbs(x), limbs(w), limbs(ws), limbs(p), limbs(R - p))
        ptx_sim.run(quotient + [f"add.u32 %{k}, 0, 0;" for k in range(N)], ops, N, stats)
    assert stats.get("dropped", 0) == 0


@pytest.mark.parametrize("p", [BN254.r, BLS12_381.r, BN254.q], ids=["bn128-fr", "bls12381-fr", "bn128-fq"])
def test_montgomery_even_odd_matches_python(p):
    """Both scalar fields (the NTT) and BN254's base field (GROTH16_FIELD_MUL=eo, the MSM's experiment)."""
    lines, _ = gen_mont_eo.mul_mont_eo(N)
    for a, b in cases(p, 300, 2):
        got, want = mont(p, a, b)
        assert got == want, (a, b)


def test_montgomery_even_odd_drops_no_carry():
    """Every chain of the Montgomery form ends where its bound says nothing carries out: the
    interpreter counts any carry an instruction without .cc would lose."""
    p = BLS12_381.r  # one spare bit only: the tighter case
    lines, _ = gen_mont_eo.mul_mont_eo(N)
    inv = (-pow(p, -1, 1 << 32)) % (1 << 32)
    stats: dict = {}
    for a, b in cases(p, 200, 3):
        ptx_sim.run(lines, operands(limbs(a), limbs(b), limbs(p), [inv]), N, stats)
    assert stats.get("dropped", 0) == 0


def test_montgomery_even_odd_on_bls12381_fq_twelve_limbs():
    """BLS12-381's base field (12 limbs, p < 2^381: the MSM's eo builds since b13bls): the product on
    random and extreme operands, and no chain drops a carry."""
    p = BLS12_381.q
    assert p < 1 << (32 * 12 - 1)  # the product's precondition
    stats: dict = {}
    for a, b in cases(p, 300, 6, n=12):
        got, want = mont(p, a, b, n=12, stats=stats)
        assert got == want, (a, b)
    assert stats.get("dropped", 0) == 0


def test_twelve_limb_products_are_the_fusable_pattern():
    """144 products a row pair each (a * b_i and m * p over 12 rows): every one a lo/hi pair but
    the first row's plain products."""
    lines, _ = gen_mont_eo.mul_mont_eo(12)
    ins = [ln.rstrip(";").split(None, 1) for ln in lines if ln.startswith("mad")]
    pairs = sum(1 for (o1, a1), (o2, a2) in zip(ins, ins[1:])
                if ".lo" in o1 and ".hi" in o2 and a1.split(",")[1:3] == a2.split(",")[1:3])
    assert pairs == 2 * 144 - 12


def test_products_are_the_fusable_pattern():
    """Each low-word multiply-add of a pair is followed by the high word of the same product
    (what ptxas fuses into one IMAD.WIDE.U32.X)."""
    for lines in (gen_mont_eo.mul_shoup_eo(N)[0], gen_mont_eo.mul_mont_eo(N)[0]):
        ins = [ln.rstrip(";").split(None, 1) for ln in lines if ln.startswith("mad")]
        pairs = sum(1 for (o1, a1), (o2, a2) in zip(ins, ins[1:])
                    if ".lo" in o1 and ".hi" in o2 and a1.split(",")[1:3] == a2.split(",")[1:3])
        assert pairs >= 56


def _shoup_quotient(x: int, ws: int) -> int:
    """The quotient the Shoup chains compute: columns >= N-1 of x * ws plus the high words of column N-2."""
    xs, ys = limbs(x), limbs(ws)
    t = 0
    for i in range(N):
        for j in range(N):
            prod = xs[i] * ys[j]
            if i + j >= N - 1:
                t += prod << (32 * (i + j))
            elif i + j == N - 2:
                t += (prod >> 32) << (32 * (N - 1))
    return t >> (32 * N)


def test_shoup_quotient_is_at_most_one_low():
    """q falls short of floor(x w / p) in two ways: the truncated columns can lose the carry into
    column N (only when x * ws mod 2^256 is below the dropped part, < 13 * 2^224), and ws itself
    is rounded down (only when the fraction of x * ws / 2^256 is above 1 - x / 2^256 > 1 - p / 2^256).
    The two conditions exclude each other, so r = x w - q p < 2p: operands made to force the first
    (x * ws just above a multiple of 2^256) and random ones (where the second happens) show both
    errors, never together, for both scalar fields; the chains give the right product on them
    (BLS12-381's Fr included, where 3p > 2^256 but 2p < 2^256)."""
    for p in (BN254.r, BLS12_381.r):
        rng = random.Random(5)
        forced = rounded = 0
        cases = []
        for _ in range(60):
            w = rng.randrange(1, p)
            ws = w * R // p
            if ws % 2:
                inv = pow(ws, -1, R)
                x = next(t * inv % R for t in range(1, 10**6) if t * inv % R < p)
                cases.append((x, w))
            cases.append((rng.randrange(p), w))
        for x, w in cases:
            ws = w * R // p
            q = _shoup_quotient(x, ws)
            lost = x * ws // R - q
            short = x * w // p - x * ws // R
            assert lost in (0, 1) and short in (0, 1) and lost + short <= 1
            forced += lost
            rounded += short
            assert 0 <= x * w - q * p < 2 * p
            got, want = shoup(p, x, w)
            assert got == want, (x, w)
        assert forced >= 10 and rounded >= 5
