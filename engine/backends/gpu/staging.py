"""Large host -> device uploads in chunks through pinned staging buffers, reading while copying.

A key's arrays come from files (the zkey's point sections, the key cache's
entry) or from memory (arrays built on the host).  Each is cut into chunks;
reader threads fill staging buffers (`os.preadv` for file ranges: one copy from
the page cache, the GIL released; numpy copies for arrays) while the upload
stream copies the buffers filled before.  A buffer is refilled only after the
event recorded behind its last copy has fired, so the chunks in flight are
bounded by the buffers, never by the data.  Only per-buffer events and the
upload stream are waited on (no device-global call: design.md section 5).

The staging buffers are pinned ones taken from the context's pool when it holds
free ones of the chunk size; pinning is device-global, so it is never done here:
`want_buffers` (at `prepare_key`) asks the pool for them, and its maintenance
pins them while the device is idle, for this load (the CLI maintains before
loading) or the next.  Without them the same pipeline runs on pageable buffers
(the driver stages each copy itself: slower copies, the reads still overlap).
"""
from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from cuda_kernels.driver import Device, Event
from engine.errors import DeviceError, InputFileError, file_error
from engine.backends.gpu.runtime import destroy_events

CHUNK_BYTES = 16 << 20
MAX_READERS = 8
BUFFERS = MAX_READERS + 2  # staging buffers: one per reader, one being copied, one spare
TAG = "key staging"  # the pinned pool's name for what key loads want
# Below this many bytes in all, jobs are copied directly from pageable memory (the driver stages
# them itself): a small key does not pay for pinned buffers, reader threads and their start.
DIRECT_BYTES = 32 << 20


@dataclass(frozen=True)
class FileRange:
    """nbytes of an open file from offset: read with preadv (explicit offsets, so the reader threads
    share the descriptor), never through a mapping's page faults.  The caller keeps fd open."""

    fd: int
    offset: int
    nbytes: int
    name: str = "file"  # for errors


@dataclass
class Job:
    dst: int  # device address
    src: FileRange | np.ndarray
    done: Callable[[], None] | None = None  # called on this thread once every copy of the job is enqueued

    @property
    def nbytes(self) -> int:
        return self.src.nbytes


@dataclass
class UploadStats:
    nbytes: int = 0
    chunks: int = 0
    seconds: float = 0.0  # wall time of `upload`, until its last copy is done
    read_seconds: float = 0.0  # summed over the readers
    pinned_buffers: int = 0  # staging buffers that were pinned (the rest pageable)
    timings: dict = field(default_factory=dict)


class _Pageable:
    """A staging buffer of ordinary memory, when the pool has no pinned one free."""

    def __init__(self, nbytes: int):
        self.nbytes, self.array = nbytes, np.empty(nbytes, dtype=np.uint8)


def staged(total: int) -> bool:
    """Whether an upload of `total` bytes goes through the staging buffers (else: directly)."""
    return total > DIRECT_BYTES


def want_buffers(ctx, total: int) -> None:
    """Ask the context's pinned pool for the staging buffers a load of `total` bytes uses; they are
    pinned at its next maintenance and kept for later loads (counted in the host budget)."""
    if staged(total):
        ctx.pinned.want(TAG, CHUNK_BYTES, BUFFERS)


def _flat_bytes(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8)


def _fill(out: np.ndarray, src, start: int, n: int) -> float:
    """Fill out[:n] from bytes start..start+n of a source (runs on a reader thread)."""
    t = time.perf_counter()
    if isinstance(src, FileRange):
        pos, view, got = src.offset + start, memoryview(out[:n]), 0
        while got < n:
            try:
                k = os.preadv(src.fd, [view[got:]], pos + got)
            except OSError as exc:  # a disk's error: one line naming the file (a bare OSError was a traceback)
                raise file_error(src.name, exc) from exc
            if k <= 0:
                raise InputFileError(src.name, f"the file ended {n - got} bytes short of byte {pos + n} while the key "
                                               f"loaded (was it changed meanwhile?)")
            got += k
    else:
        np.copyto(out[:n], src[start:start + n])
    return time.perf_counter() - t


def _direct(stream, jobs: list[Job]) -> None:
    """Small uploads: each job in one pageable copy (the call returns once the driver has taken the
    bytes, so a temporary buffer may go right after)."""
    for j in jobs:
        if not j.nbytes:
            continue
        if isinstance(j.src, FileRange):
            host = np.empty(j.nbytes, dtype=np.uint8)
            _fill(host, j.src, 0, j.nbytes)
        else:
            host = _flat_bytes(j.src)
        Device.upload(j.dst, host, stream)
        if j.done is not None:
            j.done()


def _settle(event, stream) -> None:
    """Wait until a staging buffer's last copy is done; should its event fail, wait on the stream
    (on a failure path too, a buffer goes back to the pool only once no copy reads it)."""
    try:
        event.synchronize()
    except Exception:  # noqa: BLE001 - the load's own error is the one to report
        stream.synchronize()


def upload(ctx, stream, jobs: list[Job], *, chunk_bytes: int = CHUNK_BYTES, readers: int | None = None) -> UploadStats:
    """Copy every job's bytes to the device on `stream`, in job order.  Returns when the copies are
    done (pinned staging buffers go back to the context's pool); work a job's `done` enqueued on
    other streams may still run."""
    t0 = time.perf_counter()
    total = sum(j.nbytes for j in jobs)
    stats = UploadStats(nbytes=total)
    for j in jobs:
        if j.nbytes == 0 and j.done is not None:
            j.done()  # nothing to copy: its follow-up may go now
    if total == 0:
        return stats
    if not staged(total):
        _direct(stream, jobs)
        stats.chunks, stats.seconds = len(jobs), time.perf_counter() - t0
        return stats
    readers = max(1, min(readers or min(MAX_READERS, os.cpu_count() or 1), MAX_READERS))
    chunk = int(chunk_bytes)
    chunks: list[tuple[int, int, int]] = []  # (job index, start, n)
    for i, j in enumerate(jobs):
        for start in range(0, j.nbytes, chunk):
            chunks.append((i, start, min(chunk, j.nbytes - start)))
    nbuf = min(readers + 2, len(chunks))
    bufs: list = []
    events: list[Event] = []  # made inside the try: a failing one gives the buffers taken back
    used = [False] * nbuf
    sources = [j.src if isinstance(j.src, FileRange) else _flat_bytes(j.src) for j in jobs]

    def read(index: int, slot: int) -> float:
        i, start, n = chunks[index]
        return _fill(bufs[slot].array, sources[i], start, n)

    def enqueue(index: int, slot: int, fut) -> None:
        stats.read_seconds += fut.result()
        i, start, n = chunks[index]
        Device.upload(jobs[i].dst + start, bufs[slot].array[:n], stream)
        events[slot].record(stream)
        used[slot] = True
        stats.chunks += 1
        if start + n == jobs[i].nbytes and jobs[i].done is not None:
            jobs[i].done()

    pool = None
    inflight: deque = deque()
    try:
        for _ in range(nbuf):
            pinned = ctx.pinned.take(chunk, count_miss=False)
            bufs.append(pinned if pinned is not None else _Pageable(chunk))
        stats.pinned_buffers = sum(not isinstance(b, _Pageable) for b in bufs)
        for _ in range(nbuf):
            events.append(Event())
        pool = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="key-upload")
        for index in range(len(chunks)):
            slot = index % nbuf
            if len(inflight) == nbuf:
                enqueue(*inflight.popleft())
            if used[slot]:
                events[slot].synchronize()  # this buffer's last copy has left it
            inflight.append((index, slot, pool.submit(read, index, slot)))
        while inflight:
            enqueue(*inflight.popleft())
    finally:
        for index, slot, fut in inflight:  # an error: let the reads finish before the buffers go back
            fut.cancel()
        if pool is not None:
            pool.shutdown(wait=True)
        for slot, buf in enumerate(bufs):
            try:
                if used[slot]:
                    _settle(events[slot], stream)
            except DeviceError:  # a copy may still read it: kept out of the pool, and the others go back
                continue
            if not isinstance(buf, _Pageable):
                ctx.pinned.give_back(buf)
        destroy_events(*events)  # each tried (a failing destroy leaks its handle, and fails no load)
    stats.seconds = time.perf_counter() - t0
    return stats
