"""The device-global-call guard (design.md §5 rule 1), shared by every engine in the process.

Device-global driver calls (context/device synchronisation, pool trim, free
memory readings, synchronous alloc/free) interfere with every stream on the
device.  They are allowed only while no proof holds a VRAM reservation on that
device.  Budgets register themselves here (`register`); the driver wrapper in
`cuda_kernels` (and the simulated device) calls `check_driver_call(name,
device)` before each driver call, which raises `DeviceGlobalCallError` when a
banned call is made while a reservation is outstanding.  The scheduler only
issues such calls (pool trim) from its idle hook, while it holds the whole
budget itself, so a raise here is always a bug, never a user error.

Wiring for the driver wrapper (the lead's `cuda_kernels` runtime)::

    from scheduler import guard
    def driver_call(name, fn, *args, device=None):
        guard.check_driver_call(name, device)   # cheap: a set lookup for allowed calls
        return fn(*args)
"""
from __future__ import annotations

import threading
from typing import Callable

# Calls that act on the whole device/context or may synchronise it implicitly: the names the
# guard refuses on a proof's path (a list of names, not calls; they are made only off the path).
BANNED_CALLS = frozenset(
    {
        "cuCtxSynchronize",
        "cudaDeviceSynchronize",
        "cuMemPoolTrimTo",
        "cudaMemPoolTrimTo",
        "cuMemGetInfo",
        "cuMemGetInfo_v2",
        "cudaMemGetInfo",
        "cuMemAlloc",
        "cuMemAlloc_v2",
        "cuMemFree",
        "cuMemFree_v2",
        "cudaMalloc",
        "cudaFree",
    }
)


class DeviceGlobalCallError(RuntimeError):
    """A device-global driver call was made while a proof held a VRAM reservation (a bug)."""


_lock = threading.Lock()
# registration id -> (device index, callable returning outstanding proof reservations)
_counters: dict[int, tuple[int, Callable[[], int]]] = {}
_next_id = 0


def register(device: int, outstanding: Callable[[], int]) -> int:
    """Make `outstanding()` (proof reservations on `device`) visible to the guard; returns a handle."""
    global _next_id
    with _lock:
        _next_id += 1
        _counters[_next_id] = (device, outstanding)
        return _next_id


def unregister(handle: int) -> None:
    with _lock:
        _counters.pop(handle, None)


def reservations_outstanding(device: int | None = None) -> int:
    """Proof reservations outstanding on `device` (every device when None), over all engines."""
    with _lock:
        items = list(_counters.values())
    return sum(fn() for dev, fn in items if device is None or dev == device)


def assert_no_reservations(call_name: str, device: int | None = None) -> None:
    """Raise DeviceGlobalCallError if any proof holds a reservation on `device` (or on any device)."""
    n = reservations_outstanding(device)
    if n:
        where = "any device" if device is None else f"device {device}"
        raise DeviceGlobalCallError(
            f"{call_name} is device-global and was called while {n} proof reservation(s) are "
            f"outstanding on {where} (design.md §5 rule 1)"
        )


def check_driver_call(call_name: str, device: int | None = None) -> None:
    """The hook for a driver wrapper: refuses banned calls while reservations are outstanding."""
    if call_name in BANNED_CALLS:
        assert_no_reservations(call_name, device)
