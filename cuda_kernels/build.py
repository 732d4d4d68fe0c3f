"""NVRTC build of the kernel sources, cached on disk.

One compile per (sources, generated params header, options, NVRTC version, target
architecture): the cache key hashes all of them, so editing any kernel, changing
a flag or upgrading NVRTC gives a fresh build and never a stale one.  Output is
CUBIN for the device's own architecture (PTX from a newer NVRTC may not load on
an older driver).  A failed compile raises KernelCompileError with the log.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent
ENTRY = "kernels.cu"
DEFAULT_OPTIONS = ("-std=c++17", "-default-device", "-DNDEBUG")
_lock = threading.Lock()


class CompileFailed(Exception):
    """NVRTC rejected the program; `log` is the compiler output."""

    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


def cache_dir() -> Path:
    env = os.environ.get("GROTH16_KERNEL_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "groth16-engine" / "kernels"


def sources() -> dict[str, str]:
    """Every .cu/.cuh beside this file, by name."""
    return {p.name: p.read_text() for p in sorted(SOURCE_DIR.iterdir()) if p.suffix in (".cu", ".cuh")}


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc  # noqa: PLC0415

    err, major, minor = nvrtc.nvrtcVersion()
    _check(err, "nvrtcVersion")
    return int(major), int(minor)


def _check(err, call: str) -> None:
    from cuda.bindings import nvrtc  # noqa: PLC0415

    if int(err) != 0:
        raise CompileFailed(f"{call} failed: {nvrtc.nvrtcGetErrorString(err)[1].decode()}", "")


def cache_key(params: str, arch: str, options: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for name, text in sources().items():
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    h.update(params.encode() + b"\0" + arch.encode() + b"\0" + "\0".join(options).encode())
    h.update(repr(nvrtc_version()).encode())
    return h.hexdigest()[:32]


def compile_cubin(params: str, arch: str = "sm_90", options: tuple[str, ...] = DEFAULT_OPTIONS,
                  use_cache: bool = True) -> tuple[bytes, str]:
    """CUBIN of kernels.cu with `params` as params.cuh; returns (cubin, compiler log)."""
    key = cache_key(params, arch, options)
    path = cache_dir() / f"{key}.cubin"
    if use_cache and path.exists():
        return path.read_bytes(), ""
    with _lock:  # one compile at a time per process; NVRTC is heavy
        if use_cache and path.exists():
            return path.read_bytes(), ""
        cubin, log = _nvrtc_compile(params, arch, options)
        if use_cache:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(cubin)
            os.replace(tmp, path)  # atomic: concurrent processes never read half a file
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
