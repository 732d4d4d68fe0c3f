"""Every error the service answers with: an HTTP status, a stable code and a one-line message.

The body is always JSON, `{"error": code, "message": text}`; clients branch on
`error`, people read `message`.  Engine errors map by type: what the client
sent is wrong (4xx), or the server could not do it (5xx).
"""
from __future__ import annotations

from engine.errors import (
    BudgetError,
    EngineClosedError,
    EngineError,
    InputFileError,
    MismatchError,
    UnsatisfiedWitnessError,
    WitnessGenerationError,
)


class Problem(Exception):
    """An HTTP error answer."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}
        super().__init__(message)

    def body(self) -> dict:
        return {"error": self.code, "message": self.message}


def bad_request(message: str) -> Problem:
    return Problem(400, "bad_request", message)


def not_found(message: str) -> Problem:
    return Problem(404, "not_found", message)


# Most specific first: the first match wins.
_ENGINE_ERRORS: list[tuple[type, int, str]] = [
    (UnsatisfiedWitnessError, 422, "unsatisfied_witness"),
    (WitnessGenerationError, 422, "witness_generation_failed"),
    (MismatchError, 422, "mismatch"),  # another circuit's witness, another curve's
    (InputFileError, 422, "bad_input"),  # an unreadable or malformed file (an upload, a key path)
    (BudgetError, 507, "too_large_for_budget"),
    (EngineClosedError, 503, "shutting_down"),
]


def from_engine_error(exc: EngineError, replace: dict[str, str] | None = None) -> Problem:
    """The Problem for an engine error; `replace` renames server-side paths (the spool file) in its message."""
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    for old, new in (replace or {}).items():
        message = message.replace(old, new)
    for kind, status, code in _ENGINE_ERRORS:
        if isinstance(exc, kind):
            return Problem(status, code, message)
    return Problem(500, "engine_error", message)  # a device error, a failed verification: ours, not the client's
