"""Shared-memory blocks for witnesses: synthesis workers write, the main process maps.

A block is a file in /dev/shm (a RAM file system; the temp directory where
there is none) mapped with mmap in both processes.  The main process creates
it with the size the host budget reserved, a synthesis worker attaches by
name and writes the witness, and only the name, shape and dtype travel over
the pipe, so the main process never unpickles a large array.  The creator
unlinks it; the memory goes back when the last mapping (the last numpy view)
is gone.  Plain files rather than `multiprocessing.shared_memory` because the
latter's resource tracker unlinks segments behind the owner's back on 3.11.
"""
from __future__ import annotations

import itertools
import mmap
import os
import tempfile

import numpy as np


_DIR: str | None = None
_NAMES = itertools.count()
_TOKEN = os.urandom(6).hex()  # with the pid: no two processes' names meet (O_EXCL checks anyway)


def shm_dir() -> str:
    """/dev/shm where it is writable, else the temp directory; looked up once a process (two system
    calls a witness on the event loop before: perf/RESULTS.md, t13tput)."""
    global _DIR
    if _DIR is None:
        d = "/dev/shm"
        _DIR = d if os.path.isdir(d) and os.access(d, os.W_OK) else tempfile.gettempdir()
    return _DIR


class ShmBlock:
    """One mapped shared-memory file."""

    def __init__(self, path: str, size: int, mm: mmap.mmap | None):
        self.path = path
        self.size = size
        self._mmap = mm

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @classmethod
    def create(cls, size: int, prefix: str = "g16w") -> "ShmBlock":
        path = os.path.join(shm_dir(), f"{prefix}-{os.getpid()}-{_TOKEN}-{next(_NAMES)}")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            length = max(int(size), 1)
            os.ftruncate(fd, length)
            mm = mmap.mmap(fd, length)
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)
        return cls(path, int(size), mm)

    @classmethod
    def attach(cls, name: str) -> "ShmBlock":
        path = name if os.path.isabs(name) else os.path.join(shm_dir(), name)
        fd = os.open(path, os.O_RDWR)
        try:
            length = os.fstat(fd).st_size
            mm = mmap.mmap(fd, length)
        finally:
            os.close(fd)
        return cls(path, length, mm)

    def ndarray(self, shape: tuple[int, ...], dtype: str | np.dtype) -> np.ndarray:
        """A numpy view of the block's first bytes as `shape`/`dtype`."""
        if self._mmap is None:
            raise ValueError(f"{self.path}: block is closed")
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count * dt.itemsize > self.size:
            raise ValueError(f"{self.path}: {shape} {dt} does not fit in {self.size} bytes")
        return np.frombuffer(self._mmap, dtype=dt, count=count).reshape(shape)

    def close(self) -> None:
        """Unmap; if numpy views are still alive the mapping goes when they do."""
        mm, self._mmap = self._mmap, None
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass

    def unlink(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def release(self) -> None:
        self.unlink()
        self.close()
