"""What a path names, asked without importing anything heavy (the CLI client uses it too)."""
from __future__ import annotations

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
        return os.path.realpath(a) == os.path.realpath(b)
