"""Errors across the actor boundary: the caller gets the exception the engine raised, not Ray's wrapper.

Ray hands a task's exception back as a `RayTaskError` that subclasses the
original type and carries a remote traceback in its message; and an
exception whose `__init__` takes other arguments than its message (such as
`InputFileError(path, problem)`) does not survive pickling at all.  So the
actor never lets an error escape: it returns `Failure(pack(exc))`, and the
driver raises `unpack(...)`, an instance of the same class with the same
message and attributes, built without calling its `__init__`.
"""
from __future__ import annotations

import pickle
import re
from dataclasses import dataclass
from typing import Any

from engine.errors import EngineError


@dataclass(frozen=True)
class Failure:
    """What an actor method returns in place of raising: the packed exception."""

    packed: bytes
    loading: bool = False  # the job's key would not load on that engine (others may hold it): not the job's fault
    log: Any = None  # the job's circuit log lines before its error (a JobLog), shown by the driver (`received`)


@dataclass(frozen=True)
class Logged:
    """A job's result with its circuit's log() lines, made in the actor's process (a JobLog, bounded)."""

    value: Any
    log: Any


# A job's lines that come back through Ray: one witness's as the local path keeps them (its synthesis worker keeps
# 2001: task_log), within 8 MiB of text a job however many witnesses it has.
RAY_LOG_LINES = 10_000
RAY_LOG_CHARS = 8 << 20


def received(result: Any) -> Any:
    """An actor's answer in the driver: the job's carried log lines logged here (under the same logger, each
    record's `witness` naming its witness, as the local Engine logs them), the result without them."""
    log = result.log if isinstance(result, (Logged, Failure)) else None
    if log is not None and (log.lines or log.left_out):
        import logging  # noqa: PLC0415

        for name, level, text, witness in log.lines:
            logger = logging.getLogger(name)
            if logger.isEnabledFor(level):
                logger.handle(logger.makeRecord(name, level, "(ray engine)", 0, text, None, None,
                                                extra={"witness": witness}))
        if log.left_out:
            logging.getLogger(log.lines[0][0] if log.lines else "engine.witness.calculator").info(
                "%d more log lines of this job left out (an engine sends back its first %d)", log.left_out,
                len(log.lines))
    return result.value if isinstance(result, Logged) else result


def _rebuild(cls: type, args: tuple, state: dict) -> BaseException:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class _Packer(pickle.Pickler):
    """Pickles exceptions (the outer one and any inside its state) by class, args and attributes."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, BaseException):
            state = {k: v for k, v in vars(obj).items() if not k.startswith("__")}
            return _rebuild, (type(obj), tuple(obj.args), state)
        return NotImplemented


def pack(exc: BaseException) -> bytes:
    """The exception as bytes; one that cannot be pickled becomes an EngineError with its message."""
    import io  # noqa: PLC0415

    for candidate in (exc, EngineError(f"{type(exc).__name__}: {exc}")):
        buf = io.BytesIO()
        try:
            _Packer(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(candidate)
        except Exception:  # an attribute that does not pickle: keep the type's message only
            continue
        return buf.getvalue()
    raise AssertionError("unreachable: an EngineError with a str message always pickles")


def unpack(packed: bytes) -> BaseException:
    """The exception again; a class this side cannot import becomes an EngineError with its message."""
    try:
        return pickle.loads(packed)
    except Exception as exc:
        return EngineError(f"an engine raised an error this process cannot rebuild ({type(exc).__name__}: {exc})")


def failure(exc: BaseException, *, loading: bool = False, log: Any = None) -> Failure:
    return Failure(pack(exc), loading, log if log is not None and (log.lines or log.left_out) else None)


def task_error(key: Any, exc: BaseException, theirs: bool) -> EngineError:
    """The error of a job's argument (such as the Ray task that was to make a witness given as its ObjectRef):
    an EngineError as itself (as if the caller had made the witness here), any other as one line naming it."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, EngineError):
        return cause
    if cause is None or type(cause).__name__ == "UnserializableException":
        # an error Ray could not rebuild: its text ends with the original's line, "module.Class: message"
        lines = [ln.strip() for ln in _ANSI.sub("", str(cause or exc)).splitlines() if ln.strip()]
        found = _ERROR_LINE.match(lines[-1]) if lines else None
        what = f"{found['name']}: {found['message']}" if found else first_line(cause or exc)
    else:
        what = first_line(cause)
    where = "a witness given as a Ray object reference failed" if theirs else "Ray could not run the job"
    return EngineError(f"{key.label}: {where}: {what}")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(?P<name>\w+): (?P<message>.*)$")


def first_line(exc: BaseException) -> str:
    text = _ANSI.sub("", str(exc)).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")

