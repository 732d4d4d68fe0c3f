"""The driver library's own entry points, for the start of a process: before numpy and the bindings are imported.

cuda_kernels/driver.py is the project's door to the CUDA driver, through cuda-python, whose import (with
numpy) takes about 200 ms on the H200's host.  A cold CLI proof wants cuInit and the device's primary context
(about 250 ms together) made beside that import, not after it: `DriverStart` makes those calls through the
library itself (ctypes, whose calls give the GIL up) on a thread.  It is only a head start: the bindings'
cuInit and retain that follow find both done, and whatever fails here is left to them (they fail the same way
and name it).  The one device-global call here, the release of its own retain once the bindings hold theirs,
is checked by cuda_kernels/device_global.py like the wrapper's calls (rule 1 of design.md §5).  Standard
library only; tests/test_device_guard.py holds the driver library to this module and driver.py.
"""
from __future__ import annotations

import ctypes
import sys
import threading
import time

from cuda_kernels import device_global

CU_CTX_SCHED_BLOCKING_SYNC = 0x04  # as driver.Device sets it: threads that wait on the device sleep
DRIVER_LIBRARY = "libcuda.so.1"
# CUdevice_attribute values (cuda.h)
MULTIPROCESSOR_COUNT, COMPUTE_CAPABILITY_MAJOR, COMPUTE_CAPABILITY_MINOR = 16, 75, 76


class DeviceFacts:
    """What a device is, known once cuInit has run (before its context): what the CLI plans a key with.
    (A plain class: typing's import would delay the head start.)"""

    __slots__ = ("sm_count", "arch")

    def __init__(self, sm_count: int, arch: str):
        self.sm_count = sm_count
        self.arch = arch  # sm_XY, as driver.Device.arch

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceFacts) and (self.sm_count, self.arch) == (other.sm_count, other.arch)

    def __repr__(self) -> str:
        return f"DeviceFacts(sm_count={self.sm_count}, arch={self.arch!r})"


def _driver_library():
    """The CUDA driver library through ctypes (whose calls give the GIL up); None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(DRIVER_LIBRARY)
    except OSError:
        return None


class DriverStart:
    """cuInit and a retain of device `index`'s primary context, through the driver library itself on a daemon
    thread.  Only a head start: whatever fails here is left to the bindings, which fail the same way and
    name it.  `release()` gives the retain back once the bindings hold their own (the context lives on)."""

    def __init__(self, index: int, lib=None):
        self.index = index
        self.count = 0
        self.timings: dict[str, float] = {}
        self._lib = lib
        self._device: ctypes.c_int | None = None  # set once the context is retained
        self.facts: DeviceFacts | None = None  # set after cuInit, before the context
        self._known = threading.Event()
        self._thread = threading.Thread(target=self._run, name="device start (driver)", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            t0 = time.perf_counter()
            lib = self._lib if self._lib is not None else _driver_library()
            if lib is None or lib.cuInit(0) != 0:
                return
            count = ctypes.c_int(0)
            if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return
            self.count = count.value
            t1 = time.perf_counter()
            self.timings["cuInit"] = t1 - t0
            device = ctypes.c_int(0)
            if self.count <= self.index or lib.cuDeviceGet(ctypes.byref(device), self.index) != 0:
                return
            self.facts = _facts(lib, device)
            self._known.set()
            _v2(lib, "cuDevicePrimaryCtxSetFlags")(device, CU_CTX_SCHED_BLOCKING_SYNC)  # refused if made already
            context = ctypes.c_void_p(0)
            if lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) != 0:
                return
            self._lib, self._device = lib, device
            self.timings["context"] = time.perf_counter() - t1
        except (OSError, AttributeError):  # a library without these entry points: the bindings will say
            return
        finally:
            self._known.set()

    def known(self) -> DeviceFacts | None:
        """The device's SM count and architecture as soon as cuInit has run (the context may still be starting);
        None where the driver could not tell."""
        self._known.wait()
        return self.facts

    def wait(self) -> bool:
        """True when the driver is initialised and the context retained here."""
        self._thread.join()
        return self._device is not None

    def release(self) -> None:
        """Give this start's retain back (idempotent); the bindings' own keeps the context."""
        self._thread.join()
        device = self._device
        if device is not None:
            # off the proof path: the CLI's start-up, before any backend exists (rule 1, checked as the wrapper does)
            device_global.check("cuDevicePrimaryCtxRelease_v2", self.index)
            self._device = None
            _v2(self._lib, "cuDevicePrimaryCtxRelease")(device)


def _facts(lib, device: ctypes.c_int) -> DeviceFacts | None:
    values = []
    get = getattr(lib, "cuDeviceGetAttribute", None)
    for attribute in (MULTIPROCESSOR_COUNT, COMPUTE_CAPABILITY_MAJOR, COMPUTE_CAPABILITY_MINOR):
        value = ctypes.c_int(0)
        if get is None or get(ctypes.byref(value), attribute, device) != 0:
            return None  # unknown here: the CLI plans once the bindings hold the device
        values.append(value.value)
    sm_count, major, minor = values
    return DeviceFacts(sm_count, f"sm_{major}{minor}")


def _v2(lib, name: str):
    """The current entry point of a call whose first version was replaced (CUDA 11: _v2)."""
    return getattr(lib, f"{name}_v2", None) or getattr(lib, name)
