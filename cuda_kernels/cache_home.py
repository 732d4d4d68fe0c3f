"""Where the engine's caches live by default: one rule for the kernels (cuda_kernels/build.py), the keys
(engine/formats/key_cache.py), compiled wasm (engine/witness/modcache.py) and bytecode (engine/bytecode_cache.py).

Here, under cuda_kernels/, because that folder imports nothing of the engine but its errors (tests/test_layout.py)
while the engine may import it; standard library only and small, because the CLI's first import
(engine/bytecode_cache.py) reads it for every command.
"""
from __future__ import annotations

import os


def cache_home(environ=os.environ) -> str | None:
    """$XDG_CACHE_HOME, else ~/.cache.  Only an absolute value counts: the XDG Base Directory spec says a relative
    one is invalid and is ignored (`XDG_CACHE_HOME=cache` gave each working directory a cache of its own; a blank
    value was a folder named by spaces); an absolute one is kept as given, spaces in it too.  None where no absolute
    home is found either (user_home): the caller then has no lasting cache, never one relative to the working
    directory."""
    value = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(value):
        return value
    home = user_home(environ)
    return None if home is None else os.path.join(home, ".cache")


def user_home(environ=os.environ) -> str | None:
    """$HOME where it is an absolute path, else the password database's home for this user (as for an unset
    HOME), else None: a blank or relative HOME made ~/.cache a folder of the working directory."""
    value = environ.get("HOME", "")
    if os.path.isabs(value):
        return value
    try:
        import pwd  # noqa: PLC0415 - POSIX only, and only here

        home = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):  # no such module (Windows), no entry for this uid (a container's)
        return None
    return home if os.path.isabs(home) else None


_scratch: list[str] = []  # the process's own cache folder, made once where there is no home (scratch_home)


def scratch_home(what: str) -> str:
    """The cache base where cache_home() is None: a private folder of this process (made on first use, removed
    at its exit), said once as a warning.  `what`: the cache that asks first, for the warning's words.  The caches
    then still serve this process (a server's keys, its wasm) without writing into the working directory."""
    if not _scratch:
        import atexit  # noqa: PLC0415
        import shutil  # noqa: PLC0415
        import tempfile  # noqa: PLC0415
        import warnings  # noqa: PLC0415

        where = tempfile.mkdtemp(prefix="groth16-engine-cache-")
        atexit.register(shutil.rmtree, where, ignore_errors=True)
        _scratch.append(where)
        warnings.warn(f"no cache folder for the {what}: neither $XDG_CACHE_HOME nor $HOME is an absolute path (and "
                      f"this user has no home in the password database); caching in {where} for this process only "
                      "(set XDG_CACHE_HOME or HOME to an absolute folder to keep the caches)", stacklevel=3)
    return _scratch[0]
