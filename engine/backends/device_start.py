"""The CLI's device started on a thread, while the main thread loads the rest of the command.

A cold `prove --backend gpu` waits on the driver before anything of the proof: cuInit (about 100 ms on
the H200) and the device's primary context (65-110 ms with the 1-4 work queues of one proof).  In a fresh
process those two calls go straight to the driver library (cuda_kernels/driver_library.py, ctypes: no numpy, no
bindings), on a thread begun before the main thread imports the bindings (200 ms on the H200 host) and the rest
of the command; the bindings' own cuInit and retain then find both done and take a few milliseconds.  Where the
bindings are loaded already (a program calling prove.run, the tests' fake driver) the thread starts with them.
Imports on two threads at once hand the GIL back and forth at every file read and measured no gain
(perf/RESULTS.md, session 30), so the thread imports nothing.
"""
from __future__ import annotations

import os
import sys
import threading
import time

from cuda_kernels.driver_library import DeviceFacts, DriverStart

# While the start runs beside the main thread's imports, its thread gets the GIL back within this long after
# each driver call (Python's default, 5 ms, would add up over the context's dozen calls); restored by wait().
SWITCH_INTERVAL = 0.0005
QUEUES = "CUDA_DEVICE_MAX_CONNECTIONS"


class DeviceStart:
    """cuInit and device `index`'s context (a driver.Device), begun now on a daemon thread.  `wait()` gives
    the device count (0: no driver or no device, as select.cuda_device_count), `take()` the Device for the
    backend, `close()` releases one that nobody took (the command failed first).

    native: the driver library's head start (DriverStart) before the bindings' import; None uses it when the
    bindings are not imported yet (a fresh process), else an object with the driver's C entry points (tests)."""

    def __init__(self, index: int = 0, *, connections: int | None = None, native=None):
        self.index = index
        self.timings: dict[str, float] = {}  # seconds, as the threads saw them
        self.count = 0
        self.error: BaseException | None = None
        self._device = None
        self._interval: float | None = sys.getswitchinterval()
        sys.setswitchinterval(min(self._interval, SWITCH_INTERVAL))
        self._native: DriverStart | None = None
        if native is None and "cuda_kernels.driver" not in sys.modules:
            native = True
        if native:
            if connections is not None:
                os.environ.setdefault(QUEUES, str(int(connections)))  # as driver.init will: read by cuInit
            self._native = DriverStart(index, None if native is True else native)
        from cuda_kernels import driver  # noqa: PLC0415 - numpy and the bindings, on this thread
        from engine.backends.select import cuda_device_count  # noqa: PLC0415

        if connections is not None:
            driver.prefer_connections(connections)
        self._thread = threading.Thread(target=self._run, args=(driver, cuda_device_count), name="device start",
                                        daemon=True)
        self._thread.start()

    def _run(self, driver, cuda_device_count) -> None:
        native = self._native
        if native is not None and native.wait():
            self.timings.update(native.timings)  # the bindings' calls below find the driver started
        t0 = time.perf_counter()
        self.count = cuda_device_count()  # cuInit; 0 without a driver library or a device
        t1 = time.perf_counter()
        if "cuInit" not in self.timings:
            self.timings["cuInit"] = t1 - t0
        try:
            if self.count > self.index:
                try:
                    self._device = driver.Device(self.index)
                except BaseException as exc:  # raised to the caller by take()
                    self.error = exc
                if "context" in self.timings:
                    self.timings["bindings (cuInit, context)"] = time.perf_counter() - t0
                else:
                    self.timings["context"] = time.perf_counter() - t1
        finally:
            if native is not None:  # the bindings hold the context now (or failed and say why)
                native.release()

    def known(self):
        """The device's DeviceFacts (SM count, architecture) as soon as they are known: after the driver
        library's cuInit, while the context still starts; else once the whole start is done.  None without a
        device."""
        if self._native is not None:
            facts = self._native.known()
            if facts is not None:
                return facts
        self._thread.join()
        device = self._device
        return None if device is None else DeviceFacts(device.sm_count, device.arch)

    def wait(self) -> int:
        """The number of CUDA devices, once the start is done."""
        self._thread.join()
        if self._interval is not None:
            sys.setswitchinterval(self._interval)
            self._interval = None
        return self.count

    def take(self):
        """The started Device, bound to the calling thread; the start's own error if it failed."""
        self.wait()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        device, self._device = self._device, None
        if device is None:
            from engine.errors import BackendUnavailableError  # noqa: PLC0415

            raise BackendUnavailableError("--backend gpu: no CUDA device found on this machine")
        device.make_current()
        return device

    def close(self) -> None:
        """Release the device if nobody took it (idempotent)."""
        self.wait()
        device, self._device = self._device, None
        if device is not None:  # its context's release: off the proof path (the command's end, no proof began)
            device.make_current()
            device.close()
