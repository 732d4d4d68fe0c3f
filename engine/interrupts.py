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

SIGTERM, SIGHUP and SIGQUIT (a service manager's stop, a closed terminal, Ctrl-\\) take Ctrl-C's way out where
the CLI owns the process (`own_process()`): whatever handles Ctrl-C at that moment (Python's, the asyncio
Runner's, `recorded()`'s) runs, so the CPU pool's workers, shared memory and started files are cleaned up as
for Ctrl-C, and the command exits 128 + the signal's number with one line naming it.  They used to kill the
process where it stood (orphan workers, /dev/shm blocks, a started timeline left behind, SIGQUIT a core).  A
signal the process was started ignoring (`nohup`, a script's `cmd &`) stays ignored, SIGINT included.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading

TYPE_CHECKING = False  # typing's flag without importing typing (`prove --server` loads cli.main, and this)
if TYPE_CHECKING:
    from typing import Iterator

_seen = False
_owned = False  # the CLI runs as this process's main program (cli.main under engine/__main__)
_finished = False  # finished() ran: every interrupt is too late
_stopped_by: int | None = None  # the first of STOP_SIGNALS that came (None: none, or only Ctrl-C)
_start_guard = None  # serve's start (stop_until_serving): what _on_stop hands a stop signal to, not Ctrl-C's handler
# finished() and the watchdog's forced exit: whichever takes it first rules out the other.  The watchdog checked
# _finished, lost the CPU to the main thread, which wrote the proof, and still exited 130; now it holds this lock
# from its check to its exit, and finished() (before any output is renamed into place) waits for it.  Reentrant:
# a handler that exits (_leave_now) may run in the main thread while it is inside finished()
_end = threading.RLock()
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


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


def own_process(stop_signals: bool = True, json: bool = False) -> None:
    """The CLI is this process's main program: `finished()` may change how the process treats Ctrl-C.
    Start-up handlers (engine/__main__'s, marked `loading`) give way to Python's for SIGINT and to `_on_stop` for
    STOP_SIGNALS (serve's too: at their default action until stop_until_serving, a SIGTERM there killed it with no
    line); a signal whose handler is anything else (ignored since the process started) is left alone.  With
    `stop_signals` (not serve, which handles them itself once it serves), a watchdog (_watch) ends a main thread
    that cannot run the handlers; `json`: its line is a JSON object."""
    global _owned, _finished, _stopped_by, _json, _one_command, _start_guard
    _owned, _finished, _stopped_by, _json, _one_command = True, False, None, json, stop_signals
    _start_guard = None
    _stops_ignored.clear()
    _made.clear()
    _removed.clear()
    if getattr(signal.getsignal(signal.SIGINT), "loading", False):
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here Ctrl-C is KeyboardInterrupt
    for signum in STOP_SIGNALS:
        if getattr(signal.getsignal(signum), "loading", False):
            signal.signal(signum, _on_stop)
    if stop_signals:
        _start_watch()


def stop_until_serving() -> None:
    """serve, before its event loop takes SIGTERM, SIGHUP and SIGQUIT (engine/service/server.py): until then they
    stop it as they stop `prove` (one that came while serve read its --config or --token-file, a FIFO nobody writes,
    killed it with no line), and they and Ctrl-C go to engine/service/start_signals.py, which raises the
    KeyboardInterrupt only where the code can take it (not in an import, nor inside anyio's thread hand-off)."""
    global _start_guard
    if not _owning_main():
        return
    from engine.service import start_signals  # noqa: PLC0415 - small (signal, sys, threading, time)

    start_signals.arm(_force_exit)
    _start_guard = start_signals.on_interrupt
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not one ignored since the start)
        signal.signal(signal.SIGINT, start_signals.on_interrupt)
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _on_stop)
    _start_watch()


def ignore_from_here() -> None:
    """serve failed or was stopped before it served, its line about to be said (its engine, if started, closed): a
    second signal must not kill it in the interpreter's teardown (which puts Python's handlers back to the default
    action: exit -15, -2 after the line) nor raise into it.  Nothing runs any more that a signal could stop."""
    _every_handled_signal_to(signal.SIG_IGN)


def exit_on_another() -> None:
    """serve was stopped while its engine started, and undoes that start: another signal now ends it at once,
    with the first one's line and code (_force_exit), not inside that clean-up, which it cut short (the engine's
    threads were never stopped, and the exit waited for them forever)."""
    _every_handled_signal_to(_leave_now)


def _owning_main() -> bool:
    return _owned and threading.current_thread() is threading.main_thread()


def _every_handled_signal_to(handler) -> None:
    """SIGINT and the stop signals to `handler`, but one the process was started ignoring (nohup) or not Python's."""
    global _start_guard
    if not _owning_main():
        return
    _start_guard = None
    for signum in (signal.SIGINT, *STOP_SIGNALS):
        if signal.getsignal(signum) not in (signal.SIG_IGN, None):
            signal.signal(signum, handler)


def _leave_now(signum, frame) -> None:
    _force_exit(signum)


# A signal's Python handler runs only when the main thread runs Python code.  Inside one long C call (a
# circuit.wasm's computation in wasmtime, or one that never returns) it waits for the call's end, maybe
# forever: Ctrl-C and SIGTERM were then ignored and only SIGKILL ended `witness`.  The C-level handler still
# writes the signal's number to Python's wakeup descriptor at once; a thread reads it there and, where the
# main thread has not moved for WATCH_GRACE_S, ends the process as the signal's default action would, with
# the command's line and code, and without the temporary files of a write that was under way.
WATCH_GRACE_S = 3.0
_json = False
_watching = False


def _start_watch() -> None:
    global _watching
    if _watching or threading.current_thread() is not threading.main_thread():
        return
    try:
        read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, AttributeError):  # (not Linux)
        return
    try:
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    except (OSError, ValueError):
        previous = None
    if previous != -1:  # not settable, or someone else's (an event loop's): theirs stays
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(read_end)
        os.close(write_end)
        return
    os.set_blocking(read_end, True)
    try:
        threading.Thread(target=_watch, args=(read_end,), name="interrupt-watch", daemon=True).start()
    except RuntimeError:  # no thread to be had (a small RLIMIT_AS): the command runs without the watchdog
        signal.set_wakeup_fd(-1)
        os.close(read_end)
        os.close(write_end)
        return
    _watching = True


def _watch(read_end: int) -> None:
    """The watchdog's thread: each signal number read, the main thread's place; unmoved after the grace, exit."""
    import sys  # noqa: PLC0415
    import time  # noqa: PLC0415

    main = threading.main_thread()
    ours = {signal.SIGINT, *STOP_SIGNALS}
    while True:
        try:
            data = os.read(read_end, 64)
        except OSError:
            return
        if not data:
            return
        signums = [n for n in data if n in ours]
        frame = sys._current_frames().get(main.ident)
        if not signums or _finished or frame is None:
            continue
        at, deadline = (frame, frame.f_lasti), time.monotonic() + WATCH_GRACE_S
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = sys._current_frames().get(main.ident)
            if now is None or (now, now.f_lasti) != at:  # the main thread runs Python: its handler acts
                break
        else:
            _force_exit(signums[0], unless_finished=True)


def _force_exit(signum: int, unless_finished: bool = False) -> None:
    """The main thread is stuck in C code: the command's interrupted line, its temporary files and shared memory
    removed, exit.  `unless_finished` (the watchdog): not where finished() came first; once past that check the
    lock is held to the exit, so no output is renamed into place after it."""
    global _stopped_by
    _end.acquire()  # never released: the process ends holding it
    if unless_finished and _finished:
        _end.release()
        return
    if signum != signal.SIGINT and _stopped_by is None:
        _stopped_by = signum
    import sys  # noqa: PLC0415

    file_writes = sys.modules.get("engine.file_writes")
    if file_writes is not None:
        file_writes.remove_temporaries()
    remove_made_directories()  # (after the temporaries: they may be what was in them)
    line, code = interrupted()
    if _json:
        import json  # noqa: PLC0415

        line = json.dumps({"event": "error", "error": "Interrupted", "message": line, "exit_code": code})
    for path in _started:  # a --timeline this command began: Ctrl-C's way out removes it too (engine/commands/prove)
        try:
            os.unlink(path)
        except OSError:
            pass
    shm = sys.modules.get("scheduler.shm")
    if shm is not None:  # its at-exit removal, which os._exit skips: the witness blocks stayed in /dev/shm (RAM)
        try:
            shm._remove_own()
        except Exception:  # noqa: BLE001 - leaving anyway; the next maker's sweep removes what is left
            pass
    try:
        os.write(2, (b"" if _json else _line_start()) + line.encode() + b"\n")  # (--json draws no bar)
    except OSError:
        pass
    os._exit(code)


def _line_start() -> bytes:
    """On a terminal, its line cleared first as BarProgress.done() clears it: a bar drawn there (the main thread
    stuck in its stage) got the interrupted line on its end.  Harmless where the cursor starts a line."""
    try:
        if not os.isatty(2):
            return b""
        width = os.get_terminal_size(2).columns
    except OSError:
        return b""
    if not width:  # a terminal no one sized says 0: $COLUMNS, as the bar took it, or wider than a bar's default
        width = min(_env_columns() or _BAR_MOST, _BAR_MOST)
    return b"\r" + b" " * max(width - 1, 0) + b"\r"


_BAR_MOST = 121  # wider than any bar's line (a title, 28 for the bar, 48 for the numbers and the stage's name)


def _env_columns() -> int:
    """$COLUMNS as engine/commands/parsing.py's env_columns() reads it for the bar, 0 where it is no width.  Read
    here without that module (argparse), on the way out: `int(c) if c.isdigit()` raised ValueError for '²' (a
    digit to isdigit(), not to int()) and for 5000 nines, and 10**12 asked for a terabyte of spaces; an error
    here left the process holding its exit lock, without its interrupted line."""
    try:
        return max(int(os.environ.get("COLUMNS", "")), 0)
    except ValueError:
        return 0


def _on_stop(signum, frame) -> None:
    """SIGTERM, SIGHUP or SIGQUIT: noted, then handled as Ctrl-C is now (KeyboardInterrupt, the asyncio Runner's
    cancellation of its task, or nothing once finished())."""
    global _stopped_by
    if _finished:
        return
    if _stopped_by is None:
        _stopped_by = signum
    if _start_guard is not None:  # (even where Ctrl-C is ignored since the start)
        _start_guard(signum, frame)
        return
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and not getattr(handler, "loading", False):
        handler(signal.SIGINT, frame)
    else:  # Ctrl-C ignored since the start (a background job): this signal still stops the command
        raise KeyboardInterrupt


def stopped_by() -> int | None:
    """The stop signal that came (SIGTERM, SIGHUP, SIGQUIT), None where none did."""
    return _stopped_by


def interrupted() -> tuple[str, int]:
    """The line and exit code of a command that was interrupted: by Ctrl-C, 130; by a stop signal, 128 + it;
    the line says which directories it removed (remove_made_directories)."""
    note = f"; removed {_removed_note()}, which this run had created" if _removed else ""
    if _stopped_by is None:
        return "interrupted" + note, 128 + signal.SIGINT
    return f"interrupted by {signal.Signals(_stopped_by).name}{note}", 128 + _stopped_by


_made: list[str] = []  # directories this command created, outermost first (made_directories)
_removed: list[str] = []  # those remove_made_directories() removed, innermost first


def made_directories(paths: list[str]) -> None:
    """The directories (outermost first, as the user named them) a command is about to create for its outputs
    (bench-circuit's DIR and its missing parents): an interrupt, a failure or the watchdog's exit removes them
    while they are empty (remove_made_directories), never one that was there before.  [] once they hold the
    outputs."""
    _made[:] = paths
    _removed.clear()


def remove_made_directories() -> list[str]:
    """Remove, innermost first, the made_directories() that exist and are empty; returns those removed (an
    interrupted line names them: interrupted()).  One that holds anything, another writer's file included, stays,
    and so do the ones above it."""
    for path in reversed(_made):
        try:
            os.rmdir(path)
        except FileNotFoundError:  # (not made yet)
            continue
        except OSError:
            break
        _removed.append(path)
    _made.clear()
    return list(_removed)


def _removed_note() -> str:
    from engine.paths import shown  # noqa: PLC0415 - small (os, stat)

    names = [shown(p) for p in _removed]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def finished() -> None:
    """The files are about to be written and the process to exit: from here Ctrl-C is ignored, and a stop signal
    too.  Ignored, not only answered by a handler that returns: the interpreter's teardown (a command that ends
    by sys.exit) puts every Python handler back to the default action, and a SIGTERM or SIGHUP there killed the
    process (exit -15, -1, no word) after its witness or key was written."""
    global _finished, _sigint_before
    if _owned and threading.current_thread() is threading.main_thread() and not _finished:
        with _end:  # (waits forever where the watchdog is already on its way out: nothing is written)
            _sigint_before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a pending one raises before the mark)
            _finished = True
            _stops_ignored[:] = [s for s in STOP_SIGNALS if signal.getsignal(s) is _on_stop]
            _stops_to(signal.SIG_IGN)


_stops_ignored: list[int] = []  # the stop signals finished() ignored (not one the process was started ignoring)


def _stops_to(handler) -> None:
    for signum in _stops_ignored:
        signal.signal(signum, handler)


_sigint_before = None  # SIGINT's handler before finished() (interruptible() puts it back for a while)
_one_command = False  # own_process() for a command that ends with its outputs (not serve)


_started: list[str] = []  # files a command began that are not its outputs (a --timeline): gone at a forced exit


def started_file(path: str) -> None:
    """A file this command created as it went (scheduler/timeline.py's JsonlSink): the forced exit removes it."""
    if _one_command:
        _started.append(path)


def outputs_made() -> None:
    """engine/file_writes.py, its outputs made, before it renames them into place: from there a command has
    succeeded (finished()).  `witness` and `setup` exited 130 (or 143) with their file written when the signal
    came after the rename; and the watchdog could exit between its check and the rename.  Not serve's."""
    if _one_command:
        finished()


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Inside, after finished(), interrupts act again: a wait with no end of its own (an output on a pipe or FIFO
    whose reader never comes) must stay interruptible; outside (or where finished() did not run) no change."""
    global _finished
    if not _finished or threading.current_thread() is not threading.main_thread():
        yield
        return
    with _end:
        _finished = False
        signal.signal(signal.SIGINT, _sigint_before if _sigint_before is not None else signal.SIG_IGN)
        _stops_to(_on_stop)  # (and the stop signals finished() ignored)
    try:
        yield
    finally:
        with _end:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _stops_to(signal.SIG_IGN)
            _finished = True


def _exit_now(signum, frame) -> None:
    os._exit(interrupted()[1] if _stopped_by is not None else 128 + signum)  # the code of the line said


def leaving() -> None:
    """The process is on its way out (engine/__main__'s _leave): an interrupt from here ends it at once with its
    code, unless it is ignored (finished(), or since the start); one held while the line was said, now."""
    for signum in (signal.SIGINT, *STOP_SIGNALS):
        handler = signal.getsignal(signum)
        if handler is signal.SIG_IGN or (handler is _on_stop and _finished):
            continue
        if signum == signal.SIGINT or handler in (_on_stop, _hold):
            signal.signal(signum, _exit_now)
    if _held is not None:
        os._exit(interrupted()[1])  # (the code of the line said: the first signal's)


_held: int | None = None  # a signal that came while an interrupted command said its line (hold_further)


def hold_further() -> None:
    """An interrupted command is saying its line (cli.main): another interrupt until the process leaves is held
    (leaving() then ends it at once), not a KeyboardInterrupt raised inside the line's write (a traceback, exit
    -2, after SIGTERM and a Ctrl-C 3 ms apart).  Not serve's, and not a signal the process ignores."""
    if not (_one_command and _owning_main()):
        return
    for signum in (signal.SIGINT, *STOP_SIGNALS):
        handler = signal.getsignal(signum)
        if signum == signal.SIGINT and callable(handler) or handler is _on_stop:
            signal.signal(signum, _hold)


def _hold(signum, frame) -> None:
    global _held
    if _held is None:
        _held = signum
