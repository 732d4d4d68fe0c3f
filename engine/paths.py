"""What a path names, asked without importing anything heavy (the CLI client uses it too)."""
from __future__ import annotations

import errno
import os
import stat


def is_pipe(path) -> bool:
    """Whether `path` names a pipe (`<(...)`): read once, whole, by the process that was given it."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, TypeError, ValueError):  # missing or unreadable (its reader names that), not a path at all
        return False


def same_file(a, b) -> bool:
    """Whether two paths name one file (the same inode where both exist, else the same resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet (or cannot be read): compare what they resolve to
        pass
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:  # a relative path in a deleted working directory: only the same name is the same file
        return os.path.normpath(os.fsdecode(a)) == os.path.normpath(os.fsdecode(b))


def real_path(path) -> str:
    """os.path.realpath(path), whose error for a relative path in a working directory that was deleted (a bare
    "No such file or directory" from getcwd) says so."""
    try:
        return os.path.realpath(path)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "the current directory no longer exists") from None


# Standard descriptors this process was started without, which engine/__main__ opened on /dev/null: an output
# named as one of them (/dev/stdout with `>&-`) would go to /dev/null without a word.
started_closed: set[int] = set()
_STREAM_NAMES = {"stdout": 1, "stderr": 2, "fd/1": 1, "fd/2": 2}


def closed_stream(path) -> str | None:
    """"standard output" or "standard error" where `path` names one that the process was started without."""
    if not started_closed:
        return None
    try:
        name = os.path.abspath(os.fsdecode(path))
    except (OSError, ValueError, TypeError):
        return None
    for prefix in ("/dev/", "/proc/self/", f"/proc/{os.getpid()}/"):
        fd = _STREAM_NAMES.get(name[len(prefix):]) if name.startswith(prefix) else None
        if fd in started_closed:
            return "standard output" if fd == 1 else "standard error"
    return None
