"""Shared-memory blocks for witnesses: synthesis workers write, the main process maps.

A block is a file in /dev/shm (a RAM file system; the temp directory where
there is none) mapped with mmap in both processes.  The main process creates
it with the size the host budget reserved, a synthesis worker attaches by
name and writes the witness, and only the name, shape and dtype travel over
the pipe, so the main process never unpickles a large array.  The creator
unlinks it; the memory goes back when the last mapping (the last numpy view)
is gone.  Plain files rather than `multiprocessing.shared_memory` because the
latter's resource tracker unlinks segments behind the owner's back on 3.11.

A RAM file system can be small (Docker gives a container 64 MiB of /dev/shm unless
told otherwise), and a write through a mapping of a sparse file it has no room for
is a SIGBUS, which killed the synthesis worker (or the process) with no word of why.
So a block that /dev/shm has no room for is made in the temp directory instead
(`create`), and the writer reserves a block's pages before it writes (`reserve`):
no room is then an OSError naming the place and the sizes.

Both that and a block larger than the process may write (`ulimit -f`, RLIMIT_FSIZE: EFBIG, which was a
traceback) are a `ShmSpaceError`: an EngineError, one line naming the place or the limit.
"""
from __future__ import annotations

import atexit
import errno
import fcntl
import itertools
import logging
import mmap
import os
import tempfile
import time

import numpy as np

from engine.errors import EngineError


_DIR: str | None = None
_NAMES = itertools.count()
_TOKEN = os.urandom(6).hex()  # with the pid: no two processes' names meet (O_EXCL checks anyway)
_SPILLED = False  # a block has gone to the temp directory: said once a process
log = logging.getLogger("scheduler.shm")


def free_bytes(directory: str) -> int | None:
    """What an unprivileged writer may still put in `directory`'s file system; None where it cannot be asked."""
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def block_dir(size: int) -> str:
    """Where a block of `size` bytes goes: shm_dir() where it has room for it, else the temp directory."""
    global _SPILLED
    d = shm_dir()
    free = free_bytes(d)
    if free is None or free >= size or d == tempfile.gettempdir():
        return d
    if not _SPILLED:
        _SPILLED = True
        log.warning("%s has %s free, too little for a witness of %s: witnesses go to %s instead (a container "
                    "gets more shared memory with docker run --shm-size)", d, _size(free), _size(size),
                    tempfile.gettempdir())
    return tempfile.gettempdir()


def _size(n: int) -> str:
    from scheduler.budget import fmt_bytes  # noqa: PLC0415 - only where something is said

    return fmt_bytes(n)


def shm_dir() -> str:
    """/dev/shm where it is writable, else the temp directory; looked up once a process (two system
    calls a witness on the event loop before: perf/RESULTS.md, t13tput)."""
    global _DIR
    if _DIR is None:
        d = "/dev/shm"
        _DIR = d if os.path.isdir(d) and os.access(d, os.W_OK) else tempfile.gettempdir()
    return _DIR


class ShmSpaceError(EngineError, OSError):
    """A witness's shared-memory block could not be made or filled: no room where it goes (errno ENOSPC), or
    larger than this process may write a file (EFBIG: the file size limit).  An OSError too, for callers that
    catch those; its text is the message alone."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def _too_large(size: int, directory: str) -> ShmSpaceError:
    """The error for a block of `size` bytes beyond this process's file size limit (RLIMIT_FSIZE)."""
    try:
        import resource  # noqa: PLC0415 - POSIX only, and only here

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        limit = "unlimited" if soft == resource.RLIM_INFINITY else _size(soft)
    except (ImportError, OSError, ValueError):
        limit = "smaller"
    return ShmSpaceError(errno.EFBIG, f"cannot make a {_size(size)} shared-memory block for a witness in "
                                      f"{directory}: the file size limit of this process is {limit} "
                                      "(ulimit -f, RLIMIT_FSIZE); raise it")


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
        directory = block_dir(int(size))
        own_blocks(directory, prefix)
        path = os.path.join(directory, f"{prefix}-{os.getpid()}-{_TOKEN}-{next(_NAMES)}")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # a RAM disk without a free inode
                raise cls(path, 0, None).no_room(int(size)) from None
            raise
        try:
            length = max(int(size), 1)
            try:
                os.ftruncate(fd, length)
            except OSError as exc:
                if exc.errno == errno.EFBIG:
                    raise _too_large(length, directory) from None
                raise
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

    def reserve(self, nbytes: int) -> None:
        """Give the block's first `nbytes` their pages now, so that a file system without room for them is an
        OSError here rather than a SIGBUS in the write through the mapping."""
        fallocate = getattr(os, "posix_fallocate", None)
        if fallocate is None or nbytes <= 0:  # macOS: no such call (and no /dev/shm)
            return
        fd = os.open(self.path, os.O_RDWR)
        try:
            fallocate(fd, 0, nbytes)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise self.no_room(nbytes) from None
            if exc.errno == errno.EFBIG:
                raise _too_large(nbytes, os.path.dirname(self.path)) from None
            if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):  # a file system without it
                raise
        finally:
            os.close(fd)

    def no_room(self, nbytes: int) -> ShmSpaceError:
        """The error for a witness of `nbytes` that this block's file system has no room for."""
        where = os.path.dirname(self.path)
        free = free_bytes(where)
        return ShmSpaceError(errno.ENOSPC, f"no room for a witness of {_size(nbytes)} in {where}"
                             + (f" ({_size(free)} free)" if free is not None else "")
                             + ": free memory there, or give a container more (docker run --shm-size)")

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


# ------------------------------------------------------------------ blocks whose process ended without removing them
#
# A process killed by SIGKILL (the OOM killer, a Ray actor shut down, a service killed after its stop timeout)
# cannot remove its blocks: up to the synthesis pool's cached ones (48 of 8 MiB) stayed in /dev/shm, which is RAM,
# until a reboot.  Each process that makes blocks in a directory holds an flock on an owner mark there for its
# life (the kernel lets go of it however the process ends, whatever its PID namespace); the first block a process
# makes there removes the blocks of every mark nobody holds.  A process that exits removes its own.

_OWNED: dict[tuple[int, str, str], tuple[int, str]] = {}  # (pid, directory, prefix) -> (locked fd, mark path)
SAY_FREED_BYTES = 64 << 20  # a dead process's blocks holding this much RAM or more: removed with a warning
# A long-lived maker (a service) sweeps again on a block it makes this long after its last sweep: only its first
# block swept, the blocks of a process killed beside it stayed in RAM until the service itself restarted.
SWEEP_EVERY_S = 60.0
_swept: dict[tuple[str, str], float] = {}  # (directory, prefix) -> time.monotonic() of this process's last sweep


def own_blocks(directory: str, prefix: str) -> None:
    """Hold this process's owner mark for `prefix` blocks in `directory`; the first time (and then once a
    SWEEP_EVERY_S at most), remove orphans."""
    key = (os.getpid(), directory, prefix)
    if key in _OWNED:
        last = _swept.get((directory, prefix))
        if last is not None and time.monotonic() - last >= SWEEP_EVERY_S:
            _swept[(directory, prefix)] = time.monotonic()
            remove_orphans(directory, prefix)
        return
    mark = os.path.join(directory, f"{prefix}.owner-{os.getpid()}-{_TOKEN}")
    try:
        fd = os.open(mark + ".new", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held before the mark has its name: no sweep can take it for dead
        os.rename(mark + ".new", mark)
    except OSError:  # no marks here (a read-only place, no flock): blocks are still removed by their owner
        _OWNED[key] = (-1, mark)
        return
    if not _OWNED:
        atexit.register(_remove_own)
    _OWNED[key] = (fd, mark)
    _swept[(directory, prefix)] = time.monotonic()
    remove_orphans(directory, prefix)


def remove_orphans(directory: str, prefix: str) -> int:
    """Remove the blocks (and marks) of `prefix` owners in `directory` whose process has ended; how many marks."""
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    removed = 0
    for name in names:
        if not name.startswith(f"{prefix}.owner-") or name.endswith(".new"):
            continue
        mark = os.path.join(directory, name)
        try:
            fd = os.open(mark, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # gone meanwhile, or another user's
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its process lives (or another sweep has it)
            os.close(fd)
            continue
        try:
            owner = name[len(prefix) + len(".owner-"):]
            count, nbytes = _remove_blocks(directory, f"{prefix}-{owner}", names)
            _unlink(mark)
            removed += 1
        finally:
            os.close(fd)
        if count:  # said (a warning where it was memory worth a word): where it went, and that a process was killed
            log.log(logging.WARNING if nbytes >= SAY_FREED_BYTES else logging.INFO,
                    "removed %d shared-memory block(s) (%s) from %s: left by process %s, which ended without "
                    "removing them (killed? out of memory?)", count, _size(nbytes), directory, owner.split("-", 1)[0])
    return removed


def _remove_blocks(directory: str, stem: str, names: list[str]) -> tuple[int, int]:
    """Remove the blocks named stem-*: (how many, their bytes)."""
    count = nbytes = 0
    for name in names:
        if name.startswith(stem + "-"):
            path = os.path.join(directory, name)
            try:
                size = os.stat(path).st_blocks * 512  # what they held of the RAM disk (sparse: not their length)
            except OSError:
                continue
            if _unlink(path):
                count, nbytes = count + 1, nbytes + size
    return count, nbytes


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


def _remove_own() -> None:
    """At exit: this process's blocks are nobody's now (its workers end with it), nor is its mark."""
    for (pid, directory, prefix), (fd, mark) in list(_OWNED.items()):
        if pid != os.getpid():  # a forked child's copy of the parent's table
            continue
        try:
            _remove_blocks(directory, f"{prefix}-{pid}-{_TOKEN}", os.listdir(directory))
        except OSError:
            pass
        if fd >= 0:
            _unlink(mark)
            os.close(fd)
        del _OWNED[(pid, directory, prefix)]
