"""Groth16 verification as snarkjs `groth16 verify` does it (spec §6), one proof or a batch.

A proof is accepted iff every public value is in [0, r), pi_a, pi_b, pi_c are
on their curves and in their prime-order subgroups (snarkjs checks neither; BN254
G2 and both BLS12-381 groups have cofactors: engine/algebra/subgroup.py), the
key's points are in theirs too (checked once per key), and
e(-A, B)·e(cpub, γ2)·e(C, δ2)·e(α1, β2) = 1 with cpub = IC_0 + Σ pub_i·IC_i.
`proof_problem` says in one line why a proof is refused before the pairing.

e(α1, β2) is the same for every proof of a key, so it is computed once and
cached; a proof then costs three Miller loops and one final exponentiation
(γ2 and δ2 line coefficients are cached by engine.algebra.pairing as well).
"""
from __future__ import annotations

import numbers
import os
import secrets
from collections import OrderedDict
from threading import Lock
from typing import Sequence

import numpy as np

from engine.algebra import pairing as pr
from engine.algebra.curves import Curve
from engine.algebra.ec import g1_add, g1_mul, g1_neg
from engine.algebra.limbs import g1_from_mont, g2_from_mont
from engine.algebra.msm import msm_g1
from engine.algebra.subgroup import point_problem
from engine.errors import FormatError
from engine.formats.json_text import number_value
from engine.groth16.key_checks import note_checked, was_checked
from engine.groth16.proof import Proof, VerificationKey

_alphabeta: OrderedDict = OrderedDict()
_alphabeta_lock = Lock()


def vk_from_zkey(zkey) -> VerificationKey:
    """The verification key held in a parsed zkey's header and IC section.

    The zkey comes from outside: its verification-key points must be on their curves and in
    their prime-order subgroups (a FormatError naming the file and the point otherwise).  The
    proving points (A, B1, B2, C, H, beta1, delta1) are not checked: they only shape the
    prover's own proofs, and a bad one gives a proof that fails verification."""
    curve = zkey.curve
    (alpha1,) = g1_from_mont(curve, np.asarray(zkey.alpha1))
    beta2, gamma2, delta2 = g2_from_mont(curve, np.stack([zkey.beta2, zkey.gamma2, zkey.delta2]))
    ic = g1_from_mont(curve, zkey.ic)
    return checked_key(VerificationKey(curve, zkey.n_public, alpha1, beta2, gamma2, delta2, ic), zkey.path or "zkey")


def checked_key(vk: VerificationKey, name: str) -> VerificationKey:
    """The key itself when its points are valid group elements, else a FormatError naming `name` and the point.

    `verify` alone answers False for such a key, which reads as a bad proof; a command or a
    service that read the key from a file calls this first, so the message names the key.  A key
    read_vkey already checked point by point is not checked again (a scalar multiplication per point)."""
    if was_checked(vk):
        return vk
    problem = key_problem(vk)
    if problem is not None:
        raise FormatError(name, problem)
    note_checked(vk)
    return vk


def _vk_points(vk: VerificationKey):
    yield vk.alpha1, False, "vk_alpha_1"
    yield vk.beta2, True, "vk_beta_2"
    yield vk.gamma2, True, "vk_gamma_2"
    yield vk.delta2, True, "vk_delta_2"
    for i, p in enumerate(vk.ic):
        yield p, False, f"IC[{i}]"


def _first_problem(curve: Curve, points) -> str | None:
    """The first of (point, is_g2, name) that is not a valid group element, as a one-line reason."""
    return next((p for p in (point_problem(curve, *item) for item in points) if p is not None), None)


def key_problem(vk: VerificationKey) -> str | None:
    """Why the key's points are not valid group elements (off the curve, outside the subgroup), or None."""
    return _first_problem(vk.curve, _vk_points(vk))


def _key_ok(vk: VerificationKey) -> bool:
    if was_checked(vk):
        return True
    if key_problem(vk) is not None:
        return False
    note_checked(vk)
    return True


def alphabeta(vk: VerificationKey) -> pr.Fq12:
    """e(α1, β2) of a key (snarkjs's vk_alphabeta_12), cached per (curve, α1, β2)."""
    key = (vk.curve.name, vk.alpha1, vk.beta2)
    with _alphabeta_lock:
        hit = _alphabeta.get(key)
        if hit is not None:
            _alphabeta.move_to_end(key)
            return hit
    value = pr.pairing(vk.curve, vk.alpha1, vk.beta2)
    with _alphabeta_lock:
        _alphabeta[key] = value
        while len(_alphabeta) > 32:
            _alphabeta.popitem(last=False)
    return value


def _public_ok(curve: Curve, vk: VerificationKey, public: Sequence) -> bool:
    if len(public) != vk.n_public or len(vk.ic) != vk.n_public + 1:
        return False
    return all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < curve.r for v in public)


def proof_problem(vk: VerificationKey, proof: Proof) -> str | None:
    """Why the proof's points are not valid group elements for this key, or None."""
    curve = vk.curve
    if proof.curve.name != curve.name:
        return f"the proof is for {proof.curve.name}, the key for {curve.name}"
    return _first_problem(curve, ((proof.pi_a, False, "pi_a"), (proof.pi_b, True, "pi_b"), (proof.pi_c, False, "pi_c")))


def _proof_ok(vk: VerificationKey, proof: Proof) -> bool:
    return proof_problem(vk, proof) is None and _key_ok(vk)


def _cpub(vk: VerificationKey, public: Sequence[int]):
    return g1_add(vk.curve, vk.ic[0], msm_g1(vk.curve, vk.ic[1:], list(public), workers=1))


def verify(vk: VerificationKey, public: Sequence[int], proof: Proof) -> bool:
    """True iff the proof verifies for these public signals; malformed values give False, not an error.

    Each argument may also be a path (read as `python -m engine verify` reads it), and the public signals the
    decimal (or 0x-hex) strings public.json holds (`json.load` of it: those were False, a valid proof reported
    invalid), or numpy integers.  An argument of another kind altogether is a TypeError saying what it takes."""
    vk, public, proof = _given(vk, public, proof)
    curve = vk.curve
    if not (_public_ok(curve, vk, public) and _proof_ok(vk, proof)):
        return False
    pairs = [
        (g1_neg(curve, proof.pi_a), proof.pi_b),
        (_cpub(vk, public), vk.gamma2),
        (proof.pi_c, vk.delta2),
    ]
    f = pr.final_exponentiation(curve, pr.miller_loop(curve, pairs))
    return f == pr.fq12_conj(curve, alphabeta(vk))  # · e(α1, β2) == 1


def _given(vk, public, proof) -> tuple[VerificationKey, list, Proof]:
    paths = (str, os.PathLike)
    if isinstance(vk, paths) or isinstance(public, paths) or isinstance(proof, paths):
        # only then: a proof made in this process is checked with no import after Ctrl-C became an interrupt
        from engine.formats.json import read_proof, read_public, read_vkey  # noqa: PLC0415 - json.py builds Proofs

        vk = read_vkey(vk) if isinstance(vk, paths) else vk
        public = read_public(public) if isinstance(public, paths) else public
        proof = read_proof(proof) if isinstance(proof, paths) else proof
    if not isinstance(vk, VerificationKey):
        raise _not_a("vk", "a VerificationKey", "read_vkey", vk)
    if not isinstance(proof, Proof):
        raise _not_a("proof", "a Proof", "read_proof", proof)
    if isinstance(public, (bytes, dict, set, frozenset)) or not (hasattr(public, "__len__")
                                                                and hasattr(public, "__iter__")):
        raise _not_a("public", "a list of the public signals", "read_public", public)
    return vk, _signals(public), proof


def _signals(public) -> list:
    """Public signals as ints where they are integers: strings as snarkjs reads them (decimal, 0x-hex), numpy's
    integers, integral floats (json.load's 4.0 or 1e18: the double JavaScript holds, so the number snarkjs
    verifies with; they were not ints to `_public_ok`: a valid proof was False), as read_public reads
    public.json; anything else is left to refuse."""
    out = []
    for v in public:
        if isinstance(v, str):
            n = number_value(v)
            out.append(v if n is None else n)
        elif isinstance(v, float) and v.is_integer() and v >= 0:  # json.load's 4.0 is JavaScript's 4
            out.append(int(v))
        else:
            out.append(int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v)
    return out


def _not_a(name: str, what: str, reader: str, value) -> TypeError:
    return TypeError(f"verify: {name} is {what} (engine.{reader}) or its file's path, not a {type(value).__name__}")


def verify_batch(vk: VerificationKey, items: Sequence[tuple[Sequence[int], Proof]]) -> bool:
    """True iff every (public, proof) verifies, checked with one multi-pairing.

    With random 128-bit ρ_j the n checks are folded into
    Π e(-ρ_j A_j, B_j) · e(Σ ρ_j cpub_j, γ2) · e(Σ ρ_j C_j, δ2) · e(α1, β2)^(Σ ρ_j) = 1,
    which a batch containing a bad proof passes with probability about 2^-128.
    """
    curve = vk.curve
    if not items:
        return True
    items = [(_signals(public), proof) for public, proof in items]
    for public, proof in items:
        if not (_public_ok(curve, vk, public) and _proof_ok(vk, proof)):
            return False
    r = curve.r
    rho = [1] + [secrets.randbits(128) | 1 for _ in range(len(items) - 1)]
    ic_scalars = [0] * vk.n_public
    for rj, (public, _) in zip(rho, items):
        for i, v in enumerate(public):
            ic_scalars[i] = (ic_scalars[i] + rj * v) % r
    total = sum(rho) % r
    cpub = g1_add(curve, g1_mul(curve, vk.ic[0], total), msm_g1(curve, vk.ic[1:], ic_scalars, workers=1))
    c_sum = msm_g1(curve, [proof.pi_c for _, proof in items], rho, workers=1)
    pairs = [(g1_neg(curve, g1_mul(curve, proof.pi_a, rj)), proof.pi_b) for rj, (_, proof) in zip(rho, items)]
    pairs += [(cpub, vk.gamma2), (c_sum, vk.delta2)]
    f = pr.final_exponentiation(curve, pr.miller_loop(curve, pairs))
    return f == pr.fq12_cyclotomic_pow(curve, pr.fq12_conj(curve, alphabeta(vk)), total)
