"""A duration in milliseconds from an environment variable (the spin and polling budgets), read one way:
unset or empty is the default, anything but a number >= 0 is one clear error naming the variable."""
from __future__ import annotations

import os


def milliseconds(env: str, default_ms: float, error: type[Exception], off: str) -> float:
    """`env`'s value in ms, else `default_ms`; `error(message)` for a bad one (`off`: what 0 does)."""
    raw = os.environ.get(env, "").strip()
    try:
        ms = float(raw) if raw else default_ms
    except ValueError:
        raise error(f"{env}={raw!r}: expected a number of milliseconds (0 {off})") from None
    if not ms >= 0:  # negative or NaN
        raise error(f"{env}={raw!r}: must be >= 0 ms (0 {off})")
    return ms
