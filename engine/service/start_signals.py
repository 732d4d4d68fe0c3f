"""serve's Ctrl-C and stop signals until its engine has started: the start ends, but never by an exception raised
inside code that cannot take one there.

From engine/commands/serve.py's start until the event loop takes the signals (engine/service/server.py), SIGINT
lands in `on_interrupt`, and SIGTERM, SIGHUP and SIGQUIT too (engine/interrupts.py's _on_stop hands them on).
Python's own handler raised KeyboardInterrupt wherever the main thread was, and some places cannot take it:

* anyio's hand-off to a worker thread, between the thread's start and anyio's tying its stop to the loop's main
  task: that thread (not a daemon) waited for work forever, the exit (threading._shutdown) waited for it, and
  every later signal was ignored: serve never ended (once in some 400 stops during its start);
* an import (numpy's, aiohttp's, 90-210 ms into the start: now serve's preload, before this window; uvloop's and
  the engine's pools' are still in it) or a C extension calling back into Python (msgspec's convert of the
  configuration): the process died of SIGSEGV (-11), or importlib's lock callback swallowed the interrupt
  ("Exception ignored") and serve went on to listen, its SIGTERM lost.

So a KeyboardInterrupt is raised only in our own code (engine/, scheduler/: a --timeline FIFO's open() or a
--config FIFO's read waits there, and only an exception ends that wait), outside any import, and, once the loop
runs, in serve's own task.  Elsewhere in the running loop serve's task is cancelled, as asyncio's Runner does for
Ctrl-C (serve turns that into the KeyboardInterrupt: `cancelled`).  Before serve's task runs, the interrupt is
handed again every few milliseconds until the main thread is somewhere it may be raised; where that thread has
not moved for STUCK_S (a blocking call in a library's frame), it is raised there all the same.  Two checkpoints
in serve (`begin`, `started`) raise one that was swallowed.  Another signal meanwhile ends the process at once,
with the first one's line (`arm`'s `leave`: engine/interrupts.py's forced exit), as before.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

RETRY_S = 0.005  # how often an interrupt that waits for a safe place is handed again
STUCK_S = 0.5  # a main thread unmoved this long is blocked in a call: the interrupt is raised there
_OURS = frozenset({"engine", "scheduler", "cuda_kernels", "cli"})  # top-level packages whose code may take it

_state = "idle"  # "deferred" (waits for a safe place), then "raised" or "cancelled" (handed to serve)
_signum = 0  # the first signal's number: a re-delivery goes through its own handler
_retries: list[bool] = []  # re-deliveries sent and not yet handled; True: the main thread was stuck
_task = None  # serve's task (begin), while its start runs
_leave = None  # arm()'s: ends the process at once, with the first signal's line and code


def arm(leave) -> None:
    """engine/interrupts.py's stop_until_serving, as it installs `on_interrupt` for a serve that starts:
    `leave(signum)` is what another signal does (given, not imported: this module is below engine.interrupts)."""
    global _leave, _state, _task
    _leave, _state, _task = leave, "idle", None
    _retries.clear()


def on_interrupt(signum: int, frame) -> None:
    """SIGINT's handler, and the stop signals' through engine/interrupts.py's _on_stop, during serve's start."""
    global _state, _signum
    retry = _retries.pop() if _retries else None
    if retry is None and _state != "idle":  # a second signal: at once, as engine/interrupts.py's exit_on_another
        if _leave is not None:
            _leave(signum)
        os._exit(128 + signum)  # (not armed: serve's own caller installed this handler)
    if retry is not None and _state != "deferred":
        return  # a re-delivery sent just before the first one was handed over
    if _state == "idle":
        _signum = signum
    loop, task = _loop_and_task()
    if retry or _may_raise(frame, loop, task):
        _state = "raised"
        raise KeyboardInterrupt
    if task is not None:  # asyncio's own way: the task's next await raises CancelledError
        _state = "cancelled"
        task.cancel()
        loop.call_soon_threadsafe(_nothing)  # (wakes the loop's select)
        return
    if _state != "deferred":
        _state = "deferred"
        _deliver_later()


def begin(task) -> None:
    """serve's task runs (the event loop with it): from here an interrupt elsewhere in the loop cancels `task`.  One
    that came before and has not ended the start (swallowed, or waiting for a safe place) is raised here."""
    global _task, _state
    _task = task
    if callable(signal.getsignal(signal.SIGINT)) and signal.getsignal(signal.SIGINT) is not on_interrupt:
        signal.signal(signal.SIGINT, on_interrupt)  # (not one ignored since the start)
    if _state != "idle":
        _state = "raised"
        raise KeyboardInterrupt


async def started() -> None:
    """The engine has started, the loop is about to take the signals: an interrupt that came during the start and
    has not ended it (a cancellation not yet delivered, or a KeyboardInterrupt that code swallowed) ends it now."""
    global _state
    if _state == "cancelled":
        import asyncio  # noqa: PLC0415 - loaded: the loop runs

        await asyncio.sleep(0)  # a cancellation still pending is raised here
    if _state != "idle":
        _state = "raised"
        raise KeyboardInterrupt


def cancelled() -> bool:
    """Whether serve's task was cancelled by an interrupt (its CancelledError is that KeyboardInterrupt)."""
    return _state == "cancelled"


def end() -> None:
    global _task
    _task = None


def _loop_and_task():
    """The event loop running on this thread (None before the Runner runs one) and serve's task, if it runs there."""
    loop = _running_loop()
    task = _task
    if task is None or loop is None or task.done() or task.get_loop() is not loop:
        task = None
    return loop, task


def _running_loop():
    """asyncio's running loop, where asyncio is loaded: not imported here, and the signal may come while asyncio
    itself is being imported (its module there without _get_running_loop yet: an AttributeError traceback)."""
    for name in ("_asyncio", "asyncio.events"):
        get = getattr(sys.modules.get(name), "_get_running_loop", None)
        if get is not None:
            return get()
    return None


def _may_raise(frame, loop, task) -> bool:
    """Whether a KeyboardInterrupt may be raised in `frame`: our own code, no import under way, and, where a loop
    runs, inside serve's task (not another task's step or the loop's own callbacks)."""
    if frame is None or frame.f_globals.get("__name__", "").partition(".")[0] not in _OURS:
        return False
    if frame.f_code.co_name == "__del__":  # (what a finaliser raises is printed and dropped)
        return False
    if _importing(frame):
        return False
    if loop is None:
        return True
    import asyncio  # noqa: PLC0415 - loaded: a loop runs

    return task is not None and asyncio.current_task(loop) is task


def _importing(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _nothing() -> None:
    pass


def _deliver_later() -> None:
    """A thread that sends the first signal again to the main thread every RETRY_S while the interrupt waits
    (on_interrupt decides each time), marked as stuck where that thread has not moved for STUCK_S.  A real signal,
    not _thread.interrupt_main(): a blocking call returns EINTR to take it."""
    main = threading.main_thread()

    def again() -> None:
        last, since = None, time.monotonic()
        while True:
            time.sleep(RETRY_S)
            if _state != "deferred" or not callable(signal.getsignal(_signum)):  # (not SIG_DFL: it would kill)
                return
            place = _place(sys._current_frames().get(main.ident))
            now = time.monotonic()
            if place != last:
                last, since = place, now
            if not _retries:  # (the one sent before has been handled)
                _retries.append(now - since >= STUCK_S)
                signal.pthread_kill(main.ident, _signum)

    try:
        threading.Thread(target=again, name="interrupt-later", daemon=True).start()
    except RuntimeError:  # no thread to be had: engine/interrupts.py's watchdog still ends a start that is stuck
        pass


def _place(frame):
    """Where the main thread is, its signal handlers' own frames left out (each re-delivery runs them)."""
    while frame is not None and frame.f_code.co_filename in (__file__, _interrupts_file()):
        frame = frame.f_back
    return None if frame is None else (frame, frame.f_lasti)


def _interrupts_file() -> str:
    interrupts = sys.modules.get("engine.interrupts")
    return getattr(interrupts, "__file__", "") or ""
