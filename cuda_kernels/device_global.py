"""Rule 1 of design.md §5 by construction: which driver calls are device-global, and who may make them.

Device-global driver calls (context synchronisation, pool trim, free-memory
readings, synchronous allocation and frees, pinning host memory, copies on
the NULL stream) stall or race with every stream on the device.  They are
allowed only while no proof holds a VRAM reservation there.

Budgets register their proof-reservation counters here (`register`, one per
device pool, with the budget as *owner*).  The driver wrapper
(cuda_kernels/driver.py, the project's only door to the CUDA driver) calls
`check(name, device, owner)` before every call whose name `scope_of` marks:

* ``"context"`` calls (context synchronisation, destruction, reset) wait for
  or tear down every stream of the context, whoever owns it: refused while
  any owner holds a reservation on the device;
* ``"owner"`` calls (pool trim, cuMemGetInfo, synchronous alloc/free,
  pinning, NULL-stream copies) are refused while the calling owner holds a
  reservation on the device, so two Engines on one GPU do not refuse each
  other's idle trim or start-up reading.  A call whose owner is not known
  (`owner=None`) is checked against every owner.

Pure Python with no CUDA import: the scheduler (and the simulated device)
use the same registry and checks without cuda-python installed.
"""
from __future__ import annotations

import threading
from typing import Callable

CONTEXT = "context"
OWNER = "owner"

# wait for or tear down every stream of the context
_CONTEXT_WIDE = frozenset({
    "cuCtxSynchronize", "cuCtxSynchronize_v2", "cuCtxDestroy", "cuCtxDestroy_v2",
    "cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2",
    "cudaDeviceSynchronize", "cudaDeviceReset", "cudaThreadSynchronize",
})
# device-wide effects or implicit synchronisation (CUDA programming guide, "Implicit Synchronization")
_OWNER_SCOPED = frozenset({
    "cuMemPoolTrimTo", "cudaMemPoolTrimTo",
    "cuMemGetInfo", "cuMemGetInfo_v2", "cudaMemGetInfo",
    "cuMemAlloc", "cuMemAlloc_v2", "cuMemAllocPitch", "cuMemAllocPitch_v2", "cuMemAllocManaged",
    "cuMemFree", "cuMemFree_v2", "cudaMalloc", "cudaFree",
    "cuMemAllocHost", "cuMemAllocHost_v2", "cuMemHostAlloc", "cuMemFreeHost",
    "cuMemHostRegister", "cuMemHostRegister_v2", "cuMemHostUnregister",
    "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost", "cudaHostRegister", "cudaHostUnregister",
    # the last release of the primary context destroys it; another owner holding a
    # reservation also retains the context, so the release cannot be the last one
    "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2",
})


def scope_of(name: str) -> str | None:
    """CONTEXT, OWNER, or None (a stream-ordered or purely local call, always allowed)."""
    if name in _CONTEXT_WIDE:
        return CONTEXT
    if name in _OWNER_SCOPED:
        return OWNER
    if name.startswith(("cuMemcpy", "cuMemset")) and not name.endswith(("Async", "Async_v2", "Async_ptds")):
        return OWNER  # the synchronous copies and sets run on the NULL stream
    return None


class DeviceGlobalCallError(RuntimeError):
    """A device-global driver call was made while a proof held a VRAM reservation (a bug, not a user error)."""


_lock = threading.Lock()
# handle -> (device index, owner, callable returning outstanding proof reservations)
_counters: dict[int, tuple[int, object, Callable[[], int]]] = {}
_next_id = 0


def register(device: int, outstanding: Callable[[], int], owner: object = None) -> int:
    """Make `outstanding()` (proof reservations of `owner` on `device`) visible to the checks."""
    global _next_id
    with _lock:
        _next_id += 1
        _counters[_next_id] = (device, owner, outstanding)
        return _next_id


def unregister(handle: int) -> None:
    with _lock:
        _counters.pop(handle, None)


def reservations_outstanding(device: int | None = None, owner: object = None) -> int:
    """Proof reservations on `device` (every device when None) held by `owner` (every owner when None)."""
    with _lock:
        items = list(_counters.values())
    return sum(fn() for dev, own, fn in items
               if (device is None or dev == device) and (owner is None or own is owner))


def check(call_name: str, device: int | None = None, owner: object = None) -> None:
    """Raise DeviceGlobalCallError when `call_name` is device-global and reservations forbid it now."""
    scope = scope_of(call_name)
    if scope is None:
        return
    n = reservations_outstanding(device, None if scope == CONTEXT else owner)
    if n:
        where = "any device" if device is None else f"device {device}"
        whose = "" if scope == CONTEXT or owner is None else " of its owner"
        raise DeviceGlobalCallError(
            f"{call_name} is device-global and was called while {n} proof reservation(s){whose} are "
            f"outstanding on {where} (design.md §5 rule 1)"
        )
