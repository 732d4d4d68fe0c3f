"""NVRTC build of the kernel sources, cached on disk.

One compile per (sources, generated params header, options, NVRTC version, target
architecture): the cache key hashes all of them, so editing any kernel, changing
a flag or upgrading NVRTC gives a fresh build and never a stale one.  Asking NVRTC
its version means loading it (its bindings and the library: 65 ms of a cold CLI
proof on the H200's host, 190 ms here), so the version is remembered beside the
builds (`nvrtc.json`) with the identity of the library it came from (path, size,
modification time) and what steers the search for it (NVRTC_SEARCH_ENV and the
interpreter's package directories); a build loads NVRTC only when that memo does
not hold, and a compile, which loads it anyway, checks the version once more.  Output is
CUBIN for the device's own architecture (PTX from a newer NVRTC may not load on
an older driver).  A failed compile raises KernelCompileError with the log.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import stat
import sys
import threading
import time
from pathlib import Path

from cuda_kernels.cache_home import cache_home, scratch_home  # every cache's base, one rule

SOURCE_DIR = Path(__file__).resolve().parent
ENTRY = "kernels.cu"
DEFAULT_OPTIONS = ("-std=c++17", "-default-device", "-DNDEBUG")
NVRTC_MEMO = "nvrtc.json"
# the environment cuda.pathfinder's search for libnvrtc reads (besides the package directories)
NVRTC_SEARCH_ENV = ("CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "CONDA_PREFIX")
_lock = threading.Lock()
# A cache file is written to `.<name>.<random>.tmp` beside it, flock'ed until it is renamed into place; one that
# no process holds is a killed writer's (SIGKILL, the OOM killer, the CLI's forced exit) and the next process to
# use the directory removes it.  An older version's temporary files (`tmp*.tmp` here, `<key>.cwasm.<pid>.tmp` in
# the wasm cache) had no lock: removed once older than OLD_STYLE_STALE_S.  Only names of these shapes are touched
# (the cache may be pointed at a shared folder).  Used by engine/witness/modcache.py too (standard library).
FRESH_S = 10.0  # an empty unlocked one younger than this: a writer's between its create and its lock
OLD_STYLE_STALE_S = 600.0
OLD_STYLE_TEMPORARY = re.compile(r"tmp[a-z0-9_]{8}\.tmp")  # tempfile.mkstemp(suffix=".tmp") before
_swept: set[str] = set()  # directories this process has swept


class CompileFailed(Exception):
    """NVRTC rejected the program; `log` is the compiler output."""

    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


def write_cache_file(path: Path, data: bytes) -> bool:
    """`data` as `path`, whole or not at all (concurrent readers never see half a file); False where it could not
    be written (a best-effort cache).  Its temporary file is locked while it exists: see remove_dead_temporaries.

    Not engine/file_writes.py's writer, on purpose: cuda_kernels/ imports nothing of the engine but its errors
    (tests/test_layout.py), and that writer is for a command's outputs: it writes a FIFO where it is (here a key
    load waiting for a reader), marks the command finished (Ctrl-C ignored from there, here in mid-proof), raises,
    and finds a killed writer's file by its fixed names at the next write of the same output, where a shared
    cache's random names are swept per folder (remove_dead_temporaries; modcache's entries too)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:  # (not mkstemp's 0600: an entry keeps the umask's permissions, as before, for a shared cache)
            tmp = str(path.parent / f".{path.name[:96]}.{os.urandom(4).hex()}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                break
            except FileExistsError:
                continue
    except OSError:
        return False
    renamed = False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a file system without locks: no sweep can tell it is ours (nor remove it)
            pass
        rest = memoryview(data)
        while rest:
            rest = rest[os.write(fd, rest):]
        os.replace(tmp, path)
        renamed = True
    except OSError:
        pass
    finally:
        if not renamed:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        os.close(fd)  # (the lock goes with it, after the rename)
    return renamed


def read_cache_file(path: Path | str) -> bytes | None:
    """An entry's bytes, or None where there is none or it is no regular file.  `path.read_bytes()` waited
    forever on a FIFO of an entry's name (a cubin's, nvrtc.json: the cache may be a shared folder), in every
    process's first key load; write_cache_file then renames the new entry over it.  Opened without following
    a FIFO's wait (O_NONBLOCK, which a regular file ignores); other read errors reach the caller as before."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # (a directory too: FileIO would refuse it)
            return None
        with open(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def remove_dead_temporaries(directory: Path | str, suffixes: tuple[str, ...] = (".cubin", NVRTC_MEMO),
                            old_style: re.Pattern = OLD_STYLE_TEMPORARY) -> None:
    """Remove the temporary files in `directory` of entries named `*<suffix>` (write_cache_file's; `old_style`:
    an older version's) whose writer has ended without renaming them; once a process a directory."""
    directory = os.fspath(directory)
    if directory in _swept:
        return
    _swept.add(directory)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        made = re.fullmatch(r"\.(.+)\.[a-z0-9_]{8}\.tmp", name)
        ours = made is not None and made.group(1).endswith(suffixes)
        if not ours and not old_style.fullmatch(name):
            continue
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            age = time.time() - st.st_mtime
            # (a non-empty one of ours is a leftover at any age once its lock is free)
            if not stat.S_ISREG(st.st_mode) or (ours and not st.st_size and age < FRESH_S) or \
                    (not ours and age < OLD_STYLE_STALE_S):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: a live writer holds it
            if os.stat(path).st_ino == st.st_ino:
                os.unlink(path)
        except OSError:
            pass
        finally:
            os.close(fd)


def cache_dir() -> Path:
    """$GROTH16_KERNEL_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/groth16-engine/kernels.  A blank variable is unset
    (`GROTH16_KERNEL_CACHE="  "` was a folder named by spaces in the working directory); the base is every cache's
    (cuda_kernels/cache_home.py: a relative $XDG_CACHE_HOME or $HOME ignored; no absolute home at all, this
    process's own folder, said once).  A ~ is the home
    folder, as in the other caches' variables (it was a folder named "~")."""
    env = os.environ.get("GROTH16_KERNEL_CACHE", "")
    if env.strip():
        return Path(env).expanduser()
    return Path(cache_home() or scratch_home("CUDA kernels")) / "groth16-engine" / "kernels"


def sources() -> dict[str, str]:
    """Every .cu/.cuh beside this file, by name."""
    return {p.name: p.read_text(encoding="utf-8")  # not the locale's: LC_ALL=C PYTHONUTF8=0 read ASCII
            for p in sorted(SOURCE_DIR.iterdir()) if p.suffix in (".cu", ".cuh")}


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc  # noqa: PLC0415

    err, major, minor = nvrtc.nvrtcVersion()
    _check(err, "nvrtcVersion")
    return int(major), int(minor)


def _nvrtc_library_path() -> str | None:
    """The file of the NVRTC library the bindings loaded (None where that cannot be told)."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib  # noqa: PLC0415 - the bindings' own loader, cached

        path = load_nvidia_dynamic_lib("nvrtc").abs_path
    except Exception:  # noqa: BLE001 - no pathfinder, another loader: no memo, NVRTC is asked every time
        return None
    return os.path.realpath(path) if path else None


def _nvrtc_search() -> dict:
    """What decides which NVRTC library a process loads, besides the library file itself."""
    return {"env": {name: os.environ.get(name) for name in NVRTC_SEARCH_ENV},
            "packages": [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]}


def _memo_path() -> Path:
    return cache_dir() / NVRTC_MEMO


def _library_identity(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def remembered_nvrtc_version() -> tuple[int, int] | None:
    """The version in the memo, if the memo holds for this process: the same search and the same library
    file (an upgrade in place changes the file)."""
    try:
        data = read_cache_file(_memo_path())
        if data is None:
            return None
        memo = json.loads(data)
        if memo["search"] != _nvrtc_search() or _library_identity(memo["library"]) != memo["identity"]:
            return None
        major, minor = memo["version"]
        return int(major), int(minor)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember_nvrtc_version(version: tuple[int, int]) -> None:
    """Write the memo for the NVRTC this process loaded (nothing where its file is unknown or the cache
    directory is not writable)."""
    library = _nvrtc_library_path()
    identity = _library_identity(library) if library else None
    if identity is None:
        return
    memo = {"version": list(version), "library": library, "identity": identity, "search": _nvrtc_search()}
    write_cache_file(_memo_path(), json.dumps(memo).encode())


def known_nvrtc_version() -> tuple[int, int]:
    """NVRTC's version, from the memo where it holds, else from NVRTC (and remembered)."""
    version = remembered_nvrtc_version()
    if version is None:
        version = nvrtc_version()
        remember_nvrtc_version(version)
    return version


def _check(err, call: str) -> None:
    from cuda.bindings import nvrtc  # noqa: PLC0415

    if int(err) != 0:
        raise CompileFailed(f"{call} failed: {nvrtc.nvrtcGetErrorString(err)[1].decode()}", "")


def cache_key(params: str, arch: str, options: tuple[str, ...], version: tuple[int, int] | None = None) -> str:
    """The build's key; `version`: NVRTC's (known_nvrtc_version when not given)."""
    h = hashlib.sha256()
    for name, text in sources().items():
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    h.update(params.encode() + b"\0" + arch.encode() + b"\0" + "\0".join(options).encode())
    h.update(repr(version if version is not None else known_nvrtc_version()).encode())
    return h.hexdigest()[:32]


def cached_cubin(params: str, arch: str = "sm_90", options: tuple[str, ...] = DEFAULT_OPTIONS) -> bytes | None:
    """The disk cache's CUBIN of this build, or None: nothing is compiled."""
    path = cache_dir() / f"{cache_key(params, arch, options)}.cubin"
    remove_dead_temporaries(path.parent)  # a killed build's
    return read_cache_file(path)


def compile_cubin(params: str, arch: str = "sm_90", options: tuple[str, ...] = DEFAULT_OPTIONS,
                  use_cache: bool = True) -> tuple[bytes, str]:
    """CUBIN of kernels.cu with `params` as params.cuh; returns (cubin, compiler log)."""
    if use_cache:
        cubin = cached_cubin(params, arch, options)
        if cubin is not None:
            return cubin, ""
    with _lock:  # one compile at a time per process; NVRTC is heavy
        version = nvrtc_version()  # NVRTC is loaded for the compile: its own word on the key
        if version != remembered_nvrtc_version():
            remember_nvrtc_version(version)
        path = cache_dir() / f"{cache_key(params, arch, options, version)}.cubin"
        cubin = read_cache_file(path) if use_cache else None
        if cubin is not None:  # another process's, written meanwhile
            return cubin, ""
        cubin, log = _nvrtc_compile(params, arch, options)
        if use_cache:
            remove_dead_temporaries(path.parent)
            write_cache_file(path, cubin)  # atomic: concurrent processes never read half a file
        return cubin, log


def _nvrtc_compile(params: str, arch: str, options: tuple[str, ...]) -> tuple[bytes, str]:
    src = sources()
    opts = [f"--include-path={SOURCE_DIR}".encode()] + [o.encode() for o in options]
    return compile_source(src[ENTRY].encode(), ENTRY, {"params.cuh": params.encode()}, arch, opts)


def compile_source(source: bytes, name: str, headers: dict[str, bytes], arch: str,
                   options: list[bytes]) -> tuple[bytes, str]:
    """One NVRTC compile to a CUBIN: (cubin, log).  NVRTC writes its outputs into caller-made buffers;
    they are bytearrays, never `b" " * size`: for size 1 (an empty log) that expression returns the
    interpreter's shared one-byte b" " itself, and NVRTC's NUL then turned every b" " of the process
    into b"\\x00" (seen as key-cache headers padded with NULs, unreadable, in a CI run)."""
    from cuda.bindings import nvrtc  # noqa: PLC0415

    err, prog = nvrtc.nvrtcCreateProgram(source, name.encode(), len(headers), list(headers.values()),
                                         [h.encode() for h in headers])
    _check(err, "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), *options]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        err, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = bytes(log).decode(errors="replace").rstrip("\x00").strip()
        if int(res) != 0:
            raise CompileFailed(f"NVRTC could not compile {name} for {arch}", log_text)
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        _check(err, "nvrtcGetCUBINSize")
        cubin = bytearray(size)
        (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
        _check(err, "nvrtcGetCUBIN")
        return bytes(cubin), log_text
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
