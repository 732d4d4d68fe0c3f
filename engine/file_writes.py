"""Every output file the engine writes: all or nothing, through symlinks, and never over a device node.

A regular file (or a new one) is written to a temporary name beside it and renamed over it, so a
failed write (a full disk, a killed process) leaves the old file or none, never half a proof or half
a key.  The temporary file is flock'ed until it is renamed, and its name is one of a few fixed ones per
output (`.NAME.0.tmp`, `.NAME.1.tmp`, ...): the partial file of a writer killed by SIGKILL (the OOM
killer, as large as the key it was writing) is found, unlocked, by the next write of that output, which
removes it and says so in a warning (it stayed beside the output for good).  An existing file that is
not a regular one (/dev/null, /dev/stdout, a pipe) is written where it is: renaming onto it replaced the
device node itself (`prove ... /dev/null`, as root), or the /dev/stdout link.  A symlink is written
through (its target is replaced), as snarkjs and `>` do.

Only os, stat, fcntl, sys, time and the engine's error types are imported: the CLI client uses this too.
The caches (kernels, wasm) have their own best-effort writer, cuda_kernels/build.write_cache_file, which says why.
"""
from __future__ import annotations

import fcntl
import os
import stat
import sys
import time

from engine.errors import InputFileError, write_error
from engine.paths import closed_stream, folder_name_problem, real_path, same_file

TYPE_CHECKING = False  # typing's own flag without importing typing (the CLI client's start)
if TYPE_CHECKING:
    from typing import BinaryIO, Callable, Sequence, Union

    Content = Union[str, bytes, Callable[[BinaryIO], None]]  # text (UTF-8), bytes, or a function that writes them
_SLOTS = 32  # temporary names per output: one a writer at the same time (threads of one process too)
_FRESH_S = 10.0  # an empty unlocked temporary file younger than this is a writer's that has not locked it yet
_temporaries: set[str] = set()  # made, not yet renamed or removed: engine/interrupts.py removes them at a forced exit
_held: dict[str, int] = {}  # temporary_file()'s, by name: the descriptor holding its lock


def remove_temporaries() -> None:
    """Remove the temporary files of writes under way: the process is about to end without finishing them."""
    for name in list(_temporaries):
        try:
            os.unlink(name)
        except OSError:
            pass


def written_in_place(path) -> bool:
    """Whether `path` is written where it is: an existing file that is not a regular one (a device, a pipe, a
    socket), or any existing path under /dev or /proc (/dev/stdout redirected to a file names that file; a
    rename over it would leave the shell's descriptor on a file that no longer has a name)."""
    try:
        name = os.path.abspath(os.fsdecode(path))
        mode = os.stat(name).st_mode
    except (OSError, ValueError):  # (abspath: a relative path in a deleted working directory)
        return False
    return name.startswith(("/dev/", "/proc/")) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _emit(f: "BinaryIO", content: "Content") -> None:
    if callable(content):
        content(f)
    else:
        f.write(content.encode("utf-8") if isinstance(content, str) else content)


def _temporary_beside(target: str) -> "tuple[str, BinaryIO, int]":
    """A new temporary file for `target` in its folder, locked: (name, file, a descriptor that holds the lock
    until it is closed, after the rename; -1 where the file system has no locks)."""
    folder, base = os.path.split(target)
    stem = os.path.join(folder, f".{base[:96]}")  # short: NAME_MAX stays met
    for slot in range(_SLOTS):
        name = f"{stem}.{slot}.tmp"
        for _ in range(4):  # again after a leftover was removed here, or this file by a writer taking it for one
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except FileExistsError:
                if _remove_leftover(name, target):
                    continue
                break  # a live writer's: the next name
            held = None
            try:
                held = _lock(fd, name)
                if held is not None:
                    _temporaries.add(name)
                    return name, open(fd, "wb"), held
            except BaseException:  # (an interrupt in the lock's wait: no file of ours is left)
                if held is not None and held >= 0:
                    os.close(held)
                _remove_ours(fd, name)
                raise
            os.close(fd)  # removed before the lock was taken (by a writer that took it for a leftover): again
    # every name taken (or no locks to tell a leftover by): a name of this process's own, as before
    name = f"{stem}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    f = open(name, "xb")
    _temporaries.add(name)
    return name, f, -1


def _lock(fd: int, name: str) -> "int | None":
    """Lock our new file `name` (open as fd): a second descriptor that holds the lock, -1 where the file
    system has none; None when the name no longer is this file."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits only while another writer looks at it (_remove_leftover)
    except OSError:
        return -1
    try:
        if os.stat(name).st_ino != os.fstat(fd).st_ino:
            return None
    except FileNotFoundError:
        return None
    return os.dup(fd)  # the file's own descriptor is closed when it is written; the lock lasts to the rename


def _remove_ours(fd: int, name: str) -> None:
    """Close fd and remove `name` where it still is that file."""
    try:
        if os.stat(name).st_ino == os.fstat(fd).st_ino:
            os.unlink(name)
    except OSError:
        pass
    _temporaries.discard(name)
    os.close(fd)


def _remove_leftover(name: str, target: str) -> bool:
    """Remove the temporary file `name` if it is a dead writer's (no lock on it, not one just made); True when
    the name is free now."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:  # a symlink, another user's file: not ours to judge
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live writer holds it (or no locks here: nothing can be told)
            return False
        if st.st_size == 0 and abs(time.time() - st.st_mtime) < _FRESH_S:
            return False  # made a moment ago by a writer about to lock it
        try:
            if os.stat(name).st_ino != st.st_ino:
                return False
            os.unlink(name)
        except FileNotFoundError:
            return True
        except OSError:
            return False
    finally:
        os.close(fd)
    import warnings  # noqa: PLC0415 - loaded with the interpreter; only where something is said

    warnings.warn(f"removed {name} ({st.st_size} bytes), a partial file left beside {target} by an earlier "
                  "write that was killed (out of memory? SIGKILL?) before it finished", RuntimeWarning, stacklevel=2)
    return True


def temporary_file(path) -> str:
    """A new, empty, locked temporary file beside `path` for a caller that renames it over `path` itself (bench-
    circuit's pair, renamed together); write_files writes into it where it is (no temporary of a temporary, which
    a kill left where no later run looked).  A killed caller's is removed by the next write of `path`.  Give it
    back with release_temporary."""
    name, f, lock = _temporary_beside(real_path(os.fsdecode(path)))
    f.close()
    _held[name] = lock
    return name


def release_temporary(name: str, renamed: bool) -> None:
    """Done with a temporary_file: removed unless it was renamed (its name may be another writer's by now)."""
    lock = _held.pop(name, -1)
    if not renamed:
        try:
            os.unlink(name)
        except OSError:
            pass
    _temporaries.discard(name)
    if lock >= 0:
        os.close(lock)


def write_files(outputs: "Sequence[tuple[object, Content]]") -> None:
    """Write every (path, content): all regular files or none of them. Errors name the user's path."""
    names = [os.fsdecode(path) for path, _ in outputs]  # bytes paths too
    in_place = [name in _held or written_in_place(name) for name in names]
    for i, name in enumerate(names):  # one regular file named twice would be written twice, the last one winning
        if not in_place[i] and any(same_file(name, other) for other in names[:i]):
            raise InputFileError(name, "named twice among the files to write")
        if not in_place[i] and folder_name_problem(name) is not None:  # `out/`: a file `out` was written
            raise InputFileError(name, folder_name_problem(name))
    temps: list[tuple[str, str, str]] = []  # (temporary, target, the user's name)
    locks: list[int] = []  # descriptors holding the temporary files' locks
    renamed: set[str] = set()  # (a renamed one's name may already be another writer's new file)
    opened: dict[int, "BinaryIO"] = {}  # the in-place outputs, by index
    try:
        # First open the in-place outputs: a FIFO waits here for its reader, with no temporary file made yet and,
        # in the CLI, interrupts acting again (engine/interrupts.py; a proof is "finished" by now)
        for i, (name, here) in enumerate(zip(names, in_place)):
            if here:
                opened[i] = _open_in_place(name)
        for name, (_, content), here in zip(names, outputs, in_place):
            if here:
                continue
            try:
                target = real_path(name)
                tmp, f, lock = _temporary_beside(target)
            except OSError as exc:
                raise write_error(name, exc) from None
            temps.append((tmp, target, name))
            locks.append(lock)
            try:
                with f:
                    _emit(f, content)
                try:  # a file written over keeps its permissions
                    os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
                except FileNotFoundError:
                    pass
            except OSError as exc:
                raise write_error(name, exc) from None
        for i, (name, (_, content)) in enumerate(zip(names, outputs)):
            if i in opened:
                try:
                    with _interruptible(), opened.pop(i) as f:  # a reader that stops reading: a wait too
                        _emit(f, content)
                except BrokenPipeError as exc:  # a pipe's reader that left: cli.main ends quietly with 141 on it
                    raise write_error(name, exc) from exc
                except OSError as exc:
                    raise write_error(name, exc) from None
        _outputs_made()
        for tmp, target, name in temps:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise write_error(name, exc) from None
            renamed.add(tmp)
            _temporaries.discard(tmp)
    finally:
        for f in opened.values():
            f.close()
        for tmp, _, _ in temps:
            if tmp not in renamed:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            _temporaries.discard(tmp)
        for lock in locks:
            if lock >= 0:
                os.close(lock)


def _open_in_place(name: str) -> "BinaryIO":
    """`name` (a device, a pipe, a FIFO) opened for writing where it is."""
    stream = closed_stream(name)
    if stream is not None:
        raise InputFileError(name, f"cannot write: {stream} is closed")
    try:
        with _interruptible():
            return open(name, "wb")
    except OSError as exc:
        raise write_error(name, exc) from None


def _outputs_made() -> None:
    """engine.interrupts.outputs_made() where the CLI loaded it: from here its command has succeeded."""
    interrupts = sys.modules.get("engine.interrupts")
    if interrupts is not None:
        interrupts.outputs_made()


def _interruptible():
    """engine.interrupts.interruptible(): imported here, when an output is written in place (a device, a pipe)."""
    from engine.interrupts import interruptible  # noqa: PLC0415 - small (os, signal, threading, contextlib)

    return interruptible()


def write_file(path, content: "Content") -> None:
    write_files([(path, content)])
