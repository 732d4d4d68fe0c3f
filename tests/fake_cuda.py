"""A fake of cuda.bindings.driver for CPU tests of cuda_kernels/driver.py and the GPU pipeline's
control flow: every call succeeds (kernels do nothing, copies copy nothing) and the fake keeps
account of what is live (pool allocations, events, streams, pinned buffers) and of every call
made, in order, so tests can check that failure paths free everything and wait before returning.

Use: `with fake_driver() as fake: ...` (cuda_kernels.driver runs over it inside the block).
"""
from __future__ import annotations

import contextlib
import ctypes
import enum
import itertools
import threading


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_READY = 600
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_FAILED = 719


class _Names:
    """An enum namespace whose every member is an int (its value does not matter to the fake)."""

    def __init__(self, prefix: str):
        self._prefix = prefix

    def __getattr__(self, name: str):
        member = _Member(len(name))
        member.name = name
        return member


class _Member(int):
    name = ""

    @property
    def value(self) -> int:
        return int(self)


class _Location:
    type = 0
    id = 0


class CUmemPoolProps:
    def __init__(self):
        self.allocType = 0
        self.location = _Location()


class cuuint64_t(int):
    pass


ATTRIBUTES = {
    "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 132,
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9,
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
}

OK = CUresult.CUDA_SUCCESS


class FakeDriver:
    CUresult = CUresult
    CUmemPoolProps = CUmemPoolProps
    cuuint64_t = cuuint64_t

    def __init__(self):
        self._lock = threading.Lock()
        self._ids = itertools.count(0x1000)
        self.calls: list[str] = []
        self.live_device: dict[int, int] = {}  # ptr -> nbytes (pool allocations)
        self.live_events: set[int] = set()
        self.live_streams: set[int] = set()
        self.streams_made = 0
        self.live_pinned: dict[int, ctypes.Array] = {}
        self.pinned_allocs = 0
        self.total_memory = 80 << 30
        self.functions: list[str] = []  # every kernel name looked up, in order
        self.download_hook = None  # called (dst address, nbytes) after each device-to-host copy
        self.events_pending = False  # True: cuEventQuery says NOT_READY (work still running)
        self.pool_attributes: dict[str, int] = {}  # what cuMemPoolSetAttribute set, by attribute name
        self.lost: int | None = None  # lose_context(): the error every call returns from then on

    def __getattr__(self, name: str):
        if name.startswith("CU"):
            return _Names(name)
        if name.startswith("cu"):  # any call the fake does not model succeeds and returns nothing
            def call(*args):
                self._note(name)
                if self.lost is not None:
                    return (self.lost,)
                return (OK,)
            return call
        raise AttributeError(name)

    # ---- injection hooks (additions: with none used, the fake behaves as above)
    def lose_context(self, error: int = CUresult.CUDA_ERROR_ILLEGAL_ADDRESS) -> None:
        """From now on every driver call (but the error-name look-ups) fails with `error`, as the real driver's
        do once a kernel's fault (an illegal address, a failed launch) has made the context unusable."""
        from cuda_kernels import driver  # noqa: PLC0415

        self.lost = error
        for name in dir(type(self)):
            if name.startswith("cu") and name not in ("cuGetErrorName", "cuGetErrorString"):
                setattr(self, name, self._failing(name))
        driver.cu.__dict__.clear()  # the wrapper's cached functions are the fake's old ones

    def _failing(self, name: str):
        def call(*args):
            self._note(name)
            return (self.lost,)
        return call

    def _note(self, name: str) -> None:
        with self._lock:
            self.calls.append(name)

    def _new(self) -> int:
        return next(self._ids) * 256

    # ---- errors, init, device
    def cuGetErrorName(self, err):
        return OK, CUresult(err).name.encode()

    def cuGetErrorString(self, err):
        return OK, b"injected or fake error"

    def cuInit(self, flags):
        self._note("cuInit")
        return (OK,)

    def cuDeviceGetCount(self):
        return OK, 1

    def cuDeviceGet(self, index):
        return OK, index

    def cuDevicePrimaryCtxRetain(self, dev):
        self._note("cuDevicePrimaryCtxRetain")
        return OK, 0xC0

    def cuDeviceGetName(self, n, dev):
        return OK, b"Fake H200\0"

    def cuDeviceGetAttribute(self, attr, dev):
        return OK, ATTRIBUTES.get(getattr(attr, "name", ""), 0)

    def cuDeviceTotalMem(self, dev):
        return OK, self.total_memory

    def cuCtxGetDevice(self):
        return OK, 0

    def cuMemGetInfo(self):
        self._note("cuMemGetInfo")
        used = sum(self.live_device.values())
        return OK, self.total_memory - used, self.total_memory

    def cuMemPoolCreate(self, props):
        return OK, self._new()

    def cuMemPoolSetAttribute(self, pool, attr, value):
        self._note("cuMemPoolSetAttribute")
        self.pool_attributes[attr.name] = int(getattr(value, "value", value))
        return (OK,)

    def cuMemPoolGetAttribute(self, pool, attr):
        return OK, sum(self.live_device.values())

    # ---- streams and events
    def cuStreamCreate(self, flags):
        h = self._new()
        self.live_streams.add(h)
        self.streams_made += 1
        return OK, h

    def cuStreamCreateWithPriority(self, flags, priority):
        self._note("cuStreamCreateWithPriority")
        h = self._new()
        self.live_streams.add(h)
        self.streams_made += 1
        return OK, h

    def cuCtxGetStreamPriorityRange(self):
        return OK, 0, -5  # least, greatest (an H200's)

    def cuStreamDestroy(self, h):
        self.live_streams.discard(h)
        return (OK,)

    def cuStreamSynchronize(self, h):
        self._note("cuStreamSynchronize")
        return (OK,)

    def cuEventCreate(self, flags):
        self._note("cuEventCreate")
        h = self._new()
        self.live_events.add(h)
        return OK, h

    def cuEventDestroy(self, h):
        self._note("cuEventDestroy")
        self.live_events.discard(h)
        return (OK,)

    def cuEventRecord(self, h, stream):
        self._note("cuEventRecord")
        return (OK,)

    def cuEventSynchronize(self, h):
        self._note("cuEventSynchronize")
        return (OK,)

    def cuEventQuery(self, h):
        self._note("cuEventQuery")
        return (CUresult.CUDA_ERROR_NOT_READY if self.events_pending else OK,)

    def cuEventElapsedTime(self, a, b):
        return OK, 1.0

    # ---- memory
    def cuMemAllocFromPoolAsync(self, nbytes, pool, stream):
        self._note("cuMemAllocFromPoolAsync")
        ptr = self._new()
        with self._lock:
            self.live_device[ptr] = int(nbytes)
        return OK, ptr

    def cuMemFreeAsync(self, ptr, stream):
        self._note("cuMemFreeAsync")
        with self._lock:
            if self.live_device.pop(int(ptr), None) is None:
                return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        return (OK,)

    def cuMemHostAlloc(self, nbytes, flags):
        self._note("cuMemHostAlloc")
        buf = (ctypes.c_uint8 * int(nbytes))()
        ptr = ctypes.addressof(buf)
        self.live_pinned[ptr] = buf
        self.pinned_allocs += 1
        return OK, ptr

    def cuMemFreeHost(self, ptr):
        self._note("cuMemFreeHost")
        self.live_pinned.pop(int(ptr), None)
        return (OK,)

    def cuModuleLoadData(self, image):
        return OK, self._new()

    def cuModuleGetFunctionCount(self, mod):
        return OK, 0  # the fake's module lists no kernels (cuModuleGetFunction makes them on demand)

    def cuModuleEnumerateFunctions(self, count, mod):
        return OK, []

    def cuModuleGetFunction(self, mod, name):
        self.functions.append(name.decode() if isinstance(name, bytes) else str(name))
        return OK, self._new()

    def cuLaunchKernel(self, *args):
        self._note("cuLaunchKernel")
        return (OK,)

    def cuMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        self._note("cuMemcpyDtoHAsync")
        ctypes.memset(dst, 0, nbytes)  # results read as all-zero (points at infinity)
        if self.download_hook is not None:  # a test's bytes instead (e.g. a device check's answer)
            self.download_hook(int(dst), int(nbytes))
        return (OK,)


@contextlib.contextmanager
def fake_driver():
    """cuda_kernels.driver over a fresh FakeDriver inside the block (yielded), the real one after."""
    from cuda_kernels import driver  # noqa: PLC0415

    fake = FakeDriver()
    previous = driver.set_bindings(fake)
    try:
        yield fake
    finally:
        driver.set_bindings(previous)
