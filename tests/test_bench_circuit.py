"""Synthetic benchmark circuits (engine.groth16.bench_circuit): satisfiable, exact size, realistic, reproducible."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_engine, run_snarkjs

from engine.groth16.bench_circuit import (
    NUM2BITS_WIDTH,
    make_bench_circuit,
    plan,
    write_bench_circuit,
)
from engine.algebra.curves import BLS12_381, BN254
from engine.errors import UnsatisfiedWitnessError
from engine.formats import read_r1cs, read_wtns
from engine.groth16.r1cs_check import check_witness
from engine.groth16.setup_scalars import log_domain

CURVES = [BN254, BLS12_381]
CURVE_IDS = [c.name for c in CURVES]


@pytest.mark.parametrize("curve", CURVES, ids=CURVE_IDS)
@pytest.mark.parametrize(("n", "public"), [(1, 0), (1, 2), (2, 1), (7, 3), (40, 0), (100, 5), (3000, 2)])
def test_bench_circuit_satisfies_its_constraints(curve, n, public):
    b = make_bench_circuit(curve, n, public, seed=n)
    check_witness(b.r1cs, b.witness, r1cs_name=f"bench-{n}", witness_name=f"bench-{n}.wtns")
    r = b.r1cs
    assert r.n_constraints == n and r.n_public == public
    assert (r.n_pub_out, r.n_pub_in) == ((public + 1) // 2, public // 2)
    assert b.witness.shape == (r.n_wires, 4) and b.witness[0].tolist() == [1, 0, 0, 0]


def test_tampered_bench_witness_is_caught():
    b = make_bench_circuit(BN254, 500, 2, seed=1)
    w = b.witness.copy()
    w[b.r1cs.n_wires // 2, 0] ^= np.uint64(1)
    with pytest.raises(UnsatisfiedWitnessError):
        check_witness(b.r1cs, w)


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_written_files_read_back_and_satisfy(curve, tmp_path):
    r1cs_path, wtns_path, b = write_bench_circuit(tmp_path / "out", curve, 1000, n_public=3, seed=4)
    r1cs, wtns = read_r1cs(r1cs_path), read_wtns(wtns_path)
    assert r1cs.curve.name == curve and wtns.prime == r1cs.prime
    assert (r1cs.n_constraints, r1cs.n_wires, r1cs.n_public) == (1000, b.r1cs.n_wires, 3)
    assert np.array_equal(wtns.values, b.witness)
    check_witness(r1cs, wtns)


def test_same_seed_gives_identical_files_and_another_seed_does_not(tmp_path):
    paths = [write_bench_circuit(tmp_path / d, "bn128", 700, n_public=2, seed=s)[:2]
             for d, s in (("a", 9), ("b", 9), ("c", 10))]
    (ra, wa), (rb, wb), (rc, wc) = [[open(p, "rb").read() for p in pair] for pair in paths]
    assert ra == rb and wa == wb
    assert wa != wc


def test_mix_is_realistic():
    """Mostly 0/1 witness values, boolean constraints, folded additions, several terms per constraint."""
    b = make_bench_circuit(BN254, 20_000, 4, seed=3)
    r, w = b.r1cs, b.witness
    small = (w[:, 1:] == 0).all(axis=1) & (w[:, 0] <= 1)
    assert 0.5 < small.mean() < 0.95
    na, nb, nc = (np.diff(lc.row_ptr) for lc in (r.a, r.b, r.c))
    assert ((na == 1) & (nb == 2) & (nc == 0)).sum() >= 0.35 * r.n_constraints  # b·(b - 1) = 0
    assert (na >= 2).sum() > 0.05 * r.n_constraints  # additions folded into A
    assert ((na == 0) & (nb == 0) & (nc == NUM2BITS_WIDTH + 1)).sum() > 0  # Num2Bits' linear constraint
    assert 3.0 < (r.a.row_ptr[-1] + r.b.row_ptr[-1] + r.c.row_ptr[-1]) / r.n_constraints < 6.0
    used_in_ab = np.union1d(r.a.wires, r.b.wires)
    assert used_in_ab.size < r.n_wires  # some wires only in C: infinity A and B points, as in real circuits
    assert sum(b.mix.values()) == r.n_constraints


def test_plan_adds_up_and_rejects_impossible_sizes():
    for n, pub in ((1, 0), (33, 1), (1 << 20, 2), (12345, 7)):
        p = plan(n, pub)
        assert p["outputs"] + p["num2bits"] + p["bitops"] + p["mux"] + p["mul"] == n
        assert p["outputs"] + p["inputs"] == pub
    with pytest.raises(ValueError, match=r"fewer than the 2 public outputs of --public 3 .*at least --constraints 2"):
        plan(1, 3)
    with pytest.raises(ValueError, match="at least 1"):
        plan(0, 0)


def test_domain_hint_gives_exact_power_of_two():
    """--constraints 2^k - public - 1 makes a key of domain exactly 2^k (what the help text promises)."""
    for k, pub in ((10, 2), (12, 0), (16, 3)):
        assert log_domain(BN254, (1 << k) - pub - 1, pub) == k
        assert log_domain(BN254, (1 << k) - pub, pub) == k + 1


def test_cli_writes_files_and_reports_json(tmp_path):
    proc = run_engine("bench-circuit", "--constraints", "300", "--curve", "bls12381", "--public", "3",
                      "--seed", "5", "--name", "c", "--json", tmp_path / "o")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["constraints"] == 300 and result["public"] == 3 and result["curve"] == "bls12381"
    assert result["domain"] == 512
    check_witness(read_r1cs(tmp_path / "o" / "c.r1cs"), read_wtns(tmp_path / "o" / "c.wtns"))


@pytest.mark.parametrize(("args", "words"), [
    (["--constraints", "0"], "at least 1"),
    (["--constraints", "10", "--curve", "pallas"], "unknown curve"),
    (["--constraints", "1", "--public", "4"], "public outputs"),
    # each of these was taken: a name that is a path wrote beside the directory or failed after the work, a
    # negative seed said numpy's "expected non-negative integer", a size beyond the curve's domain was killed for
    # memory on the way
    (["--constraints", "8", "--name", "../escape"], "'../escape' is not a file name stem"),
    (["--constraints", "8", "--name", "a/b"], "'a/b' is not a file name stem"),
    (["--constraints", "8", "--name", ""], "'' is not a file name stem"),
    (["--constraints", "8", "--seed", "-1"], "--seed must not be negative"),
    (["--constraints", "99999999999"], "need a domain of 2^37, but bn128 keys hold at most 2^28"),
    (["--constraints", str(1 << 31), "--curve", "bls12381"], "bls12381 keys hold at most 2^31"),
])
def test_cli_bad_arguments_are_one_line_errors(tmp_path, args, words):
    proc = run_engine("bench-circuit", *args, tmp_path / "o")
    assert proc.returncode == 2
    assert words in proc.stderr and proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists() and not list(tmp_path.glob("escape*"))  # refused before any work


@pytest.mark.snarkjs
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize(("n", "public"), [(50, 0), (400, 3)])
def test_snarkjs_wtns_check_accepts_bench_circuit(curve, n, public, tmp_path):
    r1cs, wtns, _ = write_bench_circuit(tmp_path, curve, n, n_public=public, seed=n)
    proc = run_snarkjs("wtns", "check", r1cs, wtns)
    assert proc.returncode == 0 and "WITNESS IS CORRECT" in proc.stdout, proc.stdout + proc.stderr
