"""Edges of the prover pipeline on the CPU backend: a key whose own points are broken, a witness whose w[0] is
not 1, the constraint check naming the failing row, witnesses of another circuit or unreduced, random
circuits of many shapes checked by snarkjs and our verifier, and proofs whose public signals are 0 and r - 1."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLES, FIXTURES, run_engine
from engine.backends.cpu import CpuBackend
from engine.errors import EngineError, FormatError, UnsatisfiedWitnessError
from engine.formats import read_wtns, read_zkey
from engine.formats.wtns import write_wtns
from engine.groth16.prover import prove

TINY = FIXTURES / "tiny"


# where each header point lies in section 2, after n8q, q, n8r, r, nVars, nPublic, domainSize (G1: 2 coordinates,
# G2: 4), and the name snarkjs gives it
HEADER_POINTS = [("alpha1", 0, "vk_alpha_1"), ("beta1", 2, "vk_beta_1"), ("beta2", 4, "vk_beta_2"),
                 ("gamma2", 8, "vk_gamma_2"), ("delta1", 12, "vk_delta_1"), ("delta2", 14, "vk_delta_2")]


def copies(tmp_path: Path, curve: str = "bn128") -> dict[str, Path]:
    """Writable copies of the tiny circuit's key, witness and r1cs; outputs in tmp_path/out/."""
    out = {}
    for ext in ("zkey", "wtns", "r1cs"):
        out[ext] = tmp_path / f"tiny.{ext}"
        shutil.copyfile(TINY / curve / f"tiny.{ext}", out[ext])
    (tmp_path / "out").mkdir()
    out["proof"], out["public"] = tmp_path / "out" / "proof.json", tmp_path / "out" / "public.json"
    return out


def break_point(zkey: Path, which: str) -> None:
    """Flip one bit of a point's y (the point leaves its curve): a header point by its field name, or "ic1"."""
    z = read_zkey(zkey)
    n8q = z.curve.n8q
    if which.startswith("ic"):
        off = z.sections[3][0] + int(which[2:]) * 2 * n8q + n8q
    else:
        coord = next(c for name, c, _ in HEADER_POINTS if name == which)
        off = z.sections[2][0] + 4 + n8q + 4 + 32 + 12 + coord * n8q + (2 * n8q if which.endswith("2") else n8q)
    del z
    data = bytearray(zkey.read_bytes())
    data[off] ^= 1
    zkey.write_bytes(bytes(data))


def one_error_line(proc, *words: str) -> str:
    """The CLI contract for a user's mistake: one line saying `words`, a non-zero exit, no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 0, f"exit 0 on a bad input:\n{proc.stdout}\n{proc.stderr}"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{proc.stderr}"
    for word in words:
        assert re.search(word, lines[0], re.IGNORECASE), f"the error does not say /{word}/: {lines[0]}"
    return lines[0]


def cpu() -> CpuBackend:
    return CpuBackend(workers=1)


# ---------------------------------------------------------------- a key whose own points are broken


@pytest.mark.parametrize("which", ["alpha1", "ic1"])
def test_prove_no_verify_refuses_a_key_with_a_broken_vk_point(tmp_path, which):
    """--no-verify skips the proof's check, not the key's: export-vkey refuses this key, so must prove."""
    f = copies(tmp_path)
    break_point(f["zkey"], which)
    proc = run_engine("prove", "--no-verify", "--backend", "cpu", f["zkey"], f["wtns"], f["proof"], f["public"])
    name = dict((n, v) for n, _, v in HEADER_POINTS).get(which, "IC\\[1\\]")
    one_error_line(proc, re.escape(str(f["zkey"])), name, "not a point")
    assert not f["proof"].exists() and not f["public"].exists()


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("which", [name for name, _, _ in HEADER_POINTS] + ["ic0"])
def test_api_prove_refuses_a_broken_key_point_before_any_work(tmp_path, curve, which):
    f = copies(tmp_path, curve)
    break_point(f["zkey"], which)
    zkey, w = read_zkey(f["zkey"]), read_wtns(f["wtns"])

    class NoWork(CpuBackend):
        def prove_core(self, *a, **k):
            raise AssertionError("the backend ran for a broken key")

    for verify in (False, True):
        with pytest.raises(FormatError, match=rf"{re.escape(str(f['zkey']))}: .*not a point"):
            prove(zkey, w.values, NoWork(workers=1), verify=verify)


def test_engine_no_verify_refuses_a_broken_key_point(tmp_path):
    from engine import EngineConfig, prove_files

    f = copies(tmp_path)
    break_point(f["zkey"], "alpha1")
    with pytest.raises(FormatError, match="vk_alpha_1"):
        prove_files(str(f["zkey"]), [str(f["wtns"])], config=EngineConfig(backend="cpu", verify=False))


# ---------------------------------------------------------------- w[0] is the constant 1


def set_value(wtns: Path, row: int, value: int) -> None:
    w = read_wtns(wtns)
    values, prime = np.array(w.values), w.prime
    del w
    values[row] = [(value >> (64 * i)) & ((1 << 64) - 1) for i in range(4)]
    write_wtns(wtns, prime, values)


@pytest.mark.parametrize("value", [0, 2])
def test_prove_names_a_w0_that_is_not_one(tmp_path, value):
    f = copies(tmp_path)
    set_value(f["wtns"], 0, value)
    proc = run_engine("prove", "--backend", "cpu", f["zkey"], f["wtns"], f["proof"], f["public"])
    one_error_line(proc, re.escape(str(f["wtns"])), r"w\[0\]", "constant")
    assert not f["proof"].exists()


@pytest.mark.parametrize("verify", [False, True])
def test_api_prove_names_a_w0_that_is_not_one_before_any_work(tmp_path, verify):
    f = copies(tmp_path, "bls12381")
    set_value(f["wtns"], 0, 5)
    zkey, w = read_zkey(f["zkey"]), read_wtns(f["wtns"])

    class NoWork(CpuBackend):
        def prove_core(self, *a, **k):
            raise AssertionError("the backend ran for a witness whose w[0] is not 1")

    with pytest.raises(EngineError, match=r"w\[0\] = 5.*constant"):
        prove(zkey, w.values, NoWork(workers=1), witness_name="mine.wtns", verify=verify)


# ---------------------------------------------------------------- circuits made here, proofs checked by snarkjs


def lcs(rows: list[dict[int, int]], r: int):
    """One matrix from a {wire: coefficient} per constraint."""
    from engine.algebra.limbs import fr_from_ints
    from engine.formats.r1cs import LinearCombinations

    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    for i, row in enumerate(rows):
        ptr[i + 1] = ptr[i] + len(row)
    wires = [wire for row in rows for wire in row]
    coeffs = [c % r for row in rows for c in row.values()]
    return LinearCombinations(ptr, np.array(wires, dtype=np.uint32),
                              fr_from_ints(coeffs) if coeffs else np.zeros((0, 4), dtype=np.uint64))


def squares(curve_name: str, public: list[int], m: int):
    """Public inputs `public` and m constraints p * p = s_i (p cycling over them), each s_i private and used by its
    constraint alone: (r1cs, witness as ints)."""
    from engine.algebra.curves import curve_by_name
    from engine.formats.r1cs import R1CS

    curve = curve_by_name(curve_name)
    r, npub = curve.r, len(public)
    a, b, c, w = [], [], [], [1, *public]
    for i in range(m):
        src = 1 + i % npub
        a.append({src: 1}), b.append({src: 1}), c.append({1 + npub + i: 1})
        w.append(public[i % npub] ** 2 % r)
    wires = 1 + npub + m
    return R1CS(r, curve, wires, 0, npub, 0, wires, m, lcs(a, r), lcs(b, r), lcs(c, r)), w


def key_files(tmp_path: Path, r1cs, w: list[int], name: str = "c") -> dict[str, Path]:
    """The circuit's .r1cs, .wtns and a development .zkey (this engine's setup, on the CPU) in tmp_path."""
    from engine.algebra.limbs import fr_from_ints
    from engine.formats import write_zkey
    from engine.formats.r1cs import write_r1cs
    from engine.groth16.setup import setup
    from engine.groth16.setup_points import CpuSetupOps

    f = {ext: tmp_path / f"{name}.{ext}" for ext in ("r1cs", "wtns", "zkey")}
    write_r1cs(f["r1cs"], r1cs)
    write_wtns(f["wtns"], r1cs.prime, fr_from_ints(w))
    write_zkey(f["zkey"], setup(r1cs, CpuSetupOps(workers=1), path=str(f["zkey"])))
    return f


def snarkjs_and_we_accept(tmp_path: Path, zkey_path: Path, proof) -> None:
    """The proof verifies with snarkjs's `groth16 verify` and with ours, against the key's exported vkey."""
    from conftest import run_snarkjs
    from engine.formats.json import write_vkey
    from engine.groth16.verifier import verify, vk_from_zkey

    vk = vk_from_zkey(read_zkey(zkey_path))
    assert verify(vk, proof.public, proof)
    files = [tmp_path / n for n in ("vk.json", "public.json", "proof.json")]
    write_vkey(files[0], vk)
    proof.write(files[2], files[1])
    proc = run_snarkjs("groth16", "verify", *files)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_public_signals_zero_and_r_minus_one_prove_and_verify(tmp_path, curve):
    from engine.algebra.curves import curve_by_name

    r = curve_by_name(curve).r
    public = [0, r - 1, 1, r - 2]
    f = key_files(tmp_path, *squares(curve, public, 5))
    proof = prove(read_zkey(f["zkey"]), read_wtns(f["wtns"]).values, cpu())
    assert proof.public == public
    assert '"0"' in proof.public_json() and f'"{r - 1}"' in proof.public_json()
    snarkjs_and_we_accept(tmp_path, f["zkey"], proof)


@pytest.mark.parametrize("curve, constraints, public", [
    ("bn128", 1, 0), ("bls12381", 1, 1), ("bn128", 13, 2), ("bls12381", 14, 0), ("bn128", 29, 2),
])
def test_bench_circuits_of_many_shapes_prove_twice_differently_and_verify(tmp_path, curve, constraints, public):
    """1 constraint, no public signal, domains just below and at a power of two (N + public + 1 = 2^k)."""
    from engine.algebra.curves import curve_by_name
    from engine.algebra.limbs import to_ints
    from engine.groth16.bench_circuit import make_bench_circuit

    bench = make_bench_circuit(curve_by_name(curve), constraints, public, seed=3)
    f = key_files(tmp_path, bench.r1cs, to_ints(bench.witness))
    zkey, backend = read_zkey(f["zkey"]), cpu()
    key = backend.load_key(zkey)
    one, two = (prove(zkey, bench.witness, backend, key) for _ in range(2))
    assert one.to_json() != two.to_json(), "two proofs of one witness are equal: r and s are not random"
    assert one.public == two.public == to_ints(bench.witness[1:public + 1])
    snarkjs_and_we_accept(tmp_path, f["zkey"], one)
    from engine.groth16.verifier import verify, vk_from_zkey

    assert verify(vk_from_zkey(zkey), two.public, two)


# ---------------------------------------------------------------- the constraint check names the failing row


@pytest.mark.parametrize("row", [0, 6, 11])
def test_r1cs_check_names_the_one_failing_constraint(tmp_path, row):
    from engine.algebra.limbs import fr_from_ints
    from engine.groth16.r1cs_check import check_witness

    r1cs, w = squares("bn128", [3, 4, 5], 12)
    w[1 + 3 + row] += 1  # s_row, used by constraint `row` alone
    message = rf"^mine does not satisfy c.r1cs: constraint {row} fails:"
    with pytest.raises(UnsatisfiedWitnessError, match=message) as info:
        check_witness(r1cs, fr_from_ints(w), witness_name="mine", r1cs_name="c.r1cs")
    assert info.value.constraint == row and "constraints fail" not in str(info.value)


def test_prove_r1cs_names_the_last_constraint(tmp_path):
    r1cs, w = squares("bls12381", [7, 9], 6)
    w[-1] += 1
    f = key_files(tmp_path, r1cs, w)
    out = tmp_path / "p.json", tmp_path / "pub.json"
    proc = run_engine("prove", "--backend", "cpu", "--r1cs", f["r1cs"], f["zkey"], f["wtns"], *out)
    one_error_line(proc, re.escape(str(f["wtns"])), re.escape(str(f["r1cs"])), r"constraint 5 fails")
    assert not any(p.exists() for p in out)


def two_circuits_of_one_shape(tmp_path: Path):
    """Files of two bench circuits with the same counts (wires, public signals, constraints), not the same
    constraints: (files of the first, files of the second)."""
    from engine.algebra.curves import curve_by_name
    from engine.algebra.limbs import to_ints
    from engine.groth16.bench_circuit import make_bench_circuit

    made = []
    for seed in (0, 7):
        bench = make_bench_circuit(curve_by_name("bn128"), 20, 2, seed=seed)
        (tmp_path / str(seed)).mkdir()
        made.append(key_files(tmp_path / str(seed), bench.r1cs, to_ints(bench.witness)))
    return made


def test_prove_r1cs_of_another_circuit_of_the_same_shape_is_named(tmp_path):
    """The r1cs and witness of circuit B with the key of A: the witness satisfies the r1cs, and the proof cannot
    verify; "does not verify ... --r1cs names the first failing constraint" misled (--r1cs was given, and
    passed).  The r1cs is compared with the key's constraints first."""
    one, other = two_circuits_of_one_shape(tmp_path)
    out = tmp_path / "p.json", tmp_path / "pub.json"
    proc = run_engine("prove", "--backend", "cpu", "--r1cs", other["r1cs"], one["zkey"], other["wtns"], *out)
    one_error_line(proc, re.escape(str(other["r1cs"])), re.escape(str(one["zkey"])), "another circuit")
    assert not any(p.exists() for p in out)


def test_r1cs_check_against_its_own_key_passes_and_another_key_is_refused(tmp_path):
    from engine.errors import MismatchError
    from engine.formats import read_r1cs
    from engine.groth16.r1cs_check import check_witness

    one, other = two_circuits_of_one_shape(tmp_path)
    values = read_wtns(other["wtns"]).values
    check_witness(read_r1cs(other["r1cs"]), values, zkey=read_zkey(other["zkey"]))
    with pytest.raises(MismatchError, match=rf"{re.escape(str(other['r1cs']))}: .*another circuit"):
        check_witness(read_r1cs(other["r1cs"]), values, zkey=read_zkey(one["zkey"]))


def test_r1cs_against_a_key_whose_entries_are_in_another_order_or_differ_in_one_value():
    """Keys from other writers may order the coeffs otherwise: that is the same circuit.  One changed value is not,
    and the message names its constraint."""
    import dataclasses

    from engine.errors import MismatchError
    from engine.formats import read_r1cs
    from engine.groth16.r1cs_check import check_r1cs_for_key

    src = EXAMPLES / "bn128" / "sudoku"
    zkey, r1cs = read_zkey(f"{src}.zkey"), read_r1cs(f"{src}.r1cs")
    coeffs = np.array(zkey.coeffs)[::-1].copy()
    check_r1cs_for_key(r1cs, dataclasses.replace(zkey, coeffs=coeffs))
    i = int(np.flatnonzero(coeffs["row"] == 40)[0])
    coeffs["value"][i, 0] ^= 1
    with pytest.raises(MismatchError, match=r"not the circuit of .*constraint 40 differ"):
        check_r1cs_for_key(r1cs, dataclasses.replace(zkey, coeffs=coeffs))
