"""A number from an environment variable (the spin and polling budgets in ms, the CLI's staging bound in MiB, the
A/B switches' counts), read one way: unset or empty is the default, anything else out of range is one clear error
naming the variable.  Only ASCII digits make a number (int() and float() also read '١' and '1_0', which no one
types meaning a count), and a number is finite: no variable here documents inf ("no limit"), and each read it as
one (a spin that spun until the answer came, a pinning bound that never pinned)."""
from __future__ import annotations

import math
import os
import re

# a decimal number as the docs write them (5, 1.5, .5, 2e3), signs allowed so that -1 is said to be out of range
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NOT_FINITE = frozenset(sign + word for sign in ("", "+", "-") for word in ("inf", "infinity", "nan"))
# the spin and polling budgets: a wait of a second or more burnt on a core is no spin before an answer
MAX_SPIN_MS = 1000.0


def cut(text: str) -> str:
    """A message's rendering of a value, cut at 40 characters (5000 digits were a 5000-character line)."""
    return text if len(text) <= 40 else text[:37] + "..."


def quoted_value(text: str) -> str:
    """A variable's or a flag's value for a message: quoted, and cut where it is long (engine/config_flags.py's
    flags use it too)."""
    return cut(repr(text))


def _shown(env: str, raw: str) -> str:
    """`NAME='value'` for a message, the value cut where it is long."""
    return f"{env}={quoted_value(raw)}"


def number(env: str, default: float, error: type[Exception], off: str, unit: str, short: str,
           most: float | None = None) -> float:
    """`env`'s value in `unit`s, else `default`; `error(message)` for a bad one (`off`: what 0 does): not a
    decimal number, negative, nan, inf (or 1e400, which float() makes inf), or above `most` where one is given."""
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    span = f"from 0 to {most:g} {short}" if most is not None else f">= 0 {short}"
    if _DECIMAL.fullmatch(raw):
        value = float(raw)
    elif raw.lower() in _NOT_FINITE:  # (one sign at most: `+-inf` was read as nan, "must be a finite number")
        value = math.nan
    else:
        raise error(f"{_shown(env, raw)}: expected a number of {unit} (0 {off})")
    if not math.isfinite(value):  # inf, nan, or more digits than a float holds
        raise error(f"{_shown(env, raw)}: must be a finite number, {span} (0 {off})")
    if value < 0 or (most is not None and value > most):
        raise error(f"{_shown(env, raw)}: must be {span} (0 {off})")
    return value


def milliseconds(env: str, default_ms: float, error: type[Exception], off: str,
                 most: float = MAX_SPIN_MS) -> float:
    """`env`'s value in ms, else `default_ms`: a spin or polling budget, so at most `most` (MAX_SPIN_MS)."""
    return number(env, default_ms, error, off, "milliseconds", "ms", most)


def integer(env: str, default: int | None, error: type[Exception], least: int = 0, most: int | None = None,
            what: str = "") -> int | None:
    """`env`'s value as a whole number in [least, most], else `default`; `error(message)` for a bad one (int() of
    it was a ValueError traceback).  `what`: what the number is, for the message."""
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    span = f">= {least}" if most is None else f"from {least} to {most}"
    said = what and f" ({what})"
    if not _WHOLE.fullmatch(raw):  # (int() took '١' and '1_0')
        raise error(f"{_shown(env, raw)}: expected a whole number {span}{said}")
    try:
        value = int(raw, 10)
    except ValueError:  # whole, but over Python's 4300 digits (int() refuses)
        raise error(f"{_shown(env, raw)}: a number of over 4300 digits; must be {span}{said}") from None
    if value < least or (most is not None and value > most):
        raise error(f"{_shown(env, raw)}: must be {span}{said}")
    return value


def choice(env: str, default: str | None, choices, error: type[Exception]) -> str | None:
    """`env`'s value, one of `choices`, else `default`; `error(message)` for any other (an A/B switch given
    "true" or "yes" was ignored without a word, a variant name was a ValueError traceback)."""
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    if raw not in choices:
        raise error(f"{_shown(env, raw)}: expected one of {', '.join(choices)} (or unset)")
    return raw


def switch(env: str, error: type[Exception]) -> bool | None:
    """An A/B switch: "1" True, "0" False, unset or empty None (the measured default)."""
    value = choice(env, None, ("0", "1"), error)
    return None if value is None else value == "1"


def table(env: str, keys, choices, error: type[Exception]) -> dict[str, str] | None:
    """`env`'s `KEY=CHOICE,KEY=CHOICE` (each key of `keys` at most once, spaces around the parts allowed), else
    None where unset or empty; `error(message)` for anything else, the variable named and its value cut."""
    raw = os.environ.get(env, "").strip()
    if not raw:
        return None
    out: dict[str, str] = {}
    for part in raw.split(","):
        key, sep, value = (p.strip() for p in part.partition("="))
        if not sep or key not in keys or value not in choices:
            raise error(f"{_shown(env, raw)}: expected KEY=VALUE pairs separated by commas, KEY one of "
                        f"{', '.join(keys)}, VALUE one of {', '.join(choices)}")
        if key in out:
            raise error(f"{_shown(env, raw)}: {key} is given twice")
        out[key] = value
    return out


def config_error(message: str) -> Exception:
    """The engine's ConfigError for `message`, for the helpers' `error` where the caller does not import
    engine.config (msgspec) itself."""
    from engine.errors import ConfigError  # noqa: PLC0415 - only for a bad value

    return ConfigError(message)
