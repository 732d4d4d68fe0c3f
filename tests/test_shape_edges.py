"""Circuit shapes at the edges, proved on both curves and checked against snarkjs.

A probe of ~150 shapes (domain boundaries m + nPublic = 2^k - 1, 2^k, 2^k + 1 for
k = 2..10, degenerate circuits, circom --O0/--O1/--O2, bench-circuit keys, keys both ways) found one
fault (the last item below); these pin the most informative shapes so a regression shows here first:

* the extra public rows filling the domain exactly (m + nPublic + 1 = n) and
  one more row doubling it;
* no constraints at all, only wire 0, an empty constraint (0 = 0), a constraint
  on the constant wire alone;
* zero coefficients, one wire twice in a linear combination, the same wire in
  A and B, negative coefficients, witness values 0 and r - 1;
* 100 public signals of which most appear in no constraint; nPublic = 0;
* a private input circom drops (never used): its wire is gone but nPrvIn still counts it, so
  nWires < 1 + nPubOut + nPubIn + nPrvIn; snarkjs sets such a circuit up, so must we.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import circom_compile, ptau, run_engine, run_snarkjs, witness_calculate

from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.limbs import fr_from_ints
from engine.backends.cpu import CpuBackend
from engine.formats import read_r1cs, read_zkey, write_r1cs, write_wtns, write_zkey
from engine.formats.json import vk_to_json
from engine.formats.r1cs import R1CS, LinearCombinations
from engine.groth16.prover import prove
from engine.groth16.setup import generate_key
from engine.groth16.setup_points import CpuSetupOps, ToxicWaste
from engine.groth16.verifier import verify, vk_from_zkey

CURVES = [BN254, BLS12_381]
WASTE = ToxicWaste(tau=0x5EED_7A0, alpha=0xA1FA, beta=0xBE7A, delta=0xDE17A)


@dataclass
class Shape:
    """Constraints as (A, B, C) lists of (wire, coefficient) terms; wires 1.. are outputs, inputs, private."""

    constraints: list
    n_out: int
    n_in: int
    n_wires: int
    witness: list  # ints, reduced mod r when written; wire 0 is 1
    extra_prv_in: int = 0  # private inputs counted in the header but without a wire (circom dropped them)

    @property
    def n_prv_in(self) -> int:
        return self.n_wires - 1 - self.n_public + self.extra_prv_in

    @property
    def n_public(self) -> int:
        return self.n_out + self.n_in

    def r1cs(self, curve) -> R1CS:
        mats = []
        for k in range(3):
            rows = [c[k] for c in self.constraints]
            ptr = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum([len(t) for t in rows], out=ptr[1:])
            terms = [t for row in rows for t in row]
            coeffs = fr_from_ints([c % curve.r for _, c in terms]) if terms else np.zeros((0, 4), np.uint64)
            mats.append(LinearCombinations(ptr, np.array([w for w, _ in terms], dtype=np.uint32), coeffs))
        return R1CS(prime=curve.r, curve=curve, n_wires=self.n_wires, n_pub_out=self.n_out, n_pub_in=self.n_in,
                    n_prv_in=self.n_prv_in, n_labels=self.n_wires,
                    n_constraints=len(self.constraints), a=mats[0], b=mats[1], c=mats[2])

    def values(self, curve) -> np.ndarray:
        return fr_from_ints([v % curve.r for v in self.witness])


def chain(n_mul: int, n_public: int) -> Shape:
    """Public inputs 1..n_public (in no product), x = w_{n_public+1}, t_i = x^(i+2) by n_mul products."""
    x = n_public + 1
    cons, vals, prev = [], [1, *range(7, 7 + n_public), 3], x
    for i in range(n_mul):
        cons.append(([(prev, 1)], [(x, 1)], [(x + 1 + i, 1)]))
        vals.append(vals[prev] * 3)
        prev = x + 1 + i
    if n_public:  # a linear constraint whose terms cancel (wires twice, A and B empty)
        cons.append(([], [], [(prev, 1), (1, 1), (1, -1), (prev, -1)]))
    return Shape(cons, 0, n_public, len(vals), vals)


SHAPES = {
    # m + nPublic = 2^3 - 1: the public rows end on the domain's last row (n = 8)
    "full_domain": chain(4, 2),
    # m + nPublic = 2^3: one row more, the domain doubles to 16
    "domain_plus_one": chain(5, 2),
    # zero coefficients, a wire twice in one combination and in A and B, an empty constraint,
    # the constant wire alone, negative coefficients, r - 1 values
    "odd_terms": Shape([
        ([(1, 0), (3, 1)], [(4, 1), (1, 0)], [(2, 1), (0, 0)]),                    # w3·w4 = w2
        ([(3, 1), (3, 2)], [(3, 1)], [(5, 3)]),                                     # 3·w3·w3 = 3·w5
        ([], [], []),                                                               # 0 = 0
        ([(0, 3)], [(0, 5)], [(0, 15)]),                                            # 3·5 = 15
        ([(1, -1), (0, -2)], [(6, -1)], [(7, 1)]),                                  # (-w1 - 2)·(-w6) = w7
    ], 1, 1, 8, [1, 0, -4, -1, 4, 1, -1, -2]),
    "no_constraints": Shape([], 0, 1, 3, [1, 7, 8]),
    "only_wire0": Shape([([(0, 1)], [(0, 1)], [(0, 1)])], 0, 0, 1, [1]),
    "many_public_unused": chain(1, 100),
    # `signal input a; signal input b; signal output c; c <== b*b;`: circom drops a's wire
    "dropped_private_input": Shape([([(2, 1)], [(2, 1)], [(1, 1)])], 1, 0, 3, [1, 9, 3], extra_prv_in=1),
    "all_zero_witness": Shape([([(1, 1)], [(2, 1)], [(3, 1)]), ([], [], [(1, 1), (2, -1)])], 1, 1, 4,
                              [1, 0, 0, 0]),
}


def snarkjs_domain(shape: Shape) -> int:
    """zkey_new.js: 2^(log2(nConstraints + nPublic) + 1), with log2(0) = 0."""
    v = len(shape.constraints) + shape.n_public
    return 1 << ((v.bit_length() - 1 if v else 0) + 1)


def write_r1cs_file(shape: Shape, curve, tmp: Path) -> Path:
    write_r1cs(tmp / "c.r1cs", shape.r1cs(curve))
    return tmp / "c.r1cs"


def scalars():
    it = iter([0x1234567, 0x7654321] * 4)
    return lambda r: next(it) % r


def test_shapes_are_satisfied():
    """Guards the table above: every witness satisfies its constraints (else a failure means nothing)."""
    r = BN254.r
    for name, s in SHAPES.items():
        for a, b, c in s.constraints:
            ev = [sum(k * s.witness[w] for w, k in lc) % r for lc in (a, b, c)]
            assert ev[0] * ev[1] % r == ev[2], name


@pytest.mark.parametrize("curve", CURVES, ids=[c.name for c in CURVES])
@pytest.mark.parametrize("name", list(SHAPES))
def test_engine_key_and_proof_at_the_edge(name, curve, tmp_path):
    """Our setup picks snarkjs's domain, our prover's self-check passes, a wrong public signal fails."""
    shape = SHAPES[name]
    r1cs = read_r1cs(write_r1cs_file(shape, curve, tmp_path))
    assert (r1cs.n_prv_in, r1cs.n_constraints) == (shape.n_prv_in, len(shape.constraints))
    key = generate_key(r1cs, WASTE, CpuSetupOps(workers=1))
    assert key.domain_size == snarkjs_domain(shape)
    assert key.n_coef == sum(len(a) + len(b) for a, b, _ in shape.constraints) + shape.n_public + 1
    proof = prove(key, shape.values(curve), CpuBackend(workers=1), scalars=scalars())
    vk = vk_from_zkey(key)
    assert proof.public == [v % curve.r for v in shape.witness[1 : shape.n_public + 1]]
    assert verify(vk, proof.public, proof)
    if shape.n_public:
        assert not verify(vk, [(proof.public[0] + 1) % curve.r, *proof.public[1:]], proof)


# ---------------------------------------------------------------- against snarkjs

INTEROP = ["full_domain", "odd_terms", "no_constraints"]


def snarkjs_ok(vkey: Path, public: Path, proof: Path) -> None:
    out = run_snarkjs("groth16", "verify", vkey, public, proof)
    assert out.returncode == 0 and "OK!" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


@pytest.mark.snarkjs
@pytest.mark.parametrize("curve", CURVES, ids=[c.name for c in CURVES])
@pytest.mark.parametrize("name", INTEROP)
def test_keys_both_ways_with_snarkjs(name, curve, tmp_path, node_bin):
    """snarkjs's key -> our proof -> snarkjs verify; our key -> snarkjs's proof -> snarkjs verify; both
    keys' vkeys byte-identical to `zkey export verificationkey`."""
    shape = SHAPES[name]
    r1cs, wtns = tmp_path / "c.r1cs", tmp_path / "w.wtns"
    write_r1cs(r1cs, shape.r1cs(curve))
    write_wtns(wtns, curve.r, shape.values(curve))
    theirs, ours = tmp_path / "snarkjs.zkey", tmp_path / "engine.zkey"
    run_snarkjs("groth16", "setup", r1cs, ptau(curve.name), theirs, check=True)
    write_zkey(ours, generate_key(shape.r1cs(curve), WASTE, CpuSetupOps(workers=1)))
    for zkey in (theirs, ours):
        vkey = tmp_path / f"{zkey.stem}.vkey.json"
        run_snarkjs("zkey", "export", "verificationkey", zkey, vkey, check=True)
        key = read_zkey(zkey)
        assert key.domain_size == snarkjs_domain(shape)
        assert vk_to_json(vk_from_zkey(key)) == vkey.read_text(), f"{zkey.name}: vkey differs from snarkjs's"
        proof, public = tmp_path / f"{zkey.stem}.proof.json", tmp_path / f"{zkey.stem}.public.json"
        if zkey is theirs:
            prove(key, shape.values(curve), CpuBackend(workers=1)).write(proof, public)
        else:
            run_snarkjs("groth16", "prove", zkey, wtns, proof, public, check=True)
        snarkjs_ok(vkey, public, proof)


UNUSED_INPUT = """pragma circom 2.0.0;
template T() { signal input a; signal input b; signal output c; c <== b * b; }
component main = T();
"""


@pytest.mark.snarkjs
def test_setup_of_a_circom_circuit_with_an_unused_private_input(tmp_path, node_bin):
    """circom keeps nPrvIn = 2 but drops a's wire (nWires 3); `engine setup` used to refuse the .r1cs
    ("exceed nWires") though snarkjs sets it up and proves it."""
    (tmp_path / "u.circom").write_text(UNUSED_INPUT)
    (tmp_path / "u.input.json").write_text('{"a": "5", "b": "3"}')
    r1cs, wasm = circom_compile(tmp_path / "u.circom", "bn128", tmp_path)
    wtns = witness_calculate(wasm, tmp_path / "u.input.json", tmp_path / "u.wtns")
    zkey, vkey = tmp_path / "u.zkey", tmp_path / "u.vkey.json"
    made = run_engine("setup", "--backend", "cpu", "--quiet", r1cs, zkey)
    assert made.returncode == 0, made.stderr
    run_snarkjs("zkey", "export", "verificationkey", zkey, vkey, check=True)
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    proved = run_engine("prove", "--backend", "cpu", "--quiet", "--r1cs", r1cs, zkey, wtns, proof, public)
    assert proved.returncode == 0, proved.stderr
    assert json.loads(public.read_text()) == ["9"]
    snarkjs_ok(vkey, public, proof)
