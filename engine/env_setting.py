"""A number from an environment variable (the spin and polling budgets in ms, the CLI's staging bound in MiB, the
A/B switches' counts), read one way: unset or empty is the default, anything else out of range is one clear error
naming the variable."""
from __future__ import annotations

import os
import re


def _shown(env: str, raw: str) -> str:
    """`NAME='value'` for a message, the value cut where it is long (5000 digits were a 5000-character line)."""
    text = repr(raw)
    return f"{env}={text if len(text) <= 40 else text[:37] + '...'}"


def number(env: str, default: float, error: type[Exception], off: str, unit: str, short: str) -> float:
    """`env`'s value in `unit`s, else `default`; `error(message)` for a bad one (`off`: what 0 does)."""
    raw = os.environ.get(env, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise error(f"{_shown(env, raw)}: expected a number of {unit} (0 {off})") from None
    if not value >= 0:  # negative or NaN
        raise error(f"{_shown(env, raw)}: must be >= 0 {short} (0 {off})")
    return value


def milliseconds(env: str, default_ms: float, error: type[Exception], off: str) -> float:
    """`env`'s value in ms, else `default_ms`."""
    return number(env, default_ms, error, off, "milliseconds", "ms")


def integer(env: str, default: int | None, error: type[Exception], least: int = 0, most: int | None = None,
            what: str = "") -> int | None:
    """`env`'s value as a whole number in [least, most], else `default`; `error(message)` for a bad one (int() of
    it was a ValueError traceback).  `what`: what the number is, for the message."""
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    span = f">= {least}" if most is None else f"from {least} to {most}"
    said = what and f" ({what})"
    try:
        value = int(raw, 10)
    except ValueError:
        if re.fullmatch(r"[+-]?[0-9]+", raw, re.ASCII):  # whole, but over Python's 4300 digits (int() refuses)
            raise error(f"{_shown(env, raw)}: a number of over 4300 digits; must be {span}{said}") from None
        raise error(f"{_shown(env, raw)}: expected a whole number {span}{said}") from None
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


def config_error(message: str) -> Exception:
    """The engine's ConfigError for `message`, for the helpers' `error` where the caller does not import
    engine.config (msgspec) itself."""
    from engine.config import ConfigError  # noqa: PLC0415 - only for a bad value

    return ConfigError(message)
