"""Witness against constraints: the first failing constraint is named with its A·w, B·w, C·w."""
from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.errors import CurveMismatchError, MismatchError, UnsatisfiedWitnessError
from engine.formats import read_r1cs, read_wtns
from engine.formats.r1cs import R1CS, LinearCombinations
from engine.algebra.limbs import from_ints, to_ints
from engine.groth16.r1cs_check import _field_ints, check_witness

FIX = Path(__file__).resolve().parent / "fixtures" / "tiny"
CURVES = ["bn128", "bls12381"]


def load(curve: str):
    return read_r1cs(FIX / curve / "tiny.r1cs"), read_wtns(FIX / curve / "tiny.wtns")


def slow_failures(r1cs: R1CS, w: list[int]) -> list[int]:
    """Reference: evaluate each constraint term by term."""
    r, bad = r1cs.prime, []

    def ev(lc, i):
        lo, hi = int(lc.row_ptr[i]), int(lc.row_ptr[i + 1])
        cs = to_ints(lc.coeffs[lo:hi]) if hi > lo else []
        return sum(c * w[int(x)] for c, x in zip(cs, lc.wires[lo:hi])) % r

    for i in range(r1cs.n_constraints):
        if (ev(r1cs.a, i) * ev(r1cs.b, i) - ev(r1cs.c, i)) % r:
            bad.append(i)
    return bad


@pytest.mark.parametrize("curve", CURVES)
def test_snarkjs_witness_satisfies_its_circuit(curve):
    r1cs, wtns = load(curve)
    check_witness(r1cs, wtns)
    check_witness(r1cs, wtns.values, r1cs_name="tiny.r1cs", witness_name="tiny.wtns", prime=wtns.prime)


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("wire", [1, 2, 3, 4, 5, 6])
def test_tampered_witness_names_first_failing_constraint(curve, wire):
    r1cs, wtns = load(curve)
    w = to_ints(wtns.values)
    w[wire] = (w[wire] + 1) % r1cs.prime
    expected = slow_failures(r1cs, w)
    assert expected, "every wire of tiny.circom is constrained"
    with pytest.raises(UnsatisfiedWitnessError) as e:
        check_witness(r1cs, from_ints(w, 4), r1cs_name="tiny.r1cs", witness_name="tiny.wtns")
    msg = str(e.value)
    assert e.value.constraint == expected[0]
    assert f"constraint {expected[0]} fails" in msg and "tiny.wtns" in msg and "tiny.r1cs" in msg
    assert "A·w = " in msg and "B·w = " in msg and "C·w = " in msg and "\n" not in msg


def test_failure_shows_small_negative_values_as_negative():
    r1cs, wtns = load("bn128")
    w = to_ints(wtns.values)
    w[5] = 6  # b = 6: t = a*b = 55 no longer holds (constraint 0: -a * b = -t)
    with pytest.raises(UnsatisfiedWitnessError) as e:
        check_witness(r1cs, from_ints(w, 4))
    assert "A·w = -11, B·w = 6, C·w = -55, but A·w·B·w = -66" in str(e.value)


def test_wire_zero_must_be_one():
    r1cs, wtns = load("bn128")
    w = to_ints(wtns.values)
    w[0] = 2
    with pytest.raises(UnsatisfiedWitnessError, match=r"w\[0\] = 2"):
        check_witness(r1cs, from_ints(w, 4), witness_name="x.wtns")


def test_witness_of_another_size_is_mismatch():
    r1cs, wtns = load("bn128")
    with pytest.raises(MismatchError, match="x.wtns: has 6 values but tiny.r1cs has 7 wires"):
        check_witness(r1cs, wtns.values[:6], r1cs_name="tiny.r1cs", witness_name="x.wtns")


def test_witness_of_another_curve_is_curve_mismatch():
    r1cs, _ = load("bn128")
    _, bls_wtns = load("bls12381")
    with pytest.raises(CurveMismatchError) as e:
        check_witness(r1cs, bls_wtns, r1cs_name="tiny.r1cs")
    assert "bls12381" in str(e.value) and "bn128" in str(e.value) and str(bls_wtns.path) in str(e.value)


@pytest.mark.parametrize("curve", [BN254, BLS12_381])
def test_fast_int_paths_agree_with_plain_conversion(curve):
    rng = random.Random(11)
    r = curve.r
    vals = [0, 1, 2, (1 << 64) - 1, 1 << 64, r - 1, r - 2, r - (1 << 64) + 1, r - (1 << 64), r - (1 << 65)]
    vals += [rng.randrange(r) for _ in range(200)] + [rng.randrange(1 << 64) for _ in range(50)]
    vals += [r - rng.randrange(1, 1 << 64) for _ in range(50)]
    got = _field_ints(from_ints(vals, 4), r)
    assert [int(g) % r for g in got] == vals


def chain_circuit(m: int, seed: int = 1):
    """m constraints (x_i + 3·y_i)·y_i = z_i − x_i over random 254-bit values (a worst case for ints)."""
    rnd = random.Random(seed)
    r = BN254.r
    xs = [rnd.randrange(r) for _ in range(m)]
    ys = [rnd.randrange(r) for _ in range(m)]
    w = [1] + [v for x, y in zip(xs, ys) for v in (x, y, ((x + 3 * y) * y + x) % r)]
    rows = np.arange(m, dtype=np.int64)

    def mk(cols, coeffs):
        k = len(cols)
        return LinearCombinations(
            np.arange(m + 1, dtype=np.int64) * k,
            np.stack(cols, axis=1).reshape(-1).astype(np.uint32),
            np.tile(from_ints(coeffs, 4), (m, 1)),
        )

    a = mk([1 + 3 * rows, 2 + 3 * rows], [1, 3])
    b = mk([2 + 3 * rows], [1])
    c = mk([3 + 3 * rows, 1 + 3 * rows], [1, r - 1])
    n = 1 + 3 * m
    return R1CS(r, BN254, n, 0, 0, 0, n, m, a, b, c), from_ints(w, 4)


def test_check_on_many_constraints_finds_a_late_failure():
    r1cs, values = chain_circuit(1 << 14)
    check_witness(r1cs, values)
    values[3 * 16000 + 3, 0] ^= 1  # z of constraint 16000
    with pytest.raises(UnsatisfiedWitnessError) as e:
        check_witness(r1cs, values)
    assert e.value.constraint == 16000


@pytest.mark.slow
def test_check_of_2_20_constraints_takes_seconds():
    r1cs, values = chain_circuit(1 << 20)
    t = time.perf_counter()
    check_witness(r1cs, values)
    dt = time.perf_counter() - t
    print(f"check_witness: 2^20 constraints, 5 terms each, random 254-bit witness: {dt:.2f} s")
    assert dt < 60
