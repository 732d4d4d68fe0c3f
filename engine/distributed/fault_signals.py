"""The fault signals' handlers kept across ray.init and ray.shutdown.

Ray's core worker installs its own handlers for SIGSEGV, SIGBUS, SIGILL and SIGFPE (a C++ stack dump) at
ray.init and puts SIG_DFL back at ray.shutdown.  wasmtime turns a circuit's out-of-bounds memory access into a
trap through SIGSEGV on its guard pages (and other traps through the others), so a process that had computed a
witness before it joined Ray died of a circuit's next trap, by the signal with a core dump and no word, where it
raises WitnessGenerationError.  Handlers set before are put back; where there was none, Ray's stays.

Python's signal module cannot read or set a handler that is not Python's, so the kernel's records are read and
written whole through libc's sigaction (Linux; elsewhere nothing is done).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import signal
import sys
from collections.abc import Iterator

FAULT_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE)
_SIGACTION_BYTES = 256  # glibc's struct sigaction: 152 bytes on x86-64 and aarch64, its handler first


@functools.cache
def _sigaction():
    libc = ctypes.CDLL(None, use_errno=True)
    call = libc.sigaction
    call.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    call.restype = ctypes.c_int
    return call


def installed() -> dict[int, ctypes.Array]:
    """The fault signals that have a handler (neither SIG_DFL nor SIG_IGN): each one's whole record."""
    if not sys.platform.startswith("linux"):
        return {}
    sigaction = _sigaction()
    got = {}
    for sig in FAULT_SIGNALS:
        record = ctypes.create_string_buffer(_SIGACTION_BYTES)
        if sigaction(int(sig), None, record) == 0 and (ctypes.c_void_p.from_buffer(record).value or 0) > 1:
            got[int(sig)] = record
    return got


def handler_address(sig: int) -> int:
    """The address of `sig`'s handler as the kernel holds it (0: SIG_DFL, 1: SIG_IGN)."""
    record = ctypes.create_string_buffer(_SIGACTION_BYTES)
    if _sigaction()(int(sig), None, record) != 0:
        raise OSError(ctypes.get_errno(), f"sigaction({sig})")
    return ctypes.c_void_p.from_buffer(record).value or 0


@contextlib.contextmanager
def fault_handlers_kept() -> Iterator[None]:
    """Whatever handled a fault signal before the block handles it after (Ray's calls inside)."""
    before = installed()
    try:
        yield
    finally:
        if before:
            sigaction = _sigaction()
            for sig, record in before.items():
                sigaction(sig, record, None)
