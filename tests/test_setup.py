"""Development Groth16 keys (engine.setup): the math of every point, the snarkjs layout, interop.

The algebraic tests rebuild each point of a key from known toxic waste with
textbook formulas (Lagrange products, scalar multiplication); the interop
tests prove with snarkjs and with our prover on our keys and verify with
snarkjs, using both our exported verification key and snarkjs's.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import CIRCUITS, FIXTURES, circom_compile, run_engine, run_snarkjs, witness_calculate

from engine.groth16 import setup_scalars as setup_math
from scheduler import setup_pool
from engine.groth16.bench_circuit import write_bench_circuit
from engine.algebra.curves import BLS12_381, BN254, curve_by_name
from engine.algebra.ec import g1_mul, g2_mul
from engine.errors import BackendUnavailableError, CurveMismatchError
from engine.formats import read_r1cs, read_zkey, write_r1cs, write_wtns, write_zkey
from engine.formats.r1cs import R1CS, LinearCombinations
from engine.algebra.limbs import fr_from_ints, g1_from_mont, g2_from_mont, to_ints
from engine.groth16.setup import draw_toxic_waste, generate_key, select_setup_ops, setup
from engine.groth16.setup_scalars import coeff_entries, coset_lagrange_at, lagrange_at, log_domain
from engine.groth16.setup_points import CpuSetupOps, ToxicWaste, choose_window, scalar_digits

CURVES = [BN254, BLS12_381]
CURVE_IDS = [c.name for c in CURVES]


# ---------------------------------------------------------------- helpers
def direct_lagrange(points: list[int], t: int, x: int, r: int) -> int:
    """L_t(x) on the given points by the product formula (no closed form)."""
    num, den = 1, 1
    for s, p in enumerate(points):
        if s != t:
            num = num * (x - p) % r
            den = den * (points[t] - p) % r
    return num * pow(den, -1, r) % r


def make_lc(curve, rows: list[list[tuple[int, int]]]) -> LinearCombinations:
    counts = [len(row) for row in rows]
    row_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=row_ptr[1:])
    terms = [t for row in rows for t in row]
    wires = np.array([w for w, _ in terms], dtype=np.uint32)
    coeffs = fr_from_ints([c % curve.r for _, c in terms]) if terms else np.zeros((0, 4), np.uint64)
    return LinearCombinations(row_ptr, wires, coeffs)


def edge_circuit(curve, public: bool) -> tuple[R1CS, list[int]]:
    """x·y = t; (-x)·z = -u; t - x - v = 0 (A, B empty); (t + 2)·1 = t + 2.

    z is only in B (its A point is infinity), u only in C, a -1 coefficient on
    the A side, wire 0 in A and B.  public: outputs t, u and input x; else no
    public signal at all.
    """
    order = ["one", "t", "u", "x", "y", "z", "v"] if public else ["one", "x", "y", "z", "t", "u", "v"]
    w = {name: i for i, name in enumerate(order)}
    a = [[(w["x"], 1)], [(w["x"], -1)], [], [(w["t"], 1), (w["one"], 2)]]
    b = [[(w["y"], 1)], [(w["z"], 1)], [], [(w["one"], 1)]]
    c = [[(w["t"], 1)], [(w["u"], -1)], [(w["t"], 1), (w["x"], -1), (w["v"], -1)], [(w["t"], 1), (w["one"], 2)]]
    values = {"one": 1, "x": 3, "y": 5, "z": 7, "t": 15, "u": 21, "v": 12}
    r1cs = R1CS(
        path=None, prime=curve.r, curve=curve, n_wires=len(order), n_pub_out=2 if public else 0,
        n_pub_in=1 if public else 0, n_prv_in=2 if public else 3, n_labels=len(order), n_constraints=4,
        a=make_lc(curve, a), b=make_lc(curve, b), c=make_lc(curve, c),
    )
    return r1cs, [values[name] for name in order]


def dense(lc: LinearCombinations, m: int, n_wires: int, r: int) -> list[list[int]]:
    out = [[0] * n_wires for _ in range(m)]
    coeffs = to_ints(lc.coeffs) if lc.coeffs.shape[0] else []
    for row in range(m):
        for j in range(int(lc.row_ptr[row]), int(lc.row_ptr[row + 1])):
            out[row][int(lc.wires[j])] = (out[row][int(lc.wires[j])] + coeffs[j]) % r
    return out


WASTE = ToxicWaste(tau=0x1234567890ABCDEF1234567890ABCDEF, alpha=11, beta=0xBEEF, delta=0xD0D0D0D0D0D0D0D0D0D)


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize("curve", CURVES, ids=CURVE_IDS)
def test_lagrange_closed_form_matches_product_formula(curve):
    r, k = curve.r, 3
    w = curve.root_of_unity(k)
    points = [pow(w, c, r) for c in range(1 << k)]
    tau = random.Random(1).randrange(r)
    got = lagrange_at(curve, k, tau, 1 << k)
    assert [int(v) for v in got] == [direct_lagrange(points, c, tau, r) for c in range(1 << k)]
    assert sum(int(v) for v in got) % r == 1  # a partition of unity


@pytest.mark.parametrize("curve", CURVES, ids=CURVE_IDS)
def test_h_closed_form_is_odd_lagrange_basis_of_the_2n_domain(curve):
    r, k = curve.r, 3
    n = 1 << k
    w2 = curve.root_of_unity(k + 1)
    points = [pow(w2, t, r) for t in range(2 * n)]
    tau = random.Random(2).randrange(r)
    got = coset_lagrange_at(curve, k, tau)
    assert [int(v) for v in got] == [direct_lagrange(points, 2 * j + 1, tau, r) for j in range(n)]


@pytest.mark.parametrize("curve", CURVES, ids=CURVE_IDS)
def test_h_closed_form_with_the_shift_coset_used_at_full_2_adicity(curve):
    """At k = 2-adicity there is no 2n-th root: H is the Lagrange basis of {ω^j} ∪ {25·ω^j} at its coset half."""
    r, k = curve.r, 2
    n, shift = 1 << k, curve.nqr * curve.nqr
    w = curve.root_of_unity(k)
    points = [pow(w, j, r) for j in range(n)] + [shift * pow(w, j, r) % r for j in range(n)]
    tau = random.Random(3).randrange(r)
    got = coset_lagrange_at(curve, k, tau, g=shift)
    assert [int(v) for v in got] == [direct_lagrange(points, n + j, tau, r) for j in range(n)]


@pytest.mark.parametrize(("m", "npub", "k"), [(0, 0, 1), (1, 0, 1), (2, 0, 2), (3, 0, 2), (3, 1, 3), (4, 0, 3),
                                              (7, 0, 3), (7, 1, 4), (1020, 3, 10), (1021, 3, 11)])
def test_domain_size_follows_snarkjs_rule(m, npub, k):
    assert log_domain(BN254, m, npub) == k
    assert (1 << k) >= m + npub + 1


@pytest.mark.parametrize(("curve", "m", "limit"), [(BN254, 1 << 28, 28), (BLS12_381, 1 << 31, 31)], ids=CURVE_IDS)
def test_circuit_too_large_for_the_curve_is_clear_error(curve, m, limit):
    with pytest.raises(CurveMismatchError) as e:
        log_domain(curve, m, 2, "big.r1cs")
    msg = str(e.value)
    assert "big.r1cs" in msg and f"2^{limit}" in msg and "2-adicity" in msg and "\n" not in msg


# ---------------------------------------------------------------- fixed-base multiplication
@pytest.mark.parametrize("curve", CURVES, ids=CURVE_IDS)
@pytest.mark.parametrize("ops", [CpuSetupOps(workers=1), CpuSetupOps(workers=2, parallel_min=1, window=3)],
                         ids=["inline", "pool"])
def test_fixed_base_equals_scalar_multiplication(curve, ops):
    rnd = random.Random(4)
    ks = [0, 1, 2, curve.r - 1, (1 << 253) - 1] + [rnd.randrange(curve.r) for _ in range(11)]
    s = fr_from_ints(ks)
    g1 = ops.g1_fixed_base(curve, s)
    g2 = ops.g2_fixed_base(curve, s)
    assert g1.shape == (len(ks), 2, curve.q_limbs64) and g2.shape == (len(ks), 2, 2, curve.q_limbs64)
    assert not g1[0].any() and not g2[0].any()  # 0 -> infinity, all-zero bytes
    assert g1_from_mont(curve, g1) == [g1_mul(curve, curve.g1_gen, k) for k in ks]
    assert g2_from_mont(curve, g2) == [g2_mul(curve, curve.g2_gen, k) for k in ks]


def test_fixed_base_rejects_unreduced_scalar():
    with pytest.raises(ValueError, match="scalar 1 is not reduced"):
        CpuSetupOps(workers=1).g1_fixed_base(BN254, fr_from_ints([5, BN254.r]))


def test_scalar_digits_reassemble_the_scalar():
    rnd = random.Random(5)
    ks = [rnd.randrange(BN254.r) for _ in range(20)]
    for w in (1, 5, 7, 13, 16):
        n_win = -(-254 // w)
        digits = scalar_digits(fr_from_ints(ks), w, n_win)
        assert [sum(int(d) << (w * i) for i, d in enumerate(row)) for row in digits] == ks


def test_window_grows_with_the_number_of_scalars():
    ws = [choose_window(n, 254) for n in (1, 100, 10_000, 1_000_000)]
    assert ws == sorted(ws) and ws[0] < ws[-1] <= 16


# ---------------------------------------------------------------- the key, point by point
@pytest.mark.parametrize("curve", CURVES, ids=CURVE_IDS)
@pytest.mark.parametrize("public", [True, False], ids=["public", "no-public"])
def test_every_key_point_is_its_textbook_multiple(curve, public):
    r1cs, _ = edge_circuit(curve, public)
    key = generate_key(r1cs, WASTE, CpuSetupOps(workers=1))
    r, m, npub, nv = curve.r, r1cs.n_constraints, r1cs.n_public, r1cs.n_wires
    tau, alpha, beta, delta = WASTE.tau, WASTE.alpha, WASTE.beta, WASTE.delta
    k = log_domain(curve, m, npub)
    n = 1 << k
    assert (key.domain_size, key.log_domain, key.n_vars, key.n_public) == (n, k, nv, npub)
    w = curve.root_of_unity(k)
    lag = [direct_lagrange([pow(w, c, r) for c in range(n)], c, tau, r) for c in range(n)]
    mats = [dense(lc, m, nv, r) for lc in (r1cs.a, r1cs.b, r1cs.c)]
    for s in range(npub + 1):  # the extra rows (0, m+s, s, 1)
        mats[0].append([1 if i == s else 0 for i in range(nv)])
    u, v, ww = ([sum(row[i] * lag[c] for c, row in enumerate(mat)) % r for i in range(nv)] for mat in mats)
    g1 = lambda k_: g1_mul(curve, curve.g1_gen, k_)  # noqa: E731
    g2 = lambda k_: g2_mul(curve, curve.g2_gen, k_)  # noqa: E731
    dinv = pow(delta, -1, r)
    assert g1_from_mont(curve, key.a) == [g1(x) for x in u]
    assert g1_from_mont(curve, key.b1) == [g1(x) for x in v]
    assert g2_from_mont(curve, key.b2) == [g2(x) for x in v]
    comb = [(beta * u[i] + alpha * v[i] + ww[i]) % r for i in range(nv)]
    assert g1_from_mont(curve, key.ic) == [g1(x) for x in comb[: npub + 1]]
    assert g1_from_mont(curve, key.c) == [g1(x * dinv) for x in comb[npub + 1 :]]
    w2 = curve.root_of_unity(k + 1)
    pts2 = [pow(w2, t, r) for t in range(2 * n)]
    assert g1_from_mont(curve, key.h) == [g1(direct_lagrange(pts2, 2 * j + 1, tau, r) * dinv) for j in range(n)]
    assert g1_from_mont(curve, np.stack([key.alpha1, key.beta1, key.delta1])) == [g1(alpha), g1(beta), g1(delta)]
    assert g2_from_mont(curve, np.stack([key.beta2, key.gamma2, key.delta2])) == [g2(beta), curve.g2_gen, g2(delta)]
    z_col = order_index(public, "z")
    assert not key.a[z_col].any() and key.b1[z_col].any()  # z only in B: A point at infinity


def order_index(public: bool, name: str) -> int:
    order = ["one", "t", "u", "x", "y", "z", "v"] if public else ["one", "x", "y", "z", "t", "u", "v"]
    return order.index(name)


@pytest.mark.parametrize("curve", CURVES, ids=CURVE_IDS)
def test_pool_and_single_process_make_the_same_key(curve, monkeypatch, tmp_path):
    from engine.groth16.bench_circuit import make_bench_circuit

    r1cs = make_bench_circuit(curve, 200, 3, seed=2).r1cs
    one = generate_key(r1cs, WASTE, CpuSetupOps(workers=1))
    monkeypatch.setattr(setup_math, "PARALLEL_MIN", 1)
    two = generate_key(r1cs, WASTE, CpuSetupOps(workers=2, parallel_min=1))
    write_zkey(tmp_path / "one.zkey", one)
    write_zkey(tmp_path / "two.zkey", two)
    assert (tmp_path / "one.zkey").read_bytes() == (tmp_path / "two.zkey").read_bytes()
    assert setup_pool._STATE == {}


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_coeffs_and_layout_equal_snarkjs_groth16_setup(curve, tmp_path):
    """Against `snarkjs groth16 setup` of the same circuit: coeffs byte for byte, sizes, infinity pattern."""
    r1cs = read_r1cs(FIXTURES / "tiny" / curve / "tiny.r1cs")
    ref = read_zkey(FIXTURES / "tiny" / curve / "tiny_0.zkey")
    key = setup(r1cs, CpuSetupOps(workers=1))
    write_zkey(tmp_path / "ours.zkey", key)
    ours = read_zkey(tmp_path / "ours.zkey")
    assert ours.coeffs.tobytes() == ref.coeffs.tobytes()
    assert (ours.n_vars, ours.n_public, ours.domain_size) == (ref.n_vars, ref.n_public, ref.domain_size)
    for name in ("ic", "a", "b1", "b2", "c", "h"):
        x, y = getattr(ours, name), getattr(ref, name)
        assert x.shape == y.shape, name
        zero = lambda p: (p.reshape(p.shape[0], -1) == 0).all(axis=1)  # noqa: E731
        assert (zero(x) == zero(y)).all(), name
    assert ours.gamma2.tobytes() == ref.gamma2.tobytes()  # the G2 generator, as snarkjs


def test_coeffs_order_is_a_then_b_per_constraint_then_public_rows():
    r1cs, _ = edge_circuit(BN254, public=True)
    co = coeff_entries(BN254, r1cs)
    got = [(int(e["matrix"]), int(e["row"]), int(e["wire"])) for e in co]
    assert got == [(0, 0, 3), (1, 0, 4), (0, 1, 3), (1, 1, 5), (0, 3, 1), (0, 3, 0), (1, 3, 0),
                   (0, 4, 0), (0, 5, 1), (0, 6, 2), (0, 7, 3)]
    r2 = (1 << 512) % BN254.r
    values = to_ints(co["value"])
    assert values[0] == r2 and values[2] == (BN254.r - 1) * r2 % BN254.r and values[5] == 2 * r2 % BN254.r


def test_two_setups_draw_different_secrets():
    r1cs, _ = edge_circuit(BN254, public=True)
    ops = CpuSetupOps(workers=1)
    a, b = setup(r1cs, ops), setup(r1cs, ops)
    assert a.alpha1.tobytes() != b.alpha1.tobytes() and a.delta2.tobytes() != b.delta2.tobytes()


def test_toxic_waste_in_the_domain_is_refused():
    r1cs, _ = edge_circuit(BN254, public=True)
    k = log_domain(BN254, r1cs.n_constraints, r1cs.n_public)
    with pytest.raises(ValueError, match="domain"):
        generate_key(r1cs, ToxicWaste(BN254.root_of_unity(k), 1, 2, 3), CpuSetupOps(workers=1))
    w = draw_toxic_waste(BN254, k)
    assert pow(w.tau, 1 << k, BN254.r) != 1 and min(w.alpha, w.beta, w.delta) > 0


# ---------------------------------------------------------------- backend choice and CLI
def test_backend_gpu_without_device_is_clear_error(monkeypatch):
    import engine.backends.select

    monkeypatch.setattr(engine.backends.select, "cuda_device_count", lambda: 0)
    with pytest.raises(BackendUnavailableError, match="no CUDA device"):
        select_setup_ops("gpu")
    assert isinstance(select_setup_ops("auto"), CpuSetupOps)
    assert isinstance(select_setup_ops("cpu", workers=1), CpuSetupOps)


def test_workers_where_the_gpu_does_the_setup_are_refused_or_noted(monkeypatch):
    """--workers sets the CPU setup's processes: with the GPU doing the group work it was ignored without a word."""
    import io

    import engine.backends.select
    from engine.errors import EngineError

    monkeypatch.setattr(engine.backends.select, "cuda_device_count", lambda: 1)
    with pytest.raises(EngineError, match="--workers sets the CPU setup's processes; with --backend gpu"):
        select_setup_ops("gpu", workers=4)
    notes = io.StringIO()
    ops = select_setup_ops("auto", workers=4, notes=notes)  # the GPU's ops (nothing runs on a device here)
    assert not isinstance(ops, CpuSetupOps) and "--workers is not used" in notes.getvalue()
    notes = io.StringIO()
    select_setup_ops("auto", notes=notes)
    assert notes.getvalue() == ""
    assert isinstance(select_setup_ops("cpu", workers=4), CpuSetupOps)


def test_setup_help_says_development_key():
    proc = run_engine("setup", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "DEVELOPMENT KEY" in text and "toxic waste is known to whoever ran" in text
    listing = " ".join(run_engine("--help").stdout.split())
    assert "DEVELOPMENT Groth16 key" in listing


def test_setup_cli_curve_mismatch_is_one_line_error(tmp_path):
    proc = run_engine("setup", FIXTURES / "tiny" / "bn128" / "tiny.r1cs", tmp_path / "k.zkey", "--curve", "bls12381",
                      "--backend", "cpu")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "bn128 circuit" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "k.zkey").exists()


def test_setup_cli_missing_r1cs_is_one_line_error(tmp_path):
    proc = run_engine("setup", tmp_path / "nope.r1cs", tmp_path / "k.zkey", "--backend", "cpu")
    assert proc.returncode == 2 and "nope.r1cs" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- interop with snarkjs
def engine_prove(zkey: Path, wtns: Path, proof: Path, public: Path):
    return run_engine("prove", zkey, wtns, proof, public, "--backend", "cpu")


def circom_case(name: str, curve: str, tmp: Path) -> tuple[Path, Path]:
    r1cs, wasm = circom_compile(CIRCUITS / f"{name}.circom", curve, tmp)
    return r1cs, witness_calculate(wasm, CIRCUITS / f"{name}.input.json", tmp / f"{name}.wtns")


def bench_case(curve: str, tmp: Path) -> tuple[Path, Path]:
    r1cs, wtns, _ = write_bench_circuit(tmp, curve, 300, n_public=3, seed=11)
    return Path(r1cs), Path(wtns)


def edge_case(curve: str, tmp: Path) -> tuple[Path, Path]:
    r1cs, values = edge_circuit(curve_by_name(curve), public=False)
    write_r1cs(tmp / "edge.r1cs", r1cs)
    write_wtns(tmp / "edge.wtns", r1cs.prime, fr_from_ints(values))
    return tmp / "edge.r1cs", tmp / "edge.wtns"


CASES = {
    "tiny": lambda curve, tmp: (FIXTURES / "tiny" / curve / "tiny.r1cs", FIXTURES / "tiny" / curve / "tiny.wtns"),
    "several_public": lambda curve, tmp: circom_case("several_public", curve, tmp),
    "no_public": lambda curve, tmp: circom_case("no_public", curve, tmp),
    "edge": edge_case,
    "bench": bench_case,
}


@pytest.mark.snarkjs
@pytest.mark.slow
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("case", list(CASES))
def test_proofs_on_our_key_pass_snarkjs_verify(case, curve, tmp_path):
    r1cs, wtns = CASES[case](curve, tmp_path)
    zkey = tmp_path / "dev.zkey"
    made = run_engine("setup", r1cs, zkey, "--backend", "cpu")
    assert made.returncode == 0, made.stderr
    assert "DEVELOPMENT KEY" in made.stderr and "toxic waste" in made.stderr
    vk_ours, vk_snarkjs = tmp_path / "vk_engine.json", tmp_path / "vk_snarkjs.json"
    exported = run_engine("export-vkey", zkey, vk_ours)
    assert exported.returncode == 0, exported.stderr
    run_snarkjs("zkey", "export", "verificationkey", zkey, vk_snarkjs, check=True)
    assert json.loads(vk_ours.read_text()) == json.loads(vk_snarkjs.read_text())

    proof, public = tmp_path / "proof_snarkjs.json", tmp_path / "public_snarkjs.json"
    run_snarkjs("groth16", "prove", zkey, wtns, proof, public, check=True)
    ours_proof, ours_public = tmp_path / "proof_engine.json", tmp_path / "public_engine.json"
    proved = engine_prove(zkey, wtns, ours_proof, ours_public)
    assert proved.returncode == 0, proved.stderr
    assert json.loads(ours_public.read_text()) == json.loads(public.read_text())
    # the two vkeys are equal, so crossing them covers every pair
    for vk, p in ((vk_ours, proof), (vk_snarkjs, ours_proof)):
        check = run_snarkjs("groth16", "verify", vk, public, p)
        assert check.returncode == 0 and "OK" in check.stdout, (vk.name, p.name, check.stdout + check.stderr)


@pytest.mark.snarkjs
def test_proof_on_one_dev_key_fails_with_another_keys_vkey(tmp_path):
    r1cs, wtns = FIXTURES / "tiny" / "bn128" / "tiny.r1cs", FIXTURES / "tiny" / "bn128" / "tiny.wtns"
    for name in ("k1", "k2"):
        assert run_engine("setup", r1cs, tmp_path / f"{name}.zkey", "--backend", "cpu", "--quiet").returncode == 0
    run_snarkjs("zkey", "export", "verificationkey", tmp_path / "k2.zkey", tmp_path / "vk2.json", check=True)
    run_snarkjs("groth16", "prove", tmp_path / "k1.zkey", wtns, tmp_path / "p.json", tmp_path / "pub.json", check=True)
    check = run_snarkjs("groth16", "verify", tmp_path / "vk2.json", tmp_path / "pub.json", tmp_path / "p.json")
    assert check.returncode != 0
