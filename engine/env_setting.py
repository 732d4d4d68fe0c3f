"""A number from an environment variable (the spin and polling budgets in ms, the CLI's staging bound in MiB),
read one way: unset or empty is the default, anything but a number >= 0 is one clear error naming the variable."""
from __future__ import annotations

import os


def number(env: str, default: float, error: type[Exception], off: str, unit: str, short: str) -> float:
    """`env`'s value in `unit`s, else `default`; `error(message)` for a bad one (`off`: what 0 does)."""
    raw = os.environ.get(env, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise error(f"{env}={raw!r}: expected a number of {unit} (0 {off})") from None
    if not value >= 0:  # negative or NaN
        raise error(f"{env}={raw!r}: must be >= 0 {short} (0 {off})")
    return value


def milliseconds(env: str, default_ms: float, error: type[Exception], off: str) -> float:
    """`env`'s value in ms, else `default_ms`."""
    return number(env, default_ms, error, off, "milliseconds", "ms")
