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
    try:
        state = pickle.dumps((exc.args, dict(getattr(exc, "__dict__", {}))))
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
