"""Bytecode for the CLI's modules where Python may not write it beside them.

Docker images commonly set PYTHONDONTWRITEBYTECODE=1, and some ship packages without their .pyc files (the
H200 image's numpy, perf/RESULTS.md session 34): then every `python -m engine ...` compiles each module it
imports from source, ~0.2 s of a 0.5 s cold `prove` for numpy alone.  In that case the CLI keeps the bytecode
in a cache directory of its own (Python's `sys.pycache_prefix`, the mechanism behind PYTHONPYCACHEPREFIX):
nothing is written beside the sources, which is what the setting protects; the first command compiles as
before, later ones read.  Python's own check (each source's size and modification time) keeps an upgraded
package from being served stale bytecode.

Only engine/__main__ calls `enable()`: an application that imports the engine keeps its interpreter's
settings.  A prefix the user set (PYTHONPYCACHEPREFIX, -X pycache_prefix) is left alone.
GROTH16_PYCACHE=off turns this off; GROTH16_PYCACHE=DIR puts the cache there (default
$XDG_CACHE_HOME/groth16-engine/pycache, else ~/.cache/groth16-engine/pycache).

Standard library only, and imported before anything else of the CLI's so that what it imports is cached too.
"""
from __future__ import annotations

import os
import sys

from cuda_kernels.cache_home import cache_home  # every cache's base, one rule

ENV = "GROTH16_PYCACHE"
OFF = ("off", "none", "0", "false", "no")


def default_dir(environ=os.environ) -> str | None:
    """The bytecode's folder under cache_home(); None (no bytecode cache) where there is no home: a cache of one
    process's bytecode would only cost its writes."""
    home = cache_home(environ)
    return None if home is None else os.path.join(home, "groth16-engine", "pycache")


def chosen_dir(environ=os.environ) -> str | None:
    """Where the CLI would keep bytecode when Python may not write it beside the sources; None for "off" (and
    for no home folder: default_dir)."""
    value = environ.get(ENV, "").strip()
    if not value:
        return default_dir(environ)
    if value.lower() in OFF:
        return None
    return os.path.abspath(os.path.expanduser(value))


def enable(environ=os.environ) -> str | None:
    """Point this interpreter's bytecode reads and writes at the cache directory, when Python may not write
    bytecode beside the sources and nobody chose a prefix.  Returns the directory in use, else None."""
    if not sys.dont_write_bytecode or sys.pycache_prefix is not None:
        return None
    where = chosen_dir(environ)
    if where is None or _size_limited() or not os.path.isdir(os.sep.join(where.split(os.sep)[:2]) or os.sep):
        # (a cache under a top folder that does not exist, HOME=/nonexistent: importlib would make its folders
        # relative to the working directory, ./nonexistent/.cache/...)
        return None
    # importlib makes the directories as it writes, and ignores a directory it cannot write (the modules
    # are then compiled from source, as before).
    sys.pycache_prefix = where
    sys.dont_write_bytecode = False
    return where


def _size_limited() -> bool:
    """A finite file size limit (ulimit -f): Python ignores SIGXFSZ and does not check its .pyc write, so a file
    larger than the limit was written cut at it, and every later command read the damaged file."""
    try:
        import resource  # noqa: PLC0415 - a built-in module (POSIX)
    except ImportError:
        return False
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return soft != resource.RLIM_INFINITY


RETRIED = "GROTH16_PYCACHE_CLEARED"  # set for the one re-run after a damaged cache was cleared


def damaged(exc: BaseException) -> bool:
    """Whether `exc` is an import that failed on a damaged .pyc: CPython writes bytecode with one unchecked
    write(), so a disk that fills meanwhile leaves a truncated file that fails every later import of that
    module ("marshal data too short", "bad marshal data") until the source changes."""
    # cut within the code: "marshal data too short", or "EOF read where object expected" mid-object
    return isinstance(exc, EOFError) or (isinstance(exc, ValueError) and "marshal data" in str(exc))


def recover(exc: BaseException, where: str | None, argv: list[str]) -> None:
    """After a damaged .pyc in our cache `where` (None: not in use): clear the cache and run the command
    again, once, in this process's place (nothing of it has run but imports).  Returns where that is not
    the case, and the caller reports the error."""
    if where is None or not damaged(exc) or os.environ.get(RETRIED):
        return
    import shutil  # noqa: PLC0415

    shutil.rmtree(where, ignore_errors=True)
    os.environ[RETRIED] = "1"
    message = (f"the bytecode cache {where} held a damaged file (a disk that filled?); cleared, running the command "
               "again")
    if "--json" in argv:  # the CLI's warning line (cli.warning_line), which cannot be imported here
        import json  # noqa: PLC0415

        sys.stderr.write(json.dumps({"event": "warning", "warning": "bytecode cache", "message": message}) + "\n")
    else:
        sys.stderr.write(f"warning: {message}\n")
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "engine", *argv])
