"""The one-line errors of failed driver calls (cuda_kernels/driver.py's `_call`), apart from the wrapper.

Each names the GPU (when the calling thread works for one), the call and the driver's error; a code the
driver or its bindings have no name for is named by its number (a newer driver's: its bindings answer
(CUDA_ERROR_INVALID_VALUE, None) or raise); host memory that could not be pinned says so; a sticky error
says the context is lost for good (the driver's documentation: every later call on it fails the same way).
"""
from __future__ import annotations

from engine.errors import DeviceError, DeviceOutOfMemoryError


class DeviceContextLostError(DeviceError):
    """A sticky error (an illegal address, a failed launch...): every later call on the context fails too."""


# the CUresults after which "any further CUDA work will return the same error" (cuda.h)
STICKY_ERRORS = frozenset(f"CUDA_ERROR_{e}" for e in (
    "ILLEGAL_ADDRESS", "LAUNCH_TIMEOUT", "HARDWARE_STACK_ERROR", "ILLEGAL_INSTRUCTION", "MISALIGNED_ADDRESS",
    "INVALID_ADDRESS_SPACE", "INVALID_PC", "LAUNCH_FAILED"))


device_names: dict[int, str] = {}  # index -> model, once a driver.Device has read it


def fault_code(results, error: str | int):
    """An injected error's CUresult: by name, or by number (the number itself where the bindings lack it)."""
    if isinstance(error, str):
        return getattr(results, error)
    try:
        return results(error)
    except ValueError:
        return int(error)


def describe(lookup, err, success) -> str | None:
    """cuGetErrorName's or cuGetErrorString's text for `err`; None where the driver has none."""
    try:
        status, text = lookup(err)[:2]
    except Exception:  # noqa: BLE001 - described by its number instead
        return None
    if text is None or status != success:
        return None
    return (text.decode(errors="replace") if isinstance(text, bytes) else str(text)).strip() or None


def driver_error(name: str, err, nbytes: int | None, index: int | None, cu) -> DeviceError:
    """The error for call `name` returning `err` on GPU `index` (None: no device named); `cu`: the driver."""
    label = device_names.get(index)
    where = "" if index is None else f"GPU {index} ({label}): " if label else f"GPU {index}: "
    results = cu.CUresult
    success = results.CUDA_SUCCESS
    try:
        number = str(int(getattr(err, "value", err)))
    except (TypeError, ValueError):
        number = str(err)
    err_name = describe(cu.cuGetErrorName, err, success) or f"CUDA error {number}"
    err_text = describe(cu.cuGetErrorString, err, success) or "the driver has no description of it"
    if err == results.CUDA_ERROR_OUT_OF_MEMORY:
        size = f"{nbytes / 2**20:.1f} MiB" if nbytes is not None else "memory"
        if name == "cuMemHostAlloc":  # page-locked host memory, not the device's
            return DeviceOutOfMemoryError(f"{where}cannot pin {size} of host memory: {name} ran out of memory")
        size = f" ({size} requested)" if nbytes is not None else ""
        return DeviceOutOfMemoryError(f"{where}device out of memory in {name}{size}: {err_text}")
    if err_name in STICKY_ERRORS:
        return DeviceContextLostError(f"{where}{name} failed: {err_name} ({err_text}); the GPU's context is lost "
                                      f"(every later call on it fails): restart the process to use this GPU again")
    return DeviceError(f"{where}{name} failed: {err_name} ({err_text})")
