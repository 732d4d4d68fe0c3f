"""An exception raised in a worker process, carried back to the caller as the same type and message.

Exceptions do not always survive pickle (one whose `__init__` takes other
arguments than its `args`, such as `InputFileError(path, problem)`), and a
pool that cannot unpickle a reply must not break: so a worker sends the
class's import name, its args and attributes, and its text; the parent
rebuilds the same type without calling `__init__`, or, when the type cannot
be found, a `fallback` error that quotes the text.  Used by both process pools
(synth_pool, cpu_pool).
"""
from __future__ import annotations

import importlib
import pickle
import traceback


def describe_error(exc: BaseException) -> tuple:
    """What a worker sends for `exc` (picklable whatever `exc` holds)."""
    cls = type(exc)
    text = f"{cls.__name__}: {exc}"
    attrs = dict(getattr(exc, "__dict__", {}))
    if isinstance(exc, OSError):  # its file names are slots, not attributes: without them str(exc) names no file
        attrs["filename"], attrs["filename2"] = exc.filename, exc.filename2
    try:
        state = pickle.dumps((exc.args, attrs))
    except Exception:
        state = pickle.dumps(((str(exc),), {}))
    return (cls.__module__, cls.__qualname__, state, text, traceback.format_exc())


def rebuild_error(module: str, qualname: str, state: bytes, text: str, tb: str, *,
                  fallback: type[Exception], prefix: str) -> BaseException:
    """The worker's exception, same type and message where it can be rebuilt; else fallback(prefix + text)."""
    try:
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        if isinstance(cls, type) and issubclass(cls, Exception):
            args, attrs = pickle.loads(state)
            exc = _os_error(cls, args, attrs) if issubclass(cls, OSError) else None
            if exc is None:
                exc = cls.__new__(cls)
                exc.args = tuple(args)
            exc.__dict__.update(attrs)
            exc.worker_traceback = tb
            return exc
    except Exception:
        pass
    exc = fallback(f"{prefix}{text}")
    exc.worker_traceback = tb
    return exc


def _os_error(cls: type, args: tuple, attrs: dict) -> OSError | None:
    """An OSError made through its constructor, which alone sets errno, strerror and the file names (slots);
    None where `cls` takes other arguments."""
    names = attrs.pop("filename", None), attrs.pop("filename2", None)
    if len(args) != 2:
        return None
    try:
        return cls(args[0], args[1], names[0], None, names[1])
    except Exception:  # noqa: BLE001 - a subclass with its own __init__
        return None
