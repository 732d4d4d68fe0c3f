"""Buffers for the witness uploads the service keeps in memory, reused from one job to the next.

A fresh multi-megabyte buffer costs a page fault per 4 KiB page on its first
write: measured on a 2-core VM, allocating a 2 MiB one took 0.7 ms, more
than receiving the upload itself (perf/RESULTS.md).  The same circuit's
witnesses have the same size, so the buffer of a job that ended is kept and
handed to the next upload that fits it.  A job holds its buffer from the
upload's first byte until it ends (the witness's values are a view over it);
only then does the buffer come back here.
"""
from __future__ import annotations

_GRAIN = 1 << 16  # buffer sizes are rounded up to this, so near sizes share buffers


class UploadBuffers:
    """Free buffers, newest last; at most `keep_bytes` of them idle."""

    def __init__(self, keep_bytes: int):
        self.keep_bytes = keep_bytes
        self._free: list[bytearray] = []
        self.in_use = 0  # bytes of the buffers jobs and uploads hold now

    def take(self, length: int) -> bytearray:
        """A buffer of at least `length` bytes (at most twice that): a free one that fits, else a new one."""
        best = None
        for i, buf in enumerate(self._free):
            if length <= len(buf) <= 2 * length + _GRAIN and (best is None or len(buf) < len(self._free[best])):
                best = i
        buf = self._free.pop(best) if best is not None else bytearray(-(-max(length, 1) // _GRAIN) * _GRAIN)
        self.in_use += len(buf)
        return buf

    def give(self, buf: bytearray) -> None:
        """A buffer its holder is done with (its job ended, or its upload failed)."""
        self.in_use -= len(buf)
        if len(buf) > self.keep_bytes:
            return
        self._free.append(buf)
        while sum(len(b) for b in self._free) > self.keep_bytes:
            self._free.pop(0)  # the least recently returned goes first

    @property
    def idle_bytes(self) -> int:
        return sum(len(b) for b in self._free)
