"""A perf/ script's stdout whose reader left (`python perf/timeline.py run.jsonl | head -1`): the script ends
quietly with 141, not a BrokenPipeError traceback (or Python's "Exception ignored" at its exit, code 120).

141 (128 + SIGPIPE), not 0: what the engine's CLI says for the same (README) and what a shell reports for a C
tool that SIGPIPE ended (`cat big | head -1`), so that a script under `set -o pipefail` can tell a cut table from
a whole one.  Not SIGPIPE's default action itself: a benchmark's socket to its server (perf/serve.py) must keep
raising BrokenPipeError, not kill the process; only a write to descriptor 1 is caught here.

    import pipe_exit
    pipe_exit.install()   # first thing in `if __name__ == "__main__":` (needs_gpu.require_gpu() calls it)
"""
from __future__ import annotations

import atexit
import io
import os
import sys

PIPE_GONE = 141
_installed = False


class _Stdout(io.RawIOBase):
    """Descriptor 1: a write its reader will never take ends the script with SystemExit(141), so that `finally`
    blocks and atexit hooks still run (a GPU benchmark frees its device, shared memory is removed); later writes
    go to /dev/null."""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1

    def isatty(self) -> bool:
        return os.isatty(1)

    def write(self, data) -> int:
        try:
            return os.write(1, data)
        except BrokenPipeError:
            _to_devnull()
            raise SystemExit(PIPE_GONE) from None


def _to_devnull() -> None:
    """Descriptor 1 onto /dev/null: what is still buffered, and the interpreter's own flush at its exit, go
    nowhere instead of failing again."""
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.close(fd)


def _flush_at_exit() -> None:
    """What is still buffered at the exit (a last line without its newline): flushed here, quietly where its
    reader left.  The exit code is then the script's own: only os._exit could change it from an atexit hook, and
    that would skip the hooks registered before this one (a shared-memory block's removal)."""
    try:
        sys.stdout.flush()
    except (SystemExit, OSError, ValueError):
        pass


def install() -> None:
    """sys.stdout over _Stdout, with the encoding and buffering Python chose; once per process."""
    global _installed
    old = sys.stdout
    if _installed or old is None or not hasattr(old, "buffer"):
        return  # (a test's captured stdout, or a stream closed at the start: left as it is)
    try:
        old.flush()
    except (OSError, ValueError):
        pass
    _installed = True
    # every line flushed as it is printed: the SystemExit is raised in the script's own flow, where it sets the
    # exit code (a flush in an atexit hook, the interpreter's or another library's, cannot; atexit drops it)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Stdout()), encoding=old.encoding, errors=old.errors,
                                  line_buffering=True, write_through=True)
    atexit.register(_flush_at_exit)
