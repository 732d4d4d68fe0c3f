"""Development Groth16 keys: a whole setup from an .r1cs, with secrets drawn in this process.

FOR DEVELOPMENT ONLY.  snarkjs needs a powers-of-tau ceremony before
`groth16 setup`, which takes hours for large circuits; this module makes a key
in the snarkjs .zkey layout (spec §4) directly from fresh random τ, α, β, δ
(γ = 1, as snarkjs).  Whoever runs it knows that toxic waste and can forge
proofs, so such a key must never protect anything: it is for tests and
benchmarks of circuits of any size.

The math is in `engine.groth16.setup_scalars` (which scalars) and the group work in a
`SetupOps` (`engine.groth16.setup_points`: CPU here, GPU in engine.backends.gpu).
`generate_key` is deterministic in its `ToxicWaste` so tests can check every
point; `setup` draws the waste and forgets it.
"""
from __future__ import annotations

import secrets
import sys

import numpy as np

from engine.algebra.curves import Curve, curve_by_name
from engine.errors import BackendUnavailableError, CurveMismatchError, EngineError, InputFileError
from engine.formats import R1CS, ZKey, read_r1cs, write_zkey
from engine.algebra.limbs import fr_from_ints, g2_to_mont
from engine.progress import Progress
from engine.groth16 import setup_scalars
from engine.groth16.setup_scalars import coeff_entries, log_domain
from engine.formats.zkey import COEFF_DTYPE
from engine.groth16.setup_points import CpuSetupOps, SetupOps, ToxicWaste

DEV_WARNING = (
    "DEVELOPMENT KEY: its toxic waste (tau, alpha, beta, delta) was known to whoever ran this setup, "
    "who can forge proofs with it; never use it to protect anything"
)


def circuit_curve(r1cs: R1CS, expected: str | None = None) -> Curve:
    """The curve of an .r1cs (from its prime), checked against --curve when one is given."""
    name = r1cs.path or "circuit"
    if r1cs.curve is None:
        raise CurveMismatchError(f"{name}: its prime {r1cs.prime} is not the scalar field of bn128 or bls12381")
    if expected is not None:
        try:
            want = curve_by_name(expected)
        except KeyError as exc:
            raise CurveMismatchError(str(exc.args[0])) from None
        if want is not r1cs.curve:
            raise CurveMismatchError(f"{name}: is a {r1cs.curve.name} circuit, but --curve {expected} was asked for")
    return r1cs.curve


def draw_toxic_waste(curve: Curve, k: int) -> ToxicWaste:
    """Fresh secrets: τ outside the domain and its coset (so every Lagrange value exists), α, β, δ nonzero."""
    r = curve.r
    while True:
        waste = ToxicWaste(*(1 + secrets.randbelow(r - 1) for _ in range(4)))
        if _waste_problem(curve, k, waste) is None:
            return waste


def _waste_problem(curve: Curve, k: int, waste: ToxicWaste) -> str | None:
    r, n = curve.r, 1 << k
    tn = pow(waste.tau, n, r)
    if tn == 1 or tn == pow(curve.coset_generator(k), n, r):
        return "tau lies in the evaluation domain or its coset"
    if any(x % r == 0 for x in (waste.alpha, waste.beta, waste.delta)):
        return "alpha, beta and delta must be nonzero"
    return None


def generate_key(
    r1cs: R1CS, waste: ToxicWaste, ops: SetupOps, *, path: str | None = None, progress: Progress | None = None
) -> ZKey:
    """The Groth16 key of a circuit for the given secrets (spec §4.5), as a `ZKey` ready to write."""
    prog = progress or Progress()
    curve = circuit_curve(r1cs)
    k = log_domain(curve, r1cs.n_constraints, r1cs.n_public, r1cs.path or "circuit")
    problem = _waste_problem(curve, k, waste)
    if problem:
        raise ValueError(f"unusable toxic waste: {problem}")
    nv, npub, n = r1cs.n_wires, r1cs.n_public, 1 << k
    if npub + 1 > nv:
        raise InputFileError(r1cs.path, f"declares {npub} public signals but only {nv} wires")
    need = int(key_bytes(r1cs, k) * getattr(ops, "memory_factor", 1.0))
    setup_scalars.check_memory(need, r1cs.path or "circuit",
                               f"its key (domain 2^{k}, {nv} wires) made on the {ops.name} backend")

    prog.stage("field", 0.0)
    ks = ops.key_scalars(curve, r1cs, k, waste, prog)
    secrets_row = fr_from_ints([waste.alpha, waste.beta, waste.delta])
    g1_parts = [ks.a, ks.b, ks.ic, ks.c, ks.h, secrets_row]
    with prog.timed("G1 points", 0.3):
        g1 = ops.g1_fixed_base(curve, np.concatenate(g1_parts, axis=0))
    with prog.timed("G2 points", 0.75):
        g2 = ops.g2_fixed_base(curve, np.concatenate([ks.b, secrets_row[1:]], axis=0))
    with prog.timed("coeffs", 0.95):
        coeffs = coeff_entries(curve, r1cs)

    cuts = np.cumsum([len(p) for p in g1_parts])[:-1]
    a, b1, ic, c, h, (alpha1, beta1, delta1) = np.split(g1, cuts)
    b2, (beta2, delta2) = g2[:nv], g2[nv:]
    gamma2 = g2_to_mont(curve, [curve.g2_gen])[0]
    return ZKey(
        path=path, curve=curve, n_vars=nv, n_public=npub, domain_size=n, log_domain=k,
        alpha1=alpha1, beta1=beta1, beta2=beta2, gamma2=gamma2, delta1=delta1, delta2=delta2,
        ic=ic, coeffs=coeffs, a=a, b1=b1, b2=b2, c=c, h=h,
    )


def key_bytes(r1cs: R1CS, k: int) -> int:
    """The bytes of a circuit's key as a setup holds them: points, coeffs and their scalars."""
    nv, npub, lq = r1cs.n_wires, r1cs.n_public, r1cs.curve.q_limbs64
    g1 = (3 * nv + (1 << k) + 3) * 2 * lq * 8  # A, B1, IC + C, H, alpha beta delta
    g2 = (nv + 2) * 4 * lq * 8
    coeffs = (int(r1cs.a.row_ptr[-1]) + int(r1cs.b.row_ptr[-1]) + npub + 1) * COEFF_DTYPE.itemsize
    return g1 + g2 + coeffs + (4 * nv + (1 << k)) * 32


def setup(r1cs: R1CS, ops: SetupOps, *, path: str | None = None, progress: Progress | None = None) -> ZKey:
    """A development key with fresh secrets, which are dropped when this returns (see DEV_WARNING)."""
    curve = circuit_curve(r1cs)
    k = log_domain(curve, r1cs.n_constraints, r1cs.n_public, r1cs.path or "circuit")
    return generate_key(r1cs, draw_toxic_waste(curve, k), ops, path=path, progress=progress)


def setup_file(r1cs_path, zkey_path, ops: SetupOps, *, curve: str | None = None,
               progress: Progress | None = None) -> ZKey:
    """Read an .r1cs, make a development key, write it as a snarkjs .zkey."""
    prog = progress or Progress()
    if curve is not None:  # a typo in --curve was named only after the whole circuit was read
        try:
            curve_by_name(curve)
        except KeyError as exc:
            raise CurveMismatchError(str(exc.args[0])) from None
    with prog.timed("read r1cs", 0.0):
        r1cs = read_r1cs(r1cs_path)
    circuit_curve(r1cs, curve)
    key = setup(r1cs, ops, path=str(zkey_path), progress=prog)
    with prog.timed("write zkey", 0.97):
        write_zkey(zkey_path, key)
    prog.done()
    return key


def select_setup_ops(backend: str = "auto", *, workers: int | None = None, notes=sys.stderr) -> SetupOps:
    """SetupOps for --backend cpu|gpu|auto (auto: the GPU when a CUDA device exists)."""
    from engine.backends.select import cuda_device_count  # noqa: PLC0415

    if backend not in ("auto", "cpu", "gpu"):
        raise BackendUnavailableError(f"unknown backend {backend!r} (choose cpu, gpu or auto)")
    if backend == "gpu" and cuda_device_count() == 0:
        raise BackendUnavailableError("--backend gpu: no CUDA device found on this machine")
    if backend == "gpu" or (backend == "auto" and cuda_device_count() > 0):
        if workers is not None and backend == "gpu":  # it was ignored without a word
            raise EngineError("--workers sets the CPU setup's processes; with --backend gpu the GPU does the group "
                              "work (give --backend cpu to use them)")
        try:
            from engine.backends.gpu import GpuSetupOps  # noqa: PLC0415
        except ImportError as exc:
            if backend == "gpu":
                raise BackendUnavailableError(f"--backend gpu: GPU setup is not available ({exc})") from None
            if notes is not None:
                print(f"note: GPU setup is not available ({exc}); using the CPU", file=notes)
        else:
            if workers is not None and notes is not None:
                print("note: the GPU does this setup's group work, so --workers is not used (--backend cpu uses "
                      "it)", file=notes)
            return GpuSetupOps()
    return CpuSetupOps(workers=workers)
