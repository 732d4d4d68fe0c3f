"""proof.json, public.json and verification_key.json exactly as snarkjs writes and reads them (spec §6).

Writers give snarkjs's bytes: `json.dumps(obj, indent=1)` (the layout of
JSON.stringify(v, null, 1)), no trailing newline, decimal strings, affine
points with z = "1", infinity as ["0","1","0"] (G1) or
[["0","0"],["1","0"],["0","0"]] (G2), Fq2 as [c0, c1].

Readers accept what snarkjs's verifier accepts: numbers as decimal or "0x" hex strings (ffjavascript's
unstringifyBigInts) or JSON numbers that JavaScript holds exactly (integral doubles: up to 2^53, and
larger ones such as 10^18 a double holds exactly); points as [x, y] or
[x, y, z] where z = 0 is infinity, z = 1 affine and any other z Jacobian (X/Z², Y/Z³), and affine
(0, 0) is infinity too (ffjavascript's zeroAffine; on neither curve).  Anything else is a one-line
FormatError naming the file and the field.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any

from engine.algebra.curves import CURVES, Curve, curve_by_name
from engine.algebra.ec import g1_is_on_curve, g2_is_on_curve
from engine.algebra.subgroup import subgroup_problem
from engine.errors import CurveMismatchError, FormatError, file_error, write_error
from engine.formats.json_text import (  # noqa: F401  (re-exported: the writers' public names)
    BOM_PROBLEM,
    DECIMAL,
    NUMBER,
    NotJsonInput,
    dumps,
    g1_to_json,
    g2_to_json,
    proof_to_json,
    proof_to_obj,
    number_digits,
    number_value,
    public_to_json,
    read_json_bytes,
    write_atomically,
    write_text,
)
from engine.groth16.key_checks import note_checked
from engine.groth16.proof import Proof, VerificationKey


# ---------------------------------------------------------------- writing

def alphabeta_to_obj(f) -> list:
    """An Fq12 ((a0,a1,a2),(b0,b1,b2)) of Fq2 pairs -> snarkjs's [[[c0,c1]x3],[[c0,c1]x3]]."""
    return [[[str(e[0]), str(e[1])] for e in half] for half in f]


def vk_to_obj(vk: VerificationKey, alphabeta=None) -> dict:
    """The verification key as snarkjs's dict; `alphabeta` = e(alpha1, beta2), computed when None."""
    if alphabeta is None:
        from engine.algebra.pairing import pairing  # noqa: PLC0415  (only export needs it; verify never does)

        alphabeta = pairing(vk.curve, vk.alpha1, vk.beta2)
    return {
        "protocol": "groth16",
        "curve": vk.curve.name,
        "nPublic": vk.n_public,
        "vk_alpha_1": g1_to_json(vk.alpha1),
        "vk_beta_2": g2_to_json(vk.beta2),
        "vk_gamma_2": g2_to_json(vk.gamma2),
        "vk_delta_2": g2_to_json(vk.delta2),
        "vk_alphabeta_12": alphabeta_to_obj(alphabeta),
        "IC": [g1_to_json(p) for p in vk.ic],
    }


def vk_to_json(vk: VerificationKey, alphabeta=None) -> str:
    return dumps(vk_to_obj(vk, alphabeta))


def write_proof(path, proof: Proof) -> None:
    write_text(path, proof_to_json(proof))


def write_public(path, values) -> None:
    write_text(path, public_to_json(values))


def write_vkey(path, vk: VerificationKey, alphabeta=None) -> None:
    write_text(path, vk_to_json(vk, alphabeta))


# ---------------------------------------------------------------- reading

def load_json(path) -> Any:
    """Parse a JSON file; missing/unreadable -> InputFileError, bad JSON -> FormatError."""
    name = os.fspath(path)
    try:
        raw = read_json_bytes(name)
    except NotJsonInput as exc:
        raise FormatError(name, str(exc)) from None
    except (OSError, ValueError) as exc:
        raise file_error(name, exc) from None
    if not raw.strip():  # not "Expecting value (line 1 column 1)"
        raise FormatError(name, "is not valid JSON: the file is empty")
    encoding = json.detect_encoding(raw)
    if encoding == "utf-8-sig":
        raise FormatError(name, BOM_PROBLEM) from None
    if encoding != "utf-8":
        raise FormatError(name, f"is {encoding.upper()[:6]} text, not UTF-8 (JSON files are UTF-8)") from None
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_not_json)
    except _NotJson as exc:
        raise FormatError(name, f"is not valid JSON: {exc} is not a JSON value (snarkjs's JSON.parse refuses it)"
                          ) from None
    except UnicodeDecodeError:
        raise FormatError(name, "is not a JSON text file (not UTF-8)") from None
    except json.JSONDecodeError as exc:
        raise FormatError(name, f"is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise FormatError(name, "is not valid JSON: nested too deeply") from None
    except ValueError:  # an integer of more than Python's 4300 digits: no field of these files has one
        raise FormatError(name, f"holds a number too long to read (over {_MAX_DIGITS} digits)") from None


class _NotJson(Exception):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON (and JavaScript's JSON.parse) has none."""


def _not_json(token: str):
    raise _NotJson(token)


# Python reads at most this many digits into an int (sys.get_int_max_str_digits); a field element has at most 116
_MAX_DIGITS = 4300
_JS_SAFE = 2**53  # JSON numbers up to this are exact in JavaScript (snarkjs); beyond, it would round them


class _Reader:
    """Field decoding with errors that name the file and the JSON path of the bad value."""

    def __init__(self, path: str):
        self.path = path
        self.off_curve = False  # a point was off its curve (left to verify): its key is not known good

    def fail(self, problem: str) -> FormatError:
        return FormatError(self.path, problem)

    def dec(self, v: Any, where: str, bound: int | None = None, bound_name: str = "") -> int:
        """A number as snarkjs reads it: a decimal or 0x-hex string, or a JSON integer JavaScript holds exactly."""
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            n = self._js_integer(v, where)
        elif isinstance(v, str) and NUMBER.fullmatch(v):
            digits, base = number_digits(v)  # leading zeros are read as snarkjs's BigInt reads them
            most = len(format(bound, "x" if base == 16 else "d")) if bound is not None else _MAX_DIGITS
            if len(digits) > most:  # int() would refuse or crawl
                raise self.fail(f"{where}: {_short(v)} ({len(digits)} digits) is not "
                                + (f"below {bound_name}" if bound is not None else "a field element"))
            n = int(digits, base)
        else:
            raise self.fail(f"{where}: expected a decimal string, got {_short(v)}")
        if bound is not None and n >= bound:
            raise self.fail(f"{where}: {_short(v)} is not below {bound_name}")
        return n

    def _js_integer(self, v: int | float, where: str) -> int:
        """A JSON number as snarkjs reads it: a double, so an integral one is exact (1e18, and 10^18 written
        out); an integer literal a double would round (2^53 + 1) is refused by name, never rounded here."""
        if v < 0 or (isinstance(v, float) and not (math.isfinite(v) and v.is_integer())):
            raise self.fail(f"{where}: expected a decimal string, got {_short(v)}")
        if isinstance(v, int) and v > _JS_SAFE and not _double_exact(v):
            raise self.fail(f"{where}: the JSON number {_short(v)} is above 2^53, which JavaScript (snarkjs) would "
                            "round: write it as a decimal string")
        return int(v)

    def fq(self, v: Any, where: str, curve: Curve) -> int:
        return self.dec(v, where, curve.q, f"the {curve.name} base field prime q")

    def fq2(self, v: Any, where: str, curve: Curve) -> tuple[int, int]:
        if not isinstance(v, list) or len(v) != 2:
            raise self.fail(f"{where}: expected an Fq2 element [c0, c1], got {_short(v)}")
        return self.fq(v[0], f"{where}[0]", curve), self.fq(v[1], f"{where}[1]", curve)

    def g1(self, v: Any, where: str, curve: Curve):
        if not isinstance(v, list) or len(v) not in (2, 3):
            raise self.fail(f"{where}: expected a G1 point [x, y, z] of decimal strings, got {_short(v)}")
        x, y = self.fq(v[0], f"{where}[0]", curve), self.fq(v[1], f"{where}[1]", curve)
        z = self.fq(v[2], f"{where}[2]", curve) if len(v) == 3 else 1
        return self._in_subgroup(g1_from_jacobian(curve, x, y, z), False, where, curve)

    def g2(self, v: Any, where: str, curve: Curve):
        if not isinstance(v, list) or len(v) not in (2, 3):
            raise self.fail(f"{where}: expected a G2 point [[x0,x1],[y0,y1],[z0,z1]], got {_short(v)}")
        x, y = self.fq2(v[0], f"{where}[0]", curve), self.fq2(v[1], f"{where}[1]", curve)
        z = self.fq2(v[2], f"{where}[2]", curve) if len(v) == 3 else (1, 0)
        return self._in_subgroup(g2_from_jacobian(curve, x, y, z), True, where, curve)

    def _in_subgroup(self, point, g2: bool, where: str, curve: Curve):
        """A point on its curve but outside the prime-order subgroup is refused here, by name
        (one off the curve is left to `verify`, which refuses it)."""
        on_curve = g2_is_on_curve if g2 else g1_is_on_curve
        if on_curve(curve, point):
            problem = subgroup_problem(curve, point, g2, where)
            if problem is not None:
                raise self.fail(problem)
        else:
            self.off_curve = True
        return point

    def obj(self, v: Any, what: str) -> dict:
        if not isinstance(v, dict):
            raise self.fail(f"expected a JSON object ({what}), got {_short(v)}")
        return v

    def key(self, d: dict, k: str, what: str) -> Any:
        if k not in d:
            raise self.fail(f"missing \"{k}\" (not a {what}?)")
        return d[k]


def _double_exact(value: int) -> bool:
    """True when the IEEE double nearest to `value` (what JSON.parse gives) is `value` itself."""
    try:
        return float(value) == value  # Python compares a float with an int exactly
    except OverflowError:  # beyond the largest double: JavaScript's Infinity
        return False


def _short(v: Any) -> str:
    s = json.dumps(v) if not isinstance(v, str) else repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def g1_from_jacobian(curve: Curve, x: int, y: int, z: int):
    """snarkjs's fromObject: z = 0 -> infinity, z = 1 -> (x, y) but (0, 0) -> infinity, else (X/Z², Y/Z³)."""
    q = curve.q
    if z == 0 or (z == 1 and x == y == 0):
        return None
    if z == 1:
        return (x, y)
    zi = pow(z, -1, q)
    zi2 = zi * zi % q
    return (x * zi2 % q, y * zi2 * zi % q)


def _fq2_mul(a, b, q):
    return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)


def _fq2_inv(a, q):
    t = pow((a[0] * a[0] + a[1] * a[1]) % q, -1, q)  # u^2 = -1: norm c0^2 + c1^2
    return (a[0] * t % q, -a[1] * t % q)


def g2_from_jacobian(curve: Curve, x, y, z):
    q = curve.q
    if z == (0, 0) or (z == (1, 0) and x == y == (0, 0)):
        return None
    if z == (1, 0):
        return (x, y)
    zi = _fq2_inv(z, q)
    zi2 = _fq2_mul(zi, zi, q)
    return (_fq2_mul(x, zi2, q), _fq2_mul(y, _fq2_mul(zi2, zi, q), q))


def _curve_of(rd: _Reader, d: dict) -> Curve | None:
    if "curve" not in d:
        return None
    name = d["curve"]
    if not isinstance(name, str):
        raise rd.fail(f"\"curve\": expected a curve name, got {_short(name)}")
    try:
        return curve_by_name(name)
    except KeyError:
        raise rd.fail(f"\"curve\": {_short(name)} is not supported (bn128/bn254 or bls12381)") from None


def _check_protocol(rd: _Reader, d: dict, what: str) -> None:
    p = d.get("protocol", "groth16")
    if p != "groth16":
        shown = p if isinstance(p, str) and p.isprintable() and len(p) <= 40 else _short(p)  # one short line
        raise rd.fail(f"is a {shown} {what}; only groth16 is supported" if isinstance(p, str)
                      else f"\"protocol\": expected \"groth16\", got {_short(p)}")


def _guess_curve(rd: _Reader, pi_a: Any) -> Curve:
    """The curve on which pi_a lies (rapidsnark's proof.json names none)."""
    xyz = [number_value(v) for v in pi_a] if isinstance(pi_a, list) and len(pi_a) in (2, 3) else [None]
    if None not in xyz:
        x, y, z = (xyz + [1])[:3]
        for c in CURVES:
            if max(x, y, z) < c.q:
                p = g1_from_jacobian(c, x, y, z)
                if p is not None and (p[1] * p[1] - p[0] ** 3 - c.g1_b) % c.q == 0:
                    return c
    raise rd.fail("names no \"curve\" and pi_a lies on no supported curve; cannot tell its curve")


def read_proof(path, curve: Curve | None = None, *, against: str | None = None) -> Proof:
    """proof.json -> Proof (public left empty: it lives in public.json).

    `curve` is the curve the caller expects (from the verification key named
    `against`); a proof that names another one is a CurveMismatchError.
    """
    rd = _Reader(os.fspath(path))
    d = rd.obj(load_json(path), "a Groth16 proof")
    pi = {k: rd.key(d, k, "proof.json") for k in ("pi_a", "pi_b", "pi_c")}
    _check_protocol(rd, d, "proof")
    named = _curve_of(rd, d)
    if named is not None and curve is not None and named != curve:
        raise CurveMismatchError(
            f"{rd.path}: a {named.name} proof, but {against or 'the verification key'} is for {curve.name}"
        )
    if named is None and curve is not None:
        try:
            guess = _guess_curve(rd, pi["pi_a"])
        except FormatError:
            guess = None
        if guess is not None and guess != curve:
            raise CurveMismatchError(
                f"{rd.path}: pi_a lies on {guess.name}, but {against or 'the verification key'} is for {curve.name}"
            )
    c = named or curve or _guess_curve(rd, pi["pi_a"])
    return Proof(c, rd.g1(pi["pi_a"], "pi_a", c), rd.g2(pi["pi_b"], "pi_b", c), rd.g1(pi["pi_c"], "pi_c", c))


def read_public(path, curve: Curve | None = None) -> list[int]:
    """public.json -> ints; each a number as snarkjs reads one, and below r when `curve` is given."""
    rd = _Reader(os.fspath(path))
    v = load_json(path)
    if not isinstance(v, list):
        raise rd.fail(f"expected a JSON array of decimal strings (public signals), got {_short(v)}")
    if curve is None:
        return [rd.dec(x, f"[{i}]") for i, x in enumerate(v)]
    return [rd.dec(x, f"[{i}]", curve.r, f"the {curve.name} scalar field prime r") for i, x in enumerate(v)]


def read_vkey(path) -> VerificationKey:
    """verification_key.json -> VerificationKey (vk_alphabeta_12 is not read; snarkjs ignores it too)."""
    rd = _Reader(os.fspath(path))
    d = rd.obj(load_json(path), "a verification key")
    what = "Groth16 verification key"
    _check_protocol(rd, d, "verification key")
    curve = _curve_of(rd, d)
    if curve is None:
        raise rd.fail("missing \"curve\" (not a snarkjs verification key?)")
    ic = rd.key(d, "IC", what)
    if not isinstance(ic, list) or not ic:
        raise rd.fail(f"\"IC\": expected a list of nPublic+1 G1 points, got {_short(ic)}")
    n_public = d.get("nPublic", len(ic) - 1)  # snarkjs never reads it: IC says how many signals there are
    if isinstance(n_public, float) and n_public.is_integer():
        n_public = int(n_public)  # JSON's 3.0 is JavaScript's 3
    if not isinstance(n_public, int) or isinstance(n_public, bool) or n_public < 0:
        raise rd.fail(f"\"nPublic\": expected a non-negative integer, got {_short(n_public)}")
    if len(ic) != n_public + 1:
        want = n_public + 1 if n_public < 10**12 else f"{_short(n_public)}+1"
        raise rd.fail(f"\"IC\": expected nPublic+1 = {want} G1 points, got {len(ic)} points")
    vk = VerificationKey(
        curve=curve,
        n_public=n_public,
        alpha1=rd.g1(rd.key(d, "vk_alpha_1", what), "vk_alpha_1", curve),
        beta2=rd.g2(rd.key(d, "vk_beta_2", what), "vk_beta_2", curve),
        gamma2=rd.g2(rd.key(d, "vk_gamma_2", what), "vk_gamma_2", curve),
        delta2=rd.g2(rd.key(d, "vk_delta_2", what), "vk_delta_2", curve),
        ic=[rd.g1(p, f"IC[{i}]", curve) for i, p in enumerate(ic)],
    )
    if not rd.off_curve:  # every point checked here: checked_key and verify need not check them again
        note_checked(vk)
    return vk
