"""Interop with snarkjs 0.7.6 on real circom circuits, both curves.

Our `python -m engine prove --backend cpu` proofs must pass `snarkjs groth16
verify` and write snarkjs's public.json byte for byte; snarkjs's proofs must
pass `python -m engine verify`, which must reject altered proofs, public
signals and keys; `export-vkey` must equal `snarkjs zkey export
verificationkey` byte for byte.

Circuits per curve (shapes checked by test_interop_circuits_have_the_shapes_they_cover):
* several_public (tests/circuits): 2 outputs + 1 public input, a wire used
  only in B (its A point is infinity), -1 coefficients in A;
* single_output (tests/circuits): one public signal, an output;
* no_public (tests/circuits): nPublic = 0;
* sudoku (examples/<curve>, committed): 16 public inputs, circomlib templates;
* power_table (tests/fixtures/interop/<curve>, committed): 4097 constraints, domain 2^13.
The first three get keys made in the session (`groth16 setup` and one `zkey
contribute`), so their before-contribution zkeys (delta = 1) are tested too.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import (
    CIRCUITS,
    CURVES,
    EXAMPLES,
    FIXTURES,
    circom_compile,
    groth16_setup,
    r1cs_header,
    run_engine,
    run_snarkjs,
    witness_calculate,
)

from engine.algebra.curves import curve_by_name

pytestmark = pytest.mark.snarkjs

SESSION = ("several_public", "single_output", "no_public")  # keys made in the session
COMMITTED = {  # name -> directory (under a curve) holding snarkjs-made artifacts
    "sudoku": EXAMPLES,
    "power_table": FIXTURES / "interop",
}
LARGE = {"power_table"}


@dataclass
class Circuit:
    """One circuit on one curve, with its snarkjs artifacts."""

    name: str
    curve: str
    r1cs: Path
    wtns: Path
    zkey: Path  # contributed (delta != 1)
    vkey: Path  # snarkjs's export of zkey
    snarkjs_proof: Path
    snarkjs_public: Path
    zkey0: Path | None = None  # before contribution; None for committed keys
    vkey0: Path | None = None
    proofs: dict = field(default_factory=dict)  # (key, n) -> Proved

    @property
    def n_public(self) -> int:
        return json.loads(self.vkey.read_text())["nPublic"]

    def key(self, which: str) -> tuple[Path, Path]:
        """(zkey, vkey) for "contributed" or "initial" (before contribution)."""
        return (self.zkey, self.vkey) if which == "contributed" else (self.zkey0, self.vkey0)


@dataclass
class Proved:
    proof: Path
    public: Path


class Store:
    """Builds each circuit once per session and caches our proofs of it."""

    def __init__(self, root: Path):
        self.root = root
        self.circuits: dict[tuple[str, str], Circuit] = {}

    def get(self, curve: str, name: str) -> Circuit:
        if (curve, name) not in self.circuits:
            build = self._session if name in SESSION else self._committed
            self.circuits[curve, name] = build(curve, name, self.root / f"{curve}-{name}")
        return self.circuits[curve, name]

    def _session(self, curve: str, name: str, out: Path) -> Circuit:
        r1cs, wasm = circom_compile(CIRCUITS / f"{name}.circom", curve, out)
        wtns = witness_calculate(wasm, CIRCUITS / f"{name}.input.json", out / f"{name}.wtns")
        keys = groth16_setup(r1cs, curve)
        proof, public = out / "snarkjs_proof.json", out / "snarkjs_public.json"
        run_snarkjs("groth16", "prove", keys.zkey, wtns, proof, public, check=True)
        return Circuit(name, curve, r1cs, wtns, keys.zkey, keys.vkey, proof, public, keys.zkey0, keys.vkey0)

    def _committed(self, curve: str, name: str, out: Path) -> Circuit:
        src = COMMITTED[name] / curve
        out.mkdir(parents=True)
        return Circuit(
            name, curve, src / f"{name}.r1cs", src / f"{name}.wtns", src / f"{name}.zkey",
            src / "verification_key.json", src / "proof.json", src / "public.json",
        )

    def prove(self, circuit: Circuit, which: str = "contributed", n: int = 0) -> Proved:
        """Our proof number n of the circuit's witness with one of its keys (cached)."""
        if (which, n) not in circuit.proofs:
            out = self.root / f"{circuit.curve}-{circuit.name}" / f"engine-{which}-{n}"
            out.mkdir(parents=True, exist_ok=True)
            done = Proved(out / "proof.json", out / "public.json")
            zkey, _ = circuit.key(which)
            proc = run_engine("prove", zkey, circuit.wtns, done.proof, done.public, "--backend", "cpu")
            if proc.returncode != 0:
                pytest.fail(f"python -m engine prove failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}",
                            pytrace=False)
            circuit.proofs[which, n] = done
        return circuit.proofs[which, n]


@pytest.fixture(scope="session")
def store(node_bin, tmp_path_factory) -> Store:
    return Store(tmp_path_factory.mktemp("interop"))


def cases(names) -> list:
    """(curve, name) parameters; power_table cases are marked slow."""
    out = []
    for curve in CURVES:
        for name in names:
            marks = [pytest.mark.slow] if name in LARGE else []
            out.append(pytest.param(curve, name, id=f"{curve}-{name}", marks=marks))
    return out


ALL = ("several_public", "single_output", "no_public", "sudoku", "power_table")


def snarkjs_verify(vkey: Path, public: Path, proof: Path):
    return run_snarkjs("groth16", "verify", vkey, public, proof)


def engine_verify(vkey: Path, public: Path, proof: Path):
    return run_engine("verify", vkey, public, proof)


def assert_accepted(proc, who: str) -> None:
    assert proc.returncode == 0 and "OK!" in proc.stdout, (
        f"{who} rejected the proof (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    )


def assert_rejected(proc) -> None:
    """Our verifier's answer to a well-formed but wrong proof: exit 1, no OK!, no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "OK!" not in proc.stdout
    assert proc.returncode == 1, f"exit {proc.returncode}, expected 1:\n{proc.stdout}\n{proc.stderr}"


def write_json(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj, indent=1))
    return path


# ---------------------------------------------------------------- the circuits themselves


@pytest.mark.slow  # builds the session's circuits and keys when it runs first
@pytest.mark.parametrize("curve", CURVES)
def test_interop_circuits_have_the_shapes_they_cover(store, curve):
    """Guards the coverage claims of this module: B-only wire, -1 coefficient, nPublic 0, 2^12 constraints."""
    r = curve_by_name(curve).r
    sp = store.get(curve, "several_public")
    exported = sp.r1cs.with_suffix(".json")
    run_snarkjs("r1cs", "export", "json", sp.r1cs, exported, check=True)
    constraints = json.loads(exported.read_text())["constraints"]
    header = r1cs_header(sp.r1cs)
    in_a = {int(w) for a, _, _ in constraints for w in a}
    in_b = {int(w) for _, b, _ in constraints for w in b}
    private = set(range(header.n_public + 1, header.n_wires))
    assert private & in_b - in_a, "several_public lost its private wire used only in B"
    assert any(v == str(r - 1) for a, b, _ in constraints for v in [*a.values(), *b.values()]), \
        "several_public lost its -1 coefficient in A or B"
    assert header.n_public >= 3
    assert r1cs_header(store.get(curve, "single_output").r1cs).n_public == 1
    assert r1cs_header(store.get(curve, "single_output").r1cs).n_pub_out == 1
    assert store.get(curve, "no_public").n_public == 0
    assert r1cs_header(store.get(curve, "power_table").r1cs).n_constraints >= 1 << 12
    for name in ALL:
        assert r1cs_header(store.get(curve, name).r1cs).prime == r


# ---------------------------------------------------------------- our proofs, snarkjs's verifier


@pytest.mark.parametrize("curve, name", cases(ALL))
def test_engine_proof_passes_snarkjs_verify(store, curve, name):
    c = store.get(curve, name)
    ours = store.prove(c)
    assert_accepted(snarkjs_verify(c.vkey, ours.public, ours.proof), "snarkjs groth16 verify")


@pytest.mark.parametrize("curve, name", cases(SESSION))
def test_engine_proof_from_key_before_contribution_passes_snarkjs_verify(store, curve, name):
    c = store.get(curve, name)
    ours = store.prove(c, "initial")
    assert_accepted(snarkjs_verify(c.vkey0, ours.public, ours.proof), "snarkjs groth16 verify")


@pytest.mark.parametrize("curve, name", cases(ALL))
def test_engine_public_json_is_byte_identical_to_snarkjs(store, curve, name):
    c = store.get(curve, name)
    assert store.prove(c).public.read_bytes() == c.snarkjs_public.read_bytes()
    if c.zkey0 is not None:
        assert store.prove(c, "initial").public.read_bytes() == c.snarkjs_public.read_bytes()


@pytest.mark.parametrize("curve, name", cases(("several_public", "no_public", "sudoku")))
def test_two_engine_proofs_of_one_witness_differ_and_both_verify(store, curve, name):
    c = store.get(curve, name)
    first, second = store.prove(c, n=0), store.prove(c, n=1)
    p1, p2 = json.loads(first.proof.read_text()), json.loads(second.proof.read_text())
    for part in ("pi_a", "pi_b", "pi_c"):
        assert p1[part] != p2[part], f"{part} repeated: the blinding r, s are not fresh per proof"
    for done in (first, second):
        assert_accepted(snarkjs_verify(c.vkey, done.public, done.proof), "snarkjs groth16 verify")


# ---------------------------------------------------------------- snarkjs's proofs, our verifier


@pytest.mark.parametrize("curve, name", cases(ALL))
def test_snarkjs_proof_passes_engine_verify(store, curve, name):
    c = store.get(curve, name)
    assert_accepted(engine_verify(c.vkey, c.snarkjs_public, c.snarkjs_proof), "python -m engine verify")


def negate_y(proof: dict, q: int) -> None:
    proof["pi_a"][1] = str(q - int(proof["pi_a"][1]))  # -pi_a: still on the curve, wrong proof


def bump_b_x1(proof: dict, q: int) -> None:
    proof["pi_b"][0][1] = str((int(proof["pi_b"][0][1]) + 1) % q)  # off the curve


def bump_c_x(proof: dict, q: int) -> None:
    proof["pi_c"][0] = str((int(proof["pi_c"][0]) + 1) % q)  # off the curve


@pytest.mark.parametrize("change", [negate_y, bump_b_x1, bump_c_x], ids=lambda f: f.__name__)
@pytest.mark.parametrize("curve, name", cases(("several_public", "no_public")))
def test_engine_verify_rejects_a_proof_with_one_coordinate_changed(store, tmp_path, curve, name, change):
    c = store.get(curve, name)
    proof = json.loads(c.snarkjs_proof.read_text())
    change(proof, curve_by_name(curve).q)
    assert_rejected(engine_verify(c.vkey, c.snarkjs_public, write_json(tmp_path / "proof.json", proof)))


@pytest.mark.parametrize("curve, name", cases(("several_public", "single_output", "sudoku", "power_table")))
def test_engine_verify_rejects_wrong_public_signals(store, tmp_path, curve, name):
    c = store.get(curve, name)
    public = json.loads(c.snarkjs_public.read_text())
    assert public, "needs a circuit with public signals"
    public[-1] = str((int(public[-1]) + 1) % curve_by_name(curve).r)
    assert_rejected(engine_verify(c.vkey, write_json(tmp_path / "public.json", public), c.snarkjs_proof))


@pytest.mark.parametrize("curve", CURVES)
def test_engine_verify_rejects_another_circuits_vkey(store, curve):
    """several_public's proof against the tiny fixture circuit's key (same nPublic = 3, another circuit)."""
    c = store.get(curve, "several_public")
    other = FIXTURES / "tiny" / curve / "verification_key.json"
    assert json.loads(other.read_text())["nPublic"] == c.n_public
    assert_rejected(engine_verify(other, c.snarkjs_public, c.snarkjs_proof))


@pytest.mark.parametrize("curve, name", cases(SESSION))
def test_engine_verify_rejects_the_key_before_contribution(store, curve, name):
    """A proof made with the contributed key does not verify with the delta = 1 key of the same circuit."""
    c = store.get(curve, name)
    assert_rejected(engine_verify(c.vkey0, c.snarkjs_public, c.snarkjs_proof))


# ---------------------------------------------------------------- verification keys


def vkey_cases() -> list:
    out = []
    for p in cases(ALL):
        curve, name = p.values
        for which in ("contributed", "initial") if name in SESSION else ("contributed",):
            out.append(pytest.param(curve, name, which, id=f"{curve}-{name}-{which}", marks=p.marks))
    return out


@pytest.mark.parametrize("curve, name, which", vkey_cases())
def test_engine_export_vkey_is_byte_identical_to_snarkjs(store, tmp_path, curve, name, which):
    c = store.get(curve, name)
    zkey, snarkjs_vkey = c.key(which)
    ours = tmp_path / "verification_key.json"
    proc = run_engine("export-vkey", zkey, ours)
    assert proc.returncode == 0, proc.stderr
    assert ours.read_bytes() == snarkjs_vkey.read_bytes()


@pytest.mark.parametrize("curve, name", cases(tuple(COMMITTED)))
def test_committed_artifacts_agree_with_each_other_for_snarkjs(store, curve, name):
    """Regenerating one committed file without the rest (scripts/make_*.sh) would break the tests above."""
    c = store.get(curve, name)
    src = COMMITTED[name] / curve
    again = witness_calculate(src / f"{name}.wasm", src / "input.json", store.root / f"{curve}-{name}" / "again.wtns")
    assert again.read_bytes() == c.wtns.read_bytes(), "the committed wasm and input.json do not give the committed wtns"
    run_snarkjs("wtns", "check", c.r1cs, c.wtns, check=True)
    assert_accepted(snarkjs_verify(c.vkey, c.snarkjs_public, c.snarkjs_proof), "snarkjs groth16 verify")
