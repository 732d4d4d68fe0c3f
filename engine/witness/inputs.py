"""input.json for circom circuits: signal names -> flat lists of integers, with clear errors.

circom's witness calculators accept, for each input signal, a number, a
decimal or 0x-hex string, or nested arrays of those (flattened row-major),
and objects for bus inputs (qualified as `b.x`, `b[0].x`).  We accept the
same, convert once to Python ints, and name the signal and index of any value
that is not an integer.  Reduction modulo the circuit's prime happens later,
when the prime is known.

One deliberate difference: an integer literal above 2^53 that a double does
not hold exactly (2^64 + 1) is an error.  snarkjs parses it as a JavaScript
double and silently computes with a rounded value; we ask for a string instead
of disagreeing with it quietly.  One a double holds exactly (10^18, 2^64) is
read as snarkjs reads it.  A blank string is 0, as BigInt("") is.
(Python ints in a dict given to the API are exact and always accepted.)
"""
from __future__ import annotations

import json
import math
import numbers
import os
import re
from typing import Any, Mapping

from engine.errors import file_error
from engine.formats.json_text import BOM_PROBLEM, NotJsonInput, read_json_bytes
from engine.witness.errors import WitnessInputError

# Inputs after parsing: qualified signal name -> its values, flattened.
Inputs = dict[str, list[int]]

# what JavaScript's BigInt(string) reads (snarkjs uses it): a sign only before decimal digits, and only
# JavaScript's white space around (Python's str.strip() also drops \x1c-\x1f and \x85, but not \ufeff)
_INT_RE = re.compile(r"0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|[+-]?[0-9]+")
_JS_SPACE = "\t\n\v\f\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000\ufeff"
_BASES = {"x": 16, "b": 2, "o": 8}
_JS_SAFE = 2**53  # JSON numbers up to this are exact in JavaScript; above it, only some are
_DOUBLE_DIGITS = 309  # digits of the largest finite double (1.8e308)


def parse_inputs(path: str | os.PathLike) -> Inputs:
    """Read input.json into {signal: [int, ...]}; every problem names the file and the signal."""
    label = os.fsdecode(path)  # bytes paths too, named as text
    try:
        text = read_json_bytes(path).decode("utf-8")  # bounded where it is a pipe or a device (/dev/zero)
    except UnicodeDecodeError as exc:
        raise WitnessInputError(label, f"not UTF-8 text (byte {exc.start})") from None
    except NotJsonInput as exc:
        raise WitnessInputError(label, str(exc)) from None
    except (OSError, ValueError) as exc:
        raise file_error(label, exc, "an input file", WitnessInputError) from None
    if text.startswith("\ufeff"):
        raise WitnessInputError(label, BOM_PROBLEM)
    try:
        raw = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise WitnessInputError(label, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:  # a recursion bomb ([[[[...]]]]) was a traceback
        raise WitnessInputError(label, "not valid JSON: nested too deeply") from None
    return normalise_inputs(raw, label)


class _UnsafeJsonInt(str):
    """An integer literal in input.json beyond 2^53: JavaScript (snarkjs) would silently round it."""


def _json_int(text: str) -> int | _UnsafeJsonInt:
    """The literal's value where JavaScript's double holds it exactly (snarkjs computes with just that: 10^18
    wei), else a marker refused by name: a double would round it (or overflow to Infinity beyond 309 digits)."""
    if len(text.lstrip("-")) > _DOUBLE_DIGITS:  # no double is this long (JSON has no leading zeros); int() also
        return _UnsafeJsonInt(text)  # refuses 4300 digits and more
    value = int(text)
    return value if abs(value) <= _JS_SAFE or _double_exact(value) else _UnsafeJsonInt(text)


def _double_exact(value: int) -> bool:
    """True when the IEEE double nearest to `value` (what JSON.parse gives) is `value` itself."""
    try:
        return float(value) == value  # Python compares a float with an int exactly
    except OverflowError:  # beyond the largest double: JavaScript's Infinity
        return False


def normalise_inputs(raw: Any, source: str = "inputs") -> Inputs:
    """A JSON-like mapping (as json.load gives, or already normalised) -> {signal: [int, ...]}."""
    if not isinstance(raw, Mapping):
        kind = "an array" if isinstance(raw, list) else type(raw).__name__
        raise WitnessInputError(source, f"expected a JSON object of signal names, got {kind}")
    out: Inputs = {}
    try:
        _qualify("", raw, out, source, 0)
    except (RecursionError, _TooDeep):  # nested beyond MAX_DEPTH, or Python's stack: no circuit's signal is
        raise WitnessInputError(source, "its values are nested too deeply") from None
    return out


# Levels of arrays and bus objects an input may nest: circom's signals have a few dimensions, its buses a few
# levels.  A bound of our own, not Python's recursion limit, which a program (or a library it imports) may raise:
# a 5000-deep list then went through, and pickling it for a worker failed instead.
MAX_DEPTH = 256


class _TooDeep(Exception):
    pass


def _qualify(prefix: str, value: Any, out: Inputs, source: str, depth: int) -> None:
    """Objects name bus fields (`b.x`), arrays of objects index them (`b[0].x`), as circom's JS does."""
    if depth > MAX_DEPTH:
        raise _TooDeep
    if isinstance(value, Mapping):
        if not value and prefix:  # names no signal (circom's JS drops it): snarkjs refuses it, and so do we
            raise WitnessInputError(source, f"{_where(prefix, '')}: {{}} is not a number (expected an integer, "
                                            "decimal or 0x-hex string)")
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise WitnessInputError(source, f"signal name {shown_name(repr(key))} under '{shown_name(prefix)}' "
                                                "is not a non-empty string")
            if not key.isascii() and any("\ud800" <= c <= "\udfff" for c in key):  # JSON's "\ud800": no UTF takes it
                raise WitnessInputError(source, f"signal name {shown_name(repr(key))} holds a lone surrogate "
                                                "(not Unicode text)")
            _qualify(f"{prefix}.{key}" if prefix else key, item, out, source, depth + 1)
    elif (seq := _sequence(value)) is not None and _holds_objects(seq, prefix, source):
        for i, item in enumerate(seq):
            _qualify(f"{prefix}[{i}]", item, out, source, depth + 1)
    else:
        if prefix in out:
            raise WitnessInputError(source, f"signal '{shown_name(prefix)}' is given twice")
        values: list[int] = []
        _flatten(prefix, value, values, source, "", depth)
        out[prefix] = values


def _sequence(value: Any) -> list | tuple | None:
    """Arrays: JSON lists, tuples, and numpy arrays (from callers of the API)."""
    if isinstance(value, (list, tuple)):
        return value
    if getattr(value, "ndim", 0) > 0 and hasattr(value, "tolist"):
        return value.tolist()
    return None


def _holds_objects(items: list | tuple, name: str, source: str) -> bool:
    """True for an array of bus values; an array mixing objects and numbers is an error."""
    kinds = {isinstance(leaf, Mapping) for leaf in _leaves(items)}
    if len(kinds) > 1:
        raise WitnessInputError(source, f"signal '{shown_name(name)}' mixes objects and numbers in one array")
    return kinds == {True}


def _leaves(items: list | tuple):
    stack = [items]
    while stack:
        for item in stack.pop():
            if (seq := _sequence(item)) is not None:
                stack.append(seq)
            else:
                yield item


def _flatten(name: str, value: Any, out: list[int], source: str, index: str = "", depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise _TooDeep
    seq = _sequence(value)
    if seq is None:
        out.append(_to_int(value, name, index, source))
    elif all(type(item) is int for item in seq):  # the common case, and what parse_inputs returns
        out.extend(seq)
    else:
        for i, item in enumerate(seq):
            if _sequence(item) is not None:
                _flatten(name, item, out, source, f"{index}[{i}]", depth + 1)
            else:
                out.append(_to_int(item, name, f"{index}[{i}]", source))


def _to_int(v: Any, name: str, index: str, source: str) -> int:
    """One value as circom reads it (JS BigInt): integers, integral floats, numeric strings, booleans."""
    if isinstance(v, numbers.Integral):  # bool too (BigInt(true) is 1 in circom's JS), numpy integers
        return int(v)
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    if isinstance(v, _UnsafeJsonInt):
        raise WitnessInputError(
            source, f"{_where(name, index)}: the JSON number {_short(v)} is "
            f"{'below -2^53' if v.startswith('-') else 'above 2^53'}, which snarkjs would "
            + ("refuse (JavaScript's Infinity)" if math.isinf(float(v)) else "silently round")
            + f'; write it as a string ("{_short(v)}")'
        )
    if isinstance(v, str):
        s = v.strip(_JS_SPACE)
        if not s:  # BigInt("") and BigInt("  ") are 0n: snarkjs computes with 0
            return 0
        if _INT_RE.fullmatch(s):
            sign = -1 if s[0] == "-" else 1
            digits = s.lstrip("+-")
            try:
                if len(digits) > 2 and digits[0] == "0" and digits[1] in "xXbBoO":
                    return sign * int(digits[2:], _BASES[digits[1].lower()])
                return sign * int(digits, 10)
            except ValueError:  # beyond Python's digit limit for str -> int, far above any field size
                raise WitnessInputError(
                    source, f"{_where(name, index)}: a {len(digits)}-digit number is too long"
                ) from None
        elif s[:1] in "+-" and s[1:3].lower() in ("0x", "0b", "0o") and _INT_RE.fullmatch(s[1:]):  # BigInt refuses
            value = _to_int(s[1:], name, index, source) * (-1 if s[0] == "-" else 1)
            raise WitnessInputError(source, f"{_where(name, index)}: {_short(json.dumps(v))} is not a number: "
                                    f'snarkjs takes a sign only before decimal digits (write "{_short(str(value))}")')
    shown = _short(json.dumps(v) if isinstance(v, (str, float, type(None))) else type(v).__name__)
    raise WitnessInputError(
        source, f"{_where(name, index)}: {shown} is not a number (expected an integer, decimal or 0x-hex string)"
    )


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _where(name: str, index: str) -> str:
    return f"signal '{shown_name(name)}{index}'"


def shown_name(name: str, limit: int = 60) -> str:
    """A signal name as an error shows it: on one line (a newline or tab escaped) and at most `limit` characters
    (input.json may hold a 100 KB name, which the message echoed whole)."""
    text = name if name.isprintable() else repr(name)[1:-1]
    return text if len(text) <= limit else text[:limit - 3] + "..."
