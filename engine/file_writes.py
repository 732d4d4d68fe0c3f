"""Every output file the engine writes: all or nothing, through symlinks, and never over a device node.

A regular file (or a new one) is written to a temporary name beside it and renamed over it, so a
failed write (a full disk, a killed process) leaves the old file or none, never half a proof or half
a key.  An existing file that is not a regular one (/dev/null, /dev/stdout, a pipe) is written where
it is: renaming onto it replaced the device node itself (`prove ... /dev/null`, as root), or the
/dev/stdout link.  A symlink is written through (its target is replaced), as snarkjs and `>` do.

Only os, stat and the engine's error types are imported: the CLI client uses this too.
"""
from __future__ import annotations

import itertools
import os
import stat

from engine.errors import InputFileError, write_error
from engine.paths import closed_stream, real_path, same_file

TYPE_CHECKING = False  # typing's own flag without importing typing (the CLI client's start)
if TYPE_CHECKING:
    from typing import BinaryIO, Callable, Sequence, Union

    Content = Union[str, bytes, Callable[[BinaryIO], None]]  # text (UTF-8), bytes, or a function that writes them
_serial = itertools.count()  # temporary names unique among the threads of one process too
_temporaries: set[str] = set()  # made, not yet renamed or removed: engine/interrupts.py removes them at a forced exit


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


def _temporary_beside(target: str) -> "tuple[str, BinaryIO]":
    folder, base = os.path.split(target)
    name = os.path.join(folder, f".{base[:96]}.{os.getpid()}.{next(_serial)}.tmp")  # short: NAME_MAX stays met
    f = open(name, "xb")
    _temporaries.add(name)
    return name, f


def write_files(outputs: "Sequence[tuple[object, Content]]") -> None:
    """Write every (path, content): all regular files or none of them. Errors name the user's path."""
    names = [os.fsdecode(path) for path, _ in outputs]  # bytes paths too
    in_place = [written_in_place(name) for name in names]
    for i, name in enumerate(names):  # one regular file named twice would be written twice, the last one winning
        if not in_place[i] and any(same_file(name, other) for other in names[:i]):
            raise InputFileError(name, "named twice among the files to write")
    temps: list[tuple[str, str, str]] = []  # (temporary, target, the user's name)
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
                tmp, f = _temporary_beside(target)
            except OSError as exc:
                raise write_error(name, exc) from None
            temps.append((tmp, target, name))
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
        for tmp, target, name in temps:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise write_error(name, exc) from None
    finally:
        for f in opened.values():
            f.close()
        for tmp, _, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:  # renamed: gone, as it should be
                pass
            _temporaries.discard(tmp)


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


def _interruptible():
    """engine.interrupts.interruptible(): imported here, when an output is written in place (a device, a pipe)."""
    from engine.interrupts import interruptible  # noqa: PLC0415 - small (os, signal, threading, contextlib)

    return interruptible()


def write_file(path, content: "Content") -> None:
    write_files([(path, content)])
