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
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable

import numpy as np

_STATE: dict[str, Any] = {}


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


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
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_call, [fn] * n_chunks, bounds[:-1], bounds[1:]))
    finally:
        _STATE.clear()
