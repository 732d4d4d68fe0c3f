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
from typing import Any, Callable

import numpy as np

_STATE: dict[str, Any] = {}


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _die_with_parent(parent: int) -> None:
    """Make a worker die with the process that forked it: after a SIGTERM or the OOM killer's SIGKILL it stayed
    asleep on the pool's queue for ever (Linux's PR_SET_PDEATHSIG; elsewhere nothing changes)."""
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
        except BaseException:  # Ctrl-C, a chunk's error: the running and queued chunks were waited for
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.kill()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        _STATE.clear()
