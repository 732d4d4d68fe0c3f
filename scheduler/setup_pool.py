"""Chunks of a range in forked worker processes that inherit the caller's data.

The setup's vectors (Lagrange values, table of points, per-wire scalars) are
Python objects that would be slow to pickle; with the fork start method a
worker sees them for free.  `fork_map` stores them in a module global, forks
a pool, and maps a module-level function over (start, stop) chunks; with one
worker, a small range or no fork (not Linux) it runs in this process.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

import numpy as np

from engine.errors import EngineError

_STATE: dict[str, Any] = {}


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _worker_signals() -> None:
    """A forked worker's signals as a worker's, not as the CLI's it was forked from.  With the CLI's handlers the
    pool's SIGTERM to its workers (a worker killed by the OOM killer breaks the pool, which ends the others) was
    taken as a stop of the command: each worker lived on, waiting for work, and the pool's shutdown waited for it
    for ever; and the signal, written to the CLI's wakeup pipe (inherited), was read there as the command's own
    (`interrupted by SIGTERM`).  Ctrl-C is the parent's to handle (it kills the workers): ignored here."""
    try:
        signal.set_wakeup_fd(-1)
        for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):
            if hasattr(signal, name) and signal.getsignal(getattr(signal, name)) not in (signal.SIG_IGN, None):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):  # (not the main thread: no handler can be changed, nor was one inherited)
        pass


def _die_with_parent(parent: int) -> None:
    """Make a worker die with the process that forked it: after a SIGTERM or the OOM killer's SIGKILL it stayed
    asleep on the pool's queue for ever (Linux's PR_SET_PDEATHSIG; elsewhere nothing changes)."""
    _worker_signals()
    try:
        import ctypes  # noqa: PLC0415

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the prctl took effect
        os._exit(1)


def _call(fn: Callable, start: int, stop: int):
    return fn(_STATE, start, stop)


def fork_map(fn: Callable[[dict, int, int], Any], n: int, state: dict[str, Any], *, workers: int,
             min_parallel: int) -> list:
    """[fn(state, start, stop) for consecutive chunks covering range(n)], in order."""
    if n == 0:
        return []
    if workers <= 1 or n < min_parallel or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(state, 0, n)]
    n_chunks = min(n, 4 * workers)
    bounds = np.linspace(0, n, n_chunks + 1).astype(np.int64).tolist()
    _STATE.clear()
    _STATE.update(state)
    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_die_with_parent, initargs=(os.getpid(),))
        try:
            return list(pool.map(_call, [fn] * n_chunks, bounds[:-1], bounds[1:]))
        except BrokenProcessPool:  # a worker ended mid-chunk (the OOM killer): said below, once they are reaped
            procs = list((getattr(pool, "_processes", None) or {}).values())
        except BaseException:  # Ctrl-C, a chunk's error: the running and queued chunks were waited for
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.kill()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        _STATE.clear()
    raise SetupWorkerCrashedError(_crash_message(procs))


class SetupWorkerCrashedError(EngineError):
    """A forked setup worker died mid-chunk (killed by the OOM killer, or by someone): was a BrokenProcessPool
    traceback that did not say which process, how it ended, or that nothing had been written."""


def _crash_message(procs: list) -> str:
    """Which worker ended and how: the one a signal other than the pool's own SIGTERM ended, else any that failed."""
    from scheduler.processes import describe_exit  # noqa: PLC0415

    codes = [(p.pid, p.exitcode) for p in procs]
    dead = ([c for c in codes if c[1] is not None and c[1] < 0 and c[1] != -signal.SIGTERM]
            or [c for c in codes if c[1] not in (None, 0)])
    if not dead:
        return "setup: a worker process ended while it computed part of the key; nothing was written"
    pid, code = dead[0]
    return (f"setup: worker process {pid} was {describe_exit(code)} while it computed part of the key; "
            "nothing was written")
