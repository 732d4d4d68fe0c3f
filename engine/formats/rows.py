"""Large arrays of field rows ((n, limbs) uint64), worked on in parts on threads.

numpy releases the GIL in copies and comparisons, so a pass over a large witness (a 2^20-constraint
proof's is 32 MiB, a 2^24 one's 545 MB) can use several cores: on the proof's path a witness is
range-checked and copied into a pinned buffer before it goes up, 2.8 + 6.4 ms of host time at 2^20
on one core of the development machine, beside 47 ms of kernels (perf/RESULTS.md).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

import numpy as np

T = TypeVar("T")
PART_BYTES = 4 << 20  # below this a part is not worth a thread hand-off
MAX_THREADS = 8

_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid it was made in, pool)


def _threads() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


def _executor() -> ThreadPoolExecutor:
    """The process's pool, made on first use (and made again in a forked child, whose copy has no
    threads behind it)."""
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(_threads(), thread_name_prefix="engine-rows"))
        return _pool[1]


def over_rows(n: int, row_bytes: int, fn: Callable[[int, int], T]) -> list[T]:
    """[fn(lo, hi) for consecutive row ranges covering 0..n], in order; on threads when the rows
    add up to more than one part's worth, else one call on this thread."""
    wanted = (n * row_bytes) // PART_BYTES
    parts = min(_threads(), wanted) if wanted > 1 else 1  # a small array (most proofs') asks nothing of the OS
    if parts <= 1:
        return [fn(0, n)]
    step = -(-n // parts)
    return list(_executor().map(lambda lo: fn(lo, min(n, lo + step)), range(0, n, step)))


def copy_rows(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src for arrays of one shape along their first axis, in parts on threads."""
    if dst.shape[0] != src.shape[0]:
        raise ValueError(f"copy_rows: {dst.shape[0]} rows into {src.shape[0]}")
    row_bytes = max(1, src.nbytes // max(1, src.shape[0]))

    def part(lo: int, hi: int) -> None:
        dst[lo:hi] = src[lo:hi]

    over_rows(src.shape[0], row_bytes, part)
