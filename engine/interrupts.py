"""Ctrl-C on the CLI: a KeyboardInterrupt that some code swallows still counts, and one that comes once the
proof is being written is too late to undo it.

Python raises KeyboardInterrupt wherever the main thread happens to be, and
code that clears every error (a C extension's attribute probe, a `__del__`,
an `except BaseException: pass` in a library) can swallow it: the command
would go on and write its files as if no Ctrl-C had come.  While `recorded()`
is active the handler also notes that it ran, and `check()` raises again
before anything is written.  Only the direct path installs it: the asyncio
Runner turns Ctrl-C into a cancellation of its main task only while Python's
own handler is installed.

`finished()`, just before the files are written: from there the command has
succeeded and Ctrl-C is ignored.  Otherwise a late one either cuts the
writing short or lands in the interpreter's teardown, which then drops it
(exit 0) or dies of it (exit -2), files written either way.  It acts only
when the CLI owns the process (`python -m engine`: `own_process()`), not
for a `cli.main` called inside another program.
"""
from __future__ import annotations

import contextlib
import signal
import threading

TYPE_CHECKING = False  # typing's flag without importing typing (`prove --server` loads cli.main, and this)
if TYPE_CHECKING:
    from typing import Iterator

_seen = False
_owned = False  # the CLI runs as this process's main program (cli.main under engine/__main__)


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
        if signal.getsignal(signal.SIGINT) is _on_sigint:  # (not if finished() has made it SIG_IGN)
            signal.signal(signal.SIGINT, signal.default_int_handler)
        _seen = False


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came inside `recorded()`, even one that was swallowed."""
    if _seen:
        raise KeyboardInterrupt


def own_process() -> None:
    """The CLI is this process's main program: `finished()` may change how the process treats Ctrl-C."""
    global _owned
    _owned = True


def finished() -> None:
    """The files are about to be written and the process to exit: from here Ctrl-C is ignored."""
    if _owned and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
