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
from engine.paths import same_file

TYPE_CHECKING = False  # typing's own flag without importing typing (the CLI client's start)
if TYPE_CHECKING:
    from typing import BinaryIO, Callable, Sequence, Union

    Content = Union[str, bytes, Callable[[BinaryIO], None]]  # text (UTF-8), bytes, or a function that writes them
_serial = itertools.count()  # temporary names unique among the threads of one process too


def written_in_place(path) -> bool:
    """Whether `path` is written where it is: an existing file that is not a regular one (a device, a pipe, a
    socket), or any existing path under /dev or /proc (/dev/stdout redirected to a file names that file; a
    rename over it would leave the shell's descriptor on a file that no longer has a name)."""
    name = os.path.abspath(os.fsdecode(path))
    try:
        mode = os.stat(name).st_mode
    except (OSError, ValueError):
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
    return name, open(name, "xb")


def write_files(outputs: "Sequence[tuple[object, Content]]") -> None:
    """Write every (path, content): all regular files or none of them. Errors name the user's path."""
    names = [os.fsdecode(path) for path, _ in outputs]  # bytes paths too
    in_place = [written_in_place(name) for name in names]
    for i, name in enumerate(names):  # one regular file named twice would be written twice, the last one winning
        if not in_place[i] and any(same_file(name, other) for other in names[:i]):
            raise InputFileError(name, "named twice among the files to write")
    temps: list[tuple[str, str, str]] = []  # (temporary, target, the user's name)
    try:
        for name, (_, content), here in zip(names, outputs, in_place):
            if here:
                continue
            target = os.path.realpath(name)
            try:
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
        for name, (_, content), here in zip(names, outputs, in_place):
            if here:
                try:
                    with open(name, "wb") as f:
                        _emit(f, content)
                except OSError as exc:
                    raise write_error(name, exc) from None
        for tmp, target, name in temps:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise write_error(name, exc) from None
    finally:
        for tmp, _, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:  # renamed: gone, as it should be
                pass


def write_file(path, content: "Content") -> None:
    write_files([(path, content)])
