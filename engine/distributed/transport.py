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


def failure(exc: BaseException, *, loading: bool = False) -> Failure:
    return Failure(pack(exc), loading)


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

