"""Check a witness against an .r1cs: (A·w)∘(B·w) = C·w row by row, naming the first failing row.

snarkjs's `wtns check` walks the constraints one by one in JavaScript; here
each matrix is one numpy pass over object arrays of Python ints (products per
term, `np.add.reduceat` per row, one `% r` per row), so 2^20 constraints take
a few seconds.  Coefficients and witness values are turned into ints through fast paths for the
common small (c < 2^64) and small negative (r − c < 2^64) values.  Given the proving key, the r1cs is
first compared with it (check_r1cs_for_key): a witness that satisfies another circuit proves nothing.
"""
from __future__ import annotations

import numpy as np

from engine.algebra.curves import curve_by_scalar_prime
from engine.errors import CurveMismatchError, MismatchError, UnsatisfiedWitnessError
from engine.formats.r1cs import R1CS, LinearCombinations
from engine.formats.wtns import Witness
from engine.groth16.setup_scalars import coeff_entries  # a key's coeffs section, as setup and snarkjs write it
from engine.algebra.limbs import to_ints

_M64 = (1 << 64) - 1


def _field_ints(coeffs: np.ndarray, r: int) -> np.ndarray:
    """(n, 4) uint64 plain values -> object array of ints congruent mod r (small ones as ±int).

    Witness values and coefficients are mostly small or small negatives; those
    skip the bytes round trip of `to_ints`.
    """
    out = np.empty(coeffs.shape[0], dtype=object)
    if coeffs.shape[0] == 0:
        return out
    high = coeffs[:, 1] | coeffs[:, 2] | coeffs[:, 3]
    small = high == 0
    out[small] = coeffs[small, 0].astype(object)
    r_hi = [np.uint64((r >> (64 * i)) & _M64) for i in range(4)]
    neg = (~small & (coeffs[:, 1] == r_hi[1]) & (coeffs[:, 2] == r_hi[2]) & (coeffs[:, 3] == r_hi[3])
           & (coeffs[:, 0] <= r_hi[0]))
    out[neg] = -((r_hi[0] - coeffs[neg, 0]).astype(object))
    rest = np.flatnonzero(~(small | neg))
    if rest.size:
        out[rest] = to_ints(coeffs[rest])
    return out


def _evaluate(lc: LinearCombinations, w: np.ndarray, r: int) -> np.ndarray:
    """Per-row sum of coefficient·w[wire] as an object array of ints, congruent mod r (not reduced)."""
    out = np.zeros(lc.row_ptr.shape[0] - 1, dtype=object)
    if lc.nnz == 0:
        return out
    prod = _field_ints(lc.coeffs, r) * w[lc.wires]
    starts = lc.row_ptr[:-1]
    nonempty = np.flatnonzero(lc.row_ptr[1:] > starts)
    out[nonempty] = np.add.reduceat(prod, starts[nonempty])
    return out


def _show(v: int, r: int) -> str:
    """A field element as a signed number (r − 12 reads as -12)."""
    return str(v) if v <= r // 2 else f"-{r - v}"


def _curve_name(prime: int) -> str:
    curve = curve_by_scalar_prime(prime)
    return curve.name if curve else f"prime {prime:#x}"


def check_r1cs_for_key(r1cs: R1CS, zkey, *, r1cs_name: str | None = None) -> None:
    """Raise a MismatchError naming both files unless `r1cs` is the circuit of `zkey`: the same counts, and the
    same A and B terms as the key's coeffs section holds them (C is not in a key).  A witness that satisfies the
    r1cs of another circuit gives a proof that cannot verify, and "does not verify" misled there: it pointed to
    --r1cs, which had passed.  The entries' order is free (snarkjs's and `setup`'s is compared first)."""
    rname, kname = r1cs_name or r1cs.path or "the circuit", zkey.path or "the proving key"
    if r1cs.prime != zkey.curve.r:
        raise CurveMismatchError(f"{rname}: a circuit over {_curve_name(r1cs.prime)}, but {kname} is a "
                                 f"{zkey.curve.name} key")
    for mine, theirs, what in ((r1cs.n_wires, zkey.n_vars, "wires"), (r1cs.n_public, zkey.n_public, "public signals")):
        if mine != theirs:
            raise MismatchError(f"{rname}: has {mine} {what} but {kname} has {theirs} (the r1cs of another circuit?)")
    ours, theirs = coeff_entries(zkey.curve, r1cs), np.asarray(zkey.coeffs)
    fields = ("matrix", "row", "wire", "value")
    if ours.shape == theirs.shape and all(np.array_equal(ours[f], theirs[f]) for f in fields):
        return
    row = _first_differing_row(ours, theirs)
    if row is not None:
        where = f"constraint {row}" if row < r1cs.n_constraints else "the public signals' rows"
        raise MismatchError(f"{rname}: is not the circuit of {kname}: the A or B terms of {where} differ (the r1cs "
                            "of another circuit, or of another version of it?)")


def _first_differing_row(ours: np.ndarray, theirs: np.ndarray) -> int | None:
    """The lowest row where two coeffs sections' entries differ once both are sorted, or None if they are equal."""
    def ordered(e: np.ndarray) -> np.ndarray:
        v = e["value"]
        return e[np.lexsort((v[:, 3], v[:, 2], v[:, 1], v[:, 0], e["wire"], e["row"], e["matrix"]))]

    a, b = ordered(ours), ordered(theirs)
    n = min(a.shape[0], b.shape[0])
    same = ((a["matrix"][:n] == b["matrix"][:n]) & (a["row"][:n] == b["row"][:n]) & (a["wire"][:n] == b["wire"][:n])
            & (a["value"][:n] == b["value"][:n]).all(axis=1))
    bad = np.flatnonzero(~same)
    rows = [int(np.minimum(a["row"][bad], b["row"][bad]).min())] if bad.size else []
    rows += [int(e["row"][n:].min()) for e in (a, b) if e.shape[0] > n]
    return min(rows) if rows else None


def check_witness(
    r1cs: R1CS,
    values,
    *,
    r1cs_name: str | None = None,
    witness_name: str | None = None,
    prime: int | None = None,
    zkey=None,
) -> None:
    """Raise unless `values` satisfies every constraint of `r1cs` (and, given `zkey`, the r1cs is its circuit).

    `values`: an (nWires, 4) uint64 array of plain values, or a `Witness`
    (whose prime is then checked too).  MismatchError for a witness of another
    size or field, or an r1cs of another circuit than the key's; UnsatisfiedWitnessError
    naming the first failing constraint with its A·w, B·w and C·w.
    """
    rname = r1cs_name or r1cs.path or "the circuit"
    if zkey is not None:
        check_r1cs_for_key(r1cs, zkey, r1cs_name=rname)
    if isinstance(values, Witness):
        witness_name = witness_name or values.path
        prime = values.prime if prime is None else prime
        values = values.values
    wname = witness_name or "the witness"
    if prime is not None and prime != r1cs.prime:
        wc, rc = curve_by_scalar_prime(prime), curve_by_scalar_prime(r1cs.prime)
        raise CurveMismatchError(
            f"{wname}: a witness over {wc.name if wc else f'prime {prime:#x}'}, "
            f"but {rname} is over {rc.name if rc else f'prime {r1cs.prime:#x}'}"
        )
    if values.ndim != 2 or values.shape[1] != 4:
        raise MismatchError(f"{wname}: witness values must be (n, 4) 64-bit limbs, got shape {values.shape}")
    if values.shape[0] != r1cs.n_wires:
        raise MismatchError(
            f"{wname}: has {values.shape[0]} values but {rname} has {r1cs.n_wires} wires "
            "(a witness of another circuit?)"
        )
    r = r1cs.prime
    w = _field_ints(values, r)
    if w[0] % r != 1:
        raise UnsatisfiedWitnessError(f"{wname}: w[0] = {_show(w[0] % r, r)}, but wire 0 is the constant 1")
    a, b, c = (_evaluate(lc, w, r) for lc in (r1cs.a, r1cs.b, r1cs.c))
    bad = np.flatnonzero((a * b - c) % r != 0) if r1cs.n_constraints else np.zeros(0, dtype=np.int64)
    if bad.size:
        i = int(bad[0])
        a, b, c = a % r, b % r, c % r
        more = f" ({bad.size} constraints fail)" if bad.size > 1 else ""
        raise UnsatisfiedWitnessError(
            f"{wname} does not satisfy {rname}: constraint {i} fails: A·w = {_show(a[i], r)}, "
            f"B·w = {_show(b[i], r)}, C·w = {_show(c[i], r)}, but A·w·B·w = {_show(a[i] * b[i] % r, r)} "
            f"(mod r){more}",
            constraint=i,
        )
