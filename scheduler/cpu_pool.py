"""The process pool for CPU-heavy Python work: large CPU MSMs and the proof epilogue.

Pure-Python arithmetic holds the GIL, so threads would neither run it in
parallel nor leave the device threads free to launch kernels; worker
processes do both.  Started with forkserver (else spawn), never fork: a
process may already have CUDA initialised.  Workers start on a module of
ours (scheduler/processes.py), so scripts need no `__main__` guard.
"""
from __future__ import annotations

import atexit
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor

from scheduler.processes import WorkerPoolExecutor

_pool: ProcessPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()
_atexit_registered = False


def resolve_workers(workers: int | None) -> int:
    """None: one worker per CPU this process may run on."""
    if workers is None:
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            return os.cpu_count() or 1
    return max(1, int(workers))


def get_pool(nproc: int | None = None) -> ProcessPoolExecutor:
    """The shared pool with nproc workers (default: one per CPU), started on first use."""
    global _pool, _pool_size, _atexit_registered
    nproc = resolve_workers(nproc)
    with _lock:
        if _pool is not None and _pool_size != nproc:
            _pool.shutdown(wait=True, cancel_futures=True)
            _pool = None
        if _pool is None:
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
            _pool, _pool_size = WorkerPoolExecutor(max_workers=nproc, mp_context=ctx), nproc
            if not _atexit_registered:
                atexit.register(shutdown)
                _atexit_registered = True
        return _pool


def running() -> bool:
    return _pool is not None


def shutdown() -> None:
    """Stop the workers (at exit, or to release them early); the next use restarts them."""
    global _pool
    with _lock:
        if _pool is not None:
            _pool.shutdown(wait=True, cancel_futures=True)
            _pool = None
