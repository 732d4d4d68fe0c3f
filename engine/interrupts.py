"""Ctrl-C on the CLI's direct path: a KeyboardInterrupt that some code swallows still counts.

Python raises KeyboardInterrupt wherever the main thread happens to be, and
code that clears every error (a C extension's attribute probe, a `__del__`,
an `except BaseException: pass` in a library) can swallow it: the command
would go on and write its files as if no Ctrl-C had come.  While `recorded()`
is active the handler also notes that it ran, and `check()` raises again
before anything is written.

Only the direct path installs it: the asyncio Runner turns Ctrl-C into a
cancellation of its main task only while Python's own handler is installed.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

_seen = False


def _on_sigint(signum, frame) -> None:
    global _seen
    _seen = True
    raise KeyboardInterrupt


@contextlib.contextmanager
def recorded() -> Iterator[None]:
    """Inside, Ctrl-C raises KeyboardInterrupt as usual and is remembered for `check()`."""
    global _seen
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield  # not the CLI's main thread with Python's handler: leave the handler alone
        return
    _seen = False
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _seen = False


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came inside `recorded()`, even one that was swallowed."""
    if _seen:
        raise KeyboardInterrupt
