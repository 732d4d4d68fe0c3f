"""One Groth16 proof, snarkjs-compatible (spec §5): checks, backend stages, epilogue, self-check.

The heavy stages run in a `Backend`; this module owns what surrounds them:
that the witness belongs to the key, the random r and s, the assembly of
pi_a, pi_b, pi_c (the epilogue), and the verification that runs before a
proof is returned, so a wrong proof never reaches a user.  A backend that
runs the epilogue and the pairing check itself (the GPU) hands back the
finished points and its verdict in the CoreResult; then no elliptic-curve
arithmetic is left here.
"""
from __future__ import annotations

import hashlib
import secrets
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from engine.algebra import ec
from engine.backends.base import Backend, CoreResult, ResidentKey
from engine.algebra.curves import curve_by_scalar_prime
from engine.errors import (
    CurveMismatchError, FormatError, MismatchError, UnreducedWitnessError, UnsatisfiedWitnessError, VerificationError,
)
from engine.formats.binfile import first_row_ge
from engine.algebra.limbs import g1_from_mont, g2_from_mont
from engine.algebra.subgroup import subgroup_problem
from engine.formats.zkey import check_coordinates
from engine.groth16.proof import Proof, VerificationKey

# A source of the blinding scalars: called with r, returns an int in [0, r).
ScalarSource = Callable[[int], int]


@dataclass(frozen=True)
class KeyHeader:
    """What the epilogue needs of a key (its header points), small enough to send to a
    worker process; `finish` takes it in place of the whole zkey."""

    curve: object
    n_public: int
    path: str | None
    alpha1: np.ndarray
    beta1: np.ndarray
    delta1: np.ndarray
    beta2: np.ndarray
    delta2: np.ndarray

    @classmethod
    def from_zkey(cls, zkey) -> "KeyHeader":
        def own(a):
            return np.array(a, dtype=np.uint64)

        return cls(zkey.curve, zkey.n_public, zkey.path, own(zkey.alpha1), own(zkey.beta1), own(zkey.delta1),
                   own(zkey.beta2), own(zkey.delta2))


def check_witness_for_key(zkey, prime: int, values: np.ndarray, witness_name: str = "witness",
                          range_check: bool = True) -> None:
    """The two checks snarkjs makes (spec §3), plus reduced values, w[0] = 1 and the key's own points
    (check_key), as clear errors before any work.  range_check False leaves the values to the backend
    (a GPU checks them on the device after the upload and raises UnreducedWitnessError:
    `backend.checks_witness_range`)."""
    key_name = zkey.path or "proving key"
    if prime != zkey.curve.r:
        other = curve_by_scalar_prime(prime)
        what = f"a {other.name} witness" if other else f"a witness over an unsupported prime {prime}"
        raise CurveMismatchError(f"{witness_name}: {what}, but {key_name} is a {zkey.curve.name} key")
    if values.shape[0] != zkey.n_vars:
        raise MismatchError(
            f"{witness_name}: has {values.shape[0]} values but {key_name} expects {zkey.n_vars} "
            "(a witness of another circuit?)"
        )
    if range_check:
        bad = first_row_ge(values, zkey.curve.r)
        if bad >= 0:
            raise UnreducedWitnessError(bad, witness_name)
    _check_constant_wire(zkey.curve.r, values, witness_name)
    check_key(zkey)


def _check_constant_wire(r: int, values: np.ndarray, witness_name: str) -> None:
    """w[0] is the constant 1 of every circom circuit: any other value gives a proof that cannot verify, which
    the generic "does not verify" after all the work would not explain."""
    if values.ndim != 2 or values.shape[1] != 4:
        return  # not limbs: the backend's own check names it
    row = [int(x) for x in values[0]]
    if row == [1, 0, 0, 0]:
        return
    v = sum(x << (64 * i) for i, x in enumerate(row))
    shown = f"-{r - v}" if r // 2 < v < r else str(v)  # r - 1 reads as -1, as the constraint check shows it
    raise UnsatisfiedWitnessError(f"{witness_name}: w[0] = {shown}, but it must be 1: wire 0 is the constant signal "
                                  "1 of every circuit (a damaged or hand-made witness?)")


# The header's points and what verification_key.json calls them (G2 when True).
_HEADER_POINTS = (("alpha1", False, "vk_alpha_1"), ("beta1", False, "vk_beta_1"), ("delta1", False, "vk_delta_1"),
                  ("beta2", True, "vk_beta_2"), ("gamma2", True, "vk_gamma_2"), ("delta2", True, "vk_delta_2"))
_VERIFIERS_ONLY = ("vk_gamma_2",)  # not used by the prover: its subgroup is checked where a proof is verified
_keys_checked: OrderedDict = OrderedDict()  # digests of the points of keys that passed check_key
_keys_lock = threading.Lock()
_zkeys_checked: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> a key object that passed


def check_key(zkey) -> None:
    """Refuse a key the prover cannot trust, in one line naming the key and the point (a FormatError, as
    export-vkey says it), before any work and whether or not the proof is verified after: --no-verify skips
    the proof's check, not the key's (no proof made with such a key can verify, or the GPU, which takes the
    raw limbs, may make a wrong one).  Every coordinate below q (formats.zkey.check_coordinates: one vectorised
    pass, per key object, since the points of a copy may differ beyond what a digest of its header covers);
    the header's and IC's points on their curves (microseconds a point); alpha1, beta1, beta2, delta1, delta2
    in their prime-order subgroups (milliseconds each: five points; IC's and gamma2's membership is the
    verifier's check, verifier.vk_from_zkey, where a proof is verified).  Once per key and process."""
    if _zkeys_checked.get(id(zkey)) is zkey:  # this very object: no digest of its IC (the Engine checks per proof)
        return
    check_coordinates(zkey)
    parts = [np.ascontiguousarray(getattr(zkey, name)).tobytes() for name, _, _ in _HEADER_POINTS]
    ident = hashlib.blake2b(b"".join([zkey.curve.name.encode(), *parts, np.ascontiguousarray(zkey.ic).tobytes()]),
                            digest_size=32).digest()
    with _keys_lock:
        known = ident in _keys_checked
        if known:
            _keys_checked.move_to_end(ident)
    if known:
        _remember(zkey)
        return
    curve = zkey.curve
    g1 = g1_from_mont(curve, np.stack([zkey.alpha1, zkey.beta1, zkey.delta1]))
    g2 = g2_from_mont(curve, np.stack([zkey.beta2, zkey.gamma2, zkey.delta2]))
    named = [(p, is_g2, what) for p, (_, is_g2, what) in zip(g1 + g2, _HEADER_POINTS)]
    named += [(p, False, f"IC[{i}]") for i, p in enumerate(g1_from_mont(curve, zkey.ic))]
    for point, is_g2, what in named:
        if not (ec.g2_is_on_curve if is_g2 else ec.g1_is_on_curve)(curve, point):
            raise FormatError(zkey.path or "proving key",
                              f"{what} is not a point of the {curve.name} {'twist ' if is_g2 else ''}curve")
    header = named[:len(_HEADER_POINTS)]
    for point, is_g2, what in header:
        if what in _VERIFIERS_ONLY:
            continue
        if point is None:  # a secret scalar times a generator in any setup
            raise FormatError(zkey.path or "proving key", f"{what} is the point at infinity: a degenerate key "
                              "(delta1 there takes the blinding out of pi_a and pi_c); the key is corrupt or forged")
        problem = subgroup_problem(curve, point, is_g2, what)
        if problem is not None:
            raise FormatError(zkey.path or "proving key", problem)
    _check_pairs(zkey, curve, {what: point for point, _, what in header})
    with _keys_lock:
        _keys_checked[ident] = True
        while len(_keys_checked) > 64:
            _keys_checked.popitem(last=False)
    _remember(zkey)


def _check_pairs(zkey, curve, points: dict) -> None:
    """beta1 and beta2, delta1 and delta2: each pair one secret scalar times the two generators, as every setup
    and contribution writes them.  A pair of two scalars makes proofs no verifier accepts (--no-verify returned
    them).  Both pairs in one check, e(beta1 + rho delta1, g2) e(-g1, beta2) e(-rho g1, delta2) = 1 for a random
    rho (a few milliseconds, once per key); a failure is then told pair by pair."""
    import secrets  # noqa: PLC0415

    from engine.algebra import pairing  # noqa: PLC0415

    names = (("vk_beta_1", "vk_beta_2"), ("vk_delta_1", "vk_delta_2"))
    rho = 1 + secrets.randbelow(1 << 64)  # a forged pair passes with probability 2^-64 at most
    minus_g1 = ec.g1_neg(curve, curve.g1_gen)
    sum1 = ec.g1_add(curve, points["vk_beta_1"], ec.g1_mul(curve, points["vk_delta_1"], rho))
    if pairing.pairing_check(curve, [(sum1, curve.g2_gen), (minus_g1, points["vk_beta_2"]),
                                     (ec.g1_mul(curve, minus_g1, rho), points["vk_delta_2"])]):
        return
    for one, two in names:
        if not pairing.pairing_check(curve, [(points[one], curve.g2_gen), (minus_g1, points[two])]):
            raise FormatError(zkey.path or "proving key",
                              f"{one} and {two} are not one scalar's multiples of the generators (each a valid "
                              "point, the pair not from one setup): a corrupt or forged key, whose proofs cannot "
                              "verify")


def _remember(zkey) -> None:
    try:
        _zkeys_checked[id(zkey)] = zkey
    except TypeError:  # an object without weak references: its digest is checked each time
        pass


def public_signals(zkey, values: np.ndarray) -> list[int]:
    """w_1 .. w_nPublic, the outputs first then the public inputs (spec §6)."""
    from engine.algebra.limbs import to_ints  # noqa: PLC0415

    return to_ints(values[1 : zkey.n_public + 1]) if zkey.n_public else []


def epilogue(zkey, core: CoreResult, r: int, s: int) -> tuple:
    """pi_a, pi_b, pi_c from the MSM results and the blinding r, s (spec §5.1 step 7).

    pi_c = C + H + s·pi_a + r·b1 - rs·δ1 with b1 = β1 + B1 + s·δ1 equals C + H + s·pi_a +
    r·(β1 + B1): the rs·δ1 terms cancel, leaving two scalar products that share one chain
    of doublings (`g1_mul2`) and r·δ1 for pi_a: about 2.3 G1 multiplications instead of 5."""
    curve = zkey.curve
    (alpha1, beta1, delta1) = g1_from_mont(curve, np.stack([zkey.alpha1, zkey.beta1, zkey.delta1]))
    (beta2, delta2) = g2_from_mont(curve, np.stack([zkey.beta2, zkey.delta2]))
    add1 = ec.g1_add
    pi_a = add1(curve, add1(curve, alpha1, core.pi_a0), ec.g1_mul(curve, delta1, r))
    pi_b = ec.g2_add(curve, ec.g2_add(curve, beta2, core.pi_b2_0), ec.g2_mul(curve, delta2, s))
    beta_b1 = add1(curve, beta1, core.pi_b1_0)
    pi_c = add1(curve, add1(curve, core.pi_c0, core.pi_h), ec.g1_mul2(curve, pi_a, s, beta_b1, r))
    return pi_a, pi_b, pi_c


def finish(
    zkey,
    core: CoreResult,
    values: np.ndarray,
    *,
    vk: VerificationKey | None = None,
    verify: bool = True,
    scalars: ScalarSource | None = None,
    witness_name: str | None = None,
) -> Proof:
    """Turn a backend's CoreResult into a proof; verify it first unless told not to.

    `zkey` may be a parsed ZKey or a KeyHeader (what a worker process receives)."""
    if core.proof is not None:  # the backend ran the epilogue (and its pairing check) itself
        return _finish_from_backend(zkey, core, values, vk=vk, verify=verify, witness_name=witness_name)
    draw = scalars or secrets.randbelow
    r, s = draw(zkey.curve.r), draw(zkey.curve.r)
    timings = dict(core.timings)
    timings.pop(DEVICE_CHECK_TIMING, None)  # no device check of this proof: never skip the CPU one
    t = time.perf_counter()
    pi_a, pi_b, pi_c = epilogue(zkey, core, r, s)
    timings["epilogue"] = time.perf_counter() - t
    proof = Proof(zkey.curve, pi_a, pi_b, pi_c, public_signals(zkey, values), timings)
    if verify:
        t = time.perf_counter()
        verify_or_raise(_vk(zkey, vk), proof, zkey.path, witness_name)
        timings["verify"] = time.perf_counter() - t
    else:
        check_on_curves(proof, zkey.path, witness_name)
    return proof


def check_on_curves(proof: Proof, key_name: str | None = None, witness_name: str | None = None) -> None:
    """The check an unverified proof (--no-verify) still gets: pi_a, pi_b, pi_c on their curves (microseconds).
    The points of a key's sections A, B1, B2, C, H are not checked (millions of them): one off its curve puts
    every sum it enters off the curve, and such a proof, which no verifier accepts, is never returned."""
    curve = proof.curve
    for name, point, g2 in (("pi_a", proof.pi_a, False), ("pi_b", proof.pi_b, True), ("pi_c", proof.pi_c, False)):
        if not (ec.g2_is_on_curve if g2 else ec.g1_is_on_curve)(curve, point):
            key = key_name or "the proving key"
            raise VerificationError(
                f"{key}: the proof of {witness_name or 'the witness'} is wrong: its {name} is not a point of the "
                f"{curve.name} {'twist ' if g2 else ''}curve (a point of {key}'s sections A, B1, B2, C or H is "
                "off its curve: a corrupt key; or a backend computed a wrong result); no proof was written or "
                "returned")


def _vk(zkey, vk: VerificationKey | None) -> VerificationKey:
    """The verification key for a CPU check (the CPU verifier's module is imported only then: a proof the
    device checked needs neither it nor the CPU MSM's pool it brings)."""
    if vk is not None:
        return vk
    from engine.groth16.verifier import vk_from_zkey  # noqa: PLC0415

    return vk_from_zkey(zkey)


# The timing a backend reports when its own pairing check accepted the proof (the GPU's
# gpu_check stage: the end of the epilogue and the check): such a proof needs no second,
# CPU, verification.
DEVICE_CHECK_TIMING = "gpu_check"


def checked_on_device(proof: Proof) -> bool:
    """True when the backend that made this proof verified it itself (engine/api.py skips the CPU check)."""
    return DEVICE_CHECK_TIMING in proof.timings


def _finish_from_backend(zkey, core: CoreResult, values: np.ndarray, *, vk, verify: bool,
                         witness_name: str | None = None) -> Proof:
    """A proof the backend assembled (and, where `core.verified` is set, checked).  A failed
    device check raises whatever `verify` says: the proof is wrong, and is never returned.
    r and s were drawn by the backend, from the OS's CSPRNG."""
    pi_a, pi_b, pi_c = core.proof
    timings = dict(core.timings)
    proof = Proof(zkey.curve, pi_a, pi_b, pi_c, public_signals(zkey, values), timings)
    if core.verified is False:
        raise VerificationError(_not_verified(zkey.path, witness_name) + " (the device's pairing check failed)")
    if core.verified is None:
        timings.pop(DEVICE_CHECK_TIMING, None)
        if verify:
            t = time.perf_counter()
            verify_or_raise(_vk(zkey, vk), proof, zkey.path, witness_name)
            timings["verify"] = time.perf_counter() - t
        else:
            check_on_curves(proof, zkey.path, witness_name)
    return proof


def prove(
    zkey,
    values: np.ndarray,
    backend: Backend,
    key: ResidentKey | None = None,
    *,
    prime: int | None = None,
    witness_name: str = "witness",
    vk: VerificationKey | None = None,
    verify: bool = True,
    scalars: ScalarSource | None = None,
) -> Proof:
    """Prove one witness (plain (m, 4) uint64) with a parsed zkey on a backend."""
    on_device = bool(getattr(backend, "checks_witness_range", False))
    check_witness_for_key(zkey, zkey.curve.r if prime is None else prime, values, witness_name,
                          range_check=not on_device)
    timings: dict[str, float] = {}
    if key is None:
        t = time.perf_counter()
        key = backend.load_key(zkey)
        timings["load_key"] = time.perf_counter() - t
    try:
        core = backend.prove_core(key, values)
    except UnreducedWitnessError as exc:  # the device's check knows the row, not the input's name
        raise exc.named(witness_name) from None
    core.timings = {**timings, **core.timings}
    return finish(zkey, core, values, vk=vk, verify=verify, scalars=scalars, witness_name=witness_name)


def verify_or_raise(vk: VerificationKey, proof: Proof, key_name: str | None = None,
                    witness_name: str | None = None) -> None:
    """The check that runs before a proof is returned (in a worker process for the Engine)."""
    from engine.groth16.verifier import verify as verify_proof  # noqa: PLC0415

    if not verify_proof(vk, proof.public, proof):
        raise VerificationError(_not_verified(key_name, witness_name))


def _not_verified(key_name: str | None, witness_name: str | None = None) -> str:
    key = key_name or "the proving key"
    witness = witness_name or "the witness"
    return (f"the proof of {witness} with {key} does not verify: the witness may not satisfy the circuit "
            f"(`python -m engine prove --r1cs circuit.r1cs ...` names the first failing constraint), or {key} or "
            f"{witness} may be corrupt (a damaged point or value), "
            "or a backend computed a wrong result; no proof was written or returned")
