"""A small runtime over the CUDA driver API, and the project's only door to it.

No other module imports `cuda.bindings.driver` (tests/test_device_guard.py
checks); they use `cu` from here, a view of the bindings through which every
call passes.  A call that cuda_kernels/device_global.py marks device-global
(context synchronisation, pool trim, cuMemGetInfo, synchronous alloc/free,
pinning host memory, NULL-stream copies) is checked first and refused with
DeviceGlobalCallError while a proof reservation forbids it (design.md §5
rule 1), however it is reached: a method here, `getattr(cu, name)`, a method
named close, the scheduler's threads.  The calls that are meant to be made
(at start-up, idle time and shutdown) name their device and owner
(`Device.scope`); any other call is checked against every owner of the
device its thread is bound to (of every device when unbound).

Every call's result goes through `_call`, which turns a driver error into an
exception naming the call and the error.  Memory comes from one
stream-ordered pool per device (cuMemAllocFromPoolAsync / cuMemFreeAsync,
release threshold high); host buffers that are copied are pinned.
Completion is waited for on events and streams only.

For tests: `set_bindings(fake)` runs all of this over a fake driver module,
and `inject_fault(name, nth, error)` makes the nth call of `name` fail with
a driver error (device faults on demand, on the real driver too).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from typing import Iterator, Sequence

import numpy as np

from cuda_kernels import device_global
from cuda_kernels.driver_errors import DeviceContextLostError, device_names, driver_error, fault_code  # noqa: F401
from engine.errors import DeviceError, DeviceOutOfMemoryError  # noqa: F401 - importable from here, as before

try:
    from cuda.bindings import driver as _bindings
except ImportError:  # no cuda-python: nothing here runs until set_bindings() gives a driver
    _bindings = None

_init_lock = threading.Lock()
_initialised = False
_local = threading.local()  # .scope: (device index, owner) of the call being made; .device: bound index
_faults: dict[str, list] = {}  # call name -> [calls left before the fault, error name]
_faults_lock = threading.Lock()


def set_bindings(module):
    """Use `module` as the CUDA driver (a fake in tests); returns the one used before."""
    global _bindings, _initialised
    previous, _bindings, _initialised = _bindings, module, False
    _ask_default_connections()
    device_names.clear()
    cu.__dict__.clear()
    return previous


def _raw(name: str):
    if _bindings is None:
        raise DeviceError("the CUDA driver bindings (cuda-python) are not installed")
    return getattr(_bindings, name)


def _call_scope() -> tuple[int | None, object]:
    """(device, owner) a device-global call is checked against: the named scope, else the bound
    device with every owner (strict), else every device."""
    scope = getattr(_local, "scope", None)
    if scope is not None:
        return scope
    return getattr(_local, "device", None), None


def _checked(name: str, fn):
    def call(*args):
        if device_global.scope_of(name) is not None:
            device, owner = _call_scope()
            device_global.check(name, device, owner)
        if _faults:
            error = _take_fault(name)
            if error is not None:
                return (fault_code(_raw("CUresult"), error),)
        return fn(*args)

    call.__name__ = name
    return call


class _Driver:
    """cuda.bindings.driver as the project sees it: types and enums as they are; functions checked
    (device-global ones always, every one while a fault is armed), the others cached and bare."""

    def __getattr__(self, name: str):
        raw = _raw(name)
        if not (callable(raw) and name.startswith("cu") and not isinstance(raw, type)):
            self.__dict__[name] = raw
            return raw
        if device_global.scope_of(name) is None and name not in _faults:
            self.__dict__[name] = raw  # the hot path pays nothing for the check
            return raw
        return _checked(name, raw)


cu = _Driver()


def _take_fault(name: str) -> str | int | None:
    with _faults_lock:
        plan = _faults.get(name)
        if plan is None:
            return None
        plan[0] -= 1
        if plan[0] > 0:
            return None
        del _faults[name]
        return plan[1]


@contextlib.contextmanager
def inject_fault(name: str, nth: int = 1, error: str | int = "CUDA_ERROR_LAUNCH_FAILED") -> Iterator[None]:
    """Within the block, the nth call of driver function `name` returns `error` (a name, or any number)."""
    if nth < 1:
        raise ValueError(f"inject_fault: nth must be >= 1, got {nth}")
    with _faults_lock:
        _faults[name] = [nth, error]
        cu.__dict__.pop(name, None)  # from now on it comes through _checked
    try:
        yield
    finally:
        with _faults_lock:
            _faults.pop(name, None)


def fault_pending(name: str) -> bool:
    """True while an armed fault of `name` has not fired yet."""
    with _faults_lock:
        return name in _faults


def _call(name: str, ret, *, nbytes: int | None = None):
    """Unpack a driver call's (err, *values), raising on error."""
    if isinstance(ret, tuple):
        err, values = ret[0], ret[1:]
    else:
        err, values = ret, ()
    if err != cu.CUresult.CUDA_SUCCESS:
        index = getattr(_local, "naming", None)  # a Device being started, else the thread's bound one
        raise driver_error(name, err, nbytes, getattr(_local, "device", None) if index is None else index, cu)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


# Hardware work queues a context gets (the driver's default is 8): streams beyond share them, and
# kernels of streams that share one run one after another.  A batch of 16 proofs ran its 16
# one-block tails on 16 streams in 16.3 ms against 8.3 ms for 8 (perf/RESULTS.md, h13tput); 32 is
# the most the driver allows.  Read when the context is created: set before cuInit, a value the
# user set is kept.
MAX_CONNECTIONS = "32"
_connections = MAX_CONNECTIONS  # what init asks for (prefer_connections)


def _ask_default_connections() -> None:  # a new driver (set_bindings) starts from the default again
    global _connections
    _connections = MAX_CONNECTIONS


def prefer_connections(count: int) -> bool:
    """Ask for `count` hardware work queues instead of MAX_CONNECTIONS, before the driver starts: for a
    process that makes one proof (the CLI), whose streams are fewer.  Every queue is made with the context
    and released with it: on the H200, 32 queues cost 472-502 ms in cuDevicePrimaryCtxRetain and 305-325 ms
    in its release, 8 cost 137-144 and 77-82 ms (perf/RESULTS.md, session 30).  A value the user set in
    the environment is kept; False (nothing changed) once init has run."""
    global _connections
    with _init_lock:
        if _initialised:
            return False
        _connections = str(int(count))
        return True


def init() -> None:
    global _initialised
    with _init_lock:
        if not _initialised:
            os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", _connections)
            _call("cuInit", cu.cuInit(0))
            _initialised = True


def device_count() -> int:
    init()
    return int(_call("cuDeviceGetCount", cu.cuDeviceGetCount()))


class Stream:
    def __init__(self, handle):
        self.handle = handle

    def wait_event(self, event: "Event") -> None:
        _call("cuStreamWaitEvent", cu.cuStreamWaitEvent(self.handle, event.handle, 0))

    def synchronize(self) -> None:
        """Wait for this stream only (not the device)."""
        _call("cuStreamSynchronize", cu.cuStreamSynchronize(self.handle))

    def destroy(self) -> None:
        if self.handle is not None:
            _call("cuStreamDestroy", cu.cuStreamDestroy(self.handle))
            self.handle = None


class Event:
    """An event; waiting on it blocks the thread (CU_EVENT_BLOCKING_SYNC) instead of spinning:
    a spinning waiter per in-flight proof would take a CPU core each from the epilogue."""

    def __init__(self, timing: bool = False):
        f = cu.CUevent_flags
        flags = int(f.CU_EVENT_BLOCKING_SYNC) | (0 if timing else int(f.CU_EVENT_DISABLE_TIMING))
        self.timing = timing
        self.handle = _call("cuEventCreate", cu.cuEventCreate(flags))

    def record(self, stream: Stream) -> "Event":
        _call("cuEventRecord", cu.cuEventRecord(self.handle, stream.handle))
        return self

    def synchronize(self) -> None:
        """Block this thread until the event fires (the GIL is released inside the driver)."""
        _call("cuEventSynchronize", cu.cuEventSynchronize(self.handle))

    def query(self) -> bool:
        err = cu.cuEventQuery(self.handle)[0]
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        _call("cuEventQuery", (err,))
        return True

    def elapsed_ms(self, later: "Event") -> float:
        return float(_call("cuEventElapsedTime", cu.cuEventElapsedTime(self.handle, later.handle)))

    def destroy(self) -> None:
        if self.handle is not None:
            _call("cuEventDestroy", cu.cuEventDestroy(self.handle))
            self.handle = None


class DeviceBuffer:
    """Device memory from the stream-ordered pool; freed on the stream that last used it."""

    __slots__ = ("ptr", "nbytes")

    def __init__(self, ptr: int, nbytes: int):
        self.ptr, self.nbytes = ptr, nbytes

    def offset(self, nbytes: int) -> int:
        return self.ptr + nbytes


class PinnedBuffer:
    """Page-locked host memory with a numpy view.  Pinning and unpinning synchronise the device
    implicitly, so both are device-global: made only while `device`'s owner holds no proof
    reservation (a pool of them is grown and shrunk at such moments: engine/backends/gpu/runtime.py)."""

    def __init__(self, device: "Device", nbytes: int):
        self.device = device
        self.nbytes = max(int(nbytes), 1)
        with device.scope():
            self.ptr = int(_call("cuMemHostAlloc", cu.cuMemHostAlloc(self.nbytes, 0), nbytes=self.nbytes))
        raw = (ctypes.c_uint8 * self.nbytes).from_address(self.ptr)
        self.array = np.frombuffer(raw, dtype=np.uint8)

    def view(self, dtype, count: int | None = None) -> np.ndarray:
        a = self.array.view(dtype)
        return a if count is None else a[:count]

    def free(self) -> None:
        if self.ptr:
            with self.device.scope():
                _call("cuMemFreeHost", cu.cuMemFreeHost(self.ptr))
            self.array = None
            self.ptr = 0


class Module:
    def __init__(self, cubin: bytes, curve: str | None = None):
        self.handle = _call("cuModuleLoadData", cu.cuModuleLoadData(cubin))
        self.curve = curve  # the curve whose params it was built for (kernel picks read it)
        self._preloaded: set[str] = set()
        self._all_loaded = False
        self._functions: dict[str, object] = {}
        self._resident: dict[tuple[str, int, int], int | None] = {}

    def preload(self, names=None) -> None:
        """Load kernels' code now, not at their first launch: the named ones, or every kernel of the
        module (names None).  Under the driver's lazy module loading (CUDA_MODULE_LOADING=LAZY, the
        default) a kernel's first launch loads its code, and that load can wait for the work already
        queued on the device: a process's first key load stalled its upload behind its own fold
        tables' kernels (perf/RESULTS.md, h13first).  cuFuncLoad where the bindings have it (CUDA
        12.4); else cuModuleGetFunction alone.  Each kernel once per module.  Off the proof path: a
        key load calls it before it queues any work (cuFuncLoad may wait for work already on the
        device, so never from a proof's memory or compute phase)."""
        load = getattr(cu, "cuFuncLoad", None)
        if names is None:
            if self._all_loaded:
                return
            count = int(_call("cuModuleGetFunctionCount", cu.cuModuleGetFunctionCount(self.handle)) or 0)
            funcs = _call("cuModuleEnumerateFunctions", cu.cuModuleEnumerateFunctions(count, self.handle)) or []
            if load is not None:
                for f in funcs:
                    _call("cuFuncLoad", load(f))
            self._all_loaded = True
            return
        for name in names:
            fn = self.function(name)
            if load is not None and name not in self._preloaded and not self._all_loaded:
                _call(f"cuFuncLoad({name})", load(fn))
            self._preloaded.add(name)

    def function(self, name: str):
        f = self._functions.get(name)
        if f is None:
            f = _call(f"cuModuleGetFunction({name})", cu.cuModuleGetFunction(self.handle, name.encode()))
            self._functions[name] = f
        return f

    def resident_blocks(self, name: str, threads: int, shared: int = 0) -> int | None:
        """Blocks of `threads` of kernel `name` one SM holds at once (the driver's occupancy for
        its registers and shared memory); None where the driver answers nothing (a fake)."""
        key = (name, threads, shared)
        cache = self._resident
        if key not in cache:
            got = _call("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                        cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.function(name), threads, shared))
            cache[key] = int(got) if got is not None else None
        return cache[key]

    def allow_shared(self, name: str, nbytes: int) -> None:
        """Let `name` use more than 48 KiB of dynamic shared memory."""
        attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _call("cuFuncSetAttribute", cu.cuFuncSetAttribute(self.function(name), attr, nbytes))


class U32(ctypes.c_uint32):
    """A 32-bit kernel argument."""


class Ptr(ctypes.c_uint64):
    """A device pointer kernel argument."""


_launch_slots = threading.local()  # per thread: argument count -> (its slot array, the address of its pointer half)


def _slots(n: int) -> tuple:
    """This thread's array of n 8-byte argument slots and, after them, the n slots' addresses (made once): the
    driver copies a launch's arguments before cuLaunchKernel returns, so the next launch may reuse them."""
    held = getattr(_launch_slots, "by_count", None)
    if held is None:
        held = _launch_slots.by_count = {}
    got = held.get(n)
    if got is None:
        array = (ctypes.c_uint64 * (2 * n))()
        base = ctypes.addressof(array)
        array[n:] = range(base, base + 8 * n, 8)
        got = held[n] = (array, base + 8 * n)
    return got


def _other_word(a) -> int:
    """An argument of another type than launch's fast ones: a ctypes integer's value, else int(a)."""
    if isinstance(a, ctypes._SimpleCData) and isinstance(a.value, int):
        return a.value
    return int(a)


def launch(module: Module, name: str, grid: int | Sequence[int], block: int, stream: Stream, *args,
           shared: int = 0) -> None:
    """Launch `name` with arguments U32 (a 32-bit word), Ptr, DeviceBuffer or int (a pointer).

    Each argument is one 8-byte slot of the calling thread's slot array, whose second half points at the
    first (a U32 parameter reads the low 4 bytes of its slot: little-endian): a small proof's ~45-60 launches
    are about half of its host enqueue (perf/launch_overhead.py, perf/RESULTS.md "Session 27")."""
    if type(grid) is int:
        if grid == 0:
            return
        gx, gy, gz = grid, 1, 1
    else:
        gx, gy, gz = grid
        if gx == 0:
            return
    n = len(args)
    array, params = _slots(n)
    words = []
    for a in args:  # type identity, not isinstance: the slots' values in ~1 us for 17 arguments
        t = type(a)
        if t is int:
            words.append(a)
        elif t is U32 or t is Ptr:
            words.append(a.value)
        elif t is DeviceBuffer:
            words.append(a.ptr)
        else:
            words.append(_other_word(a))
    array[:n] = words
    ret = cu.cuLaunchKernel(module.function(name), gx, gy, gz, block, 1, 1, shared, stream.handle, params, 0)
    if ret[0] != cu.CUresult.CUDA_SUCCESS:
        _call(f"cuLaunchKernel({name})", ret)


class Device:
    """One GPU: its primary context, a stream-ordered memory pool, and streams."""

    def __init__(self, index: int = 0, owner: object = None):
        init()
        self.index = index
        # whose reservations the device-global calls made here are checked against; until an
        # owner is set (the scheduler's budget, `set_owner`) the device is its own owner and,
        # holding no reservation, may make them (a start-up reading beside another Engine's proofs)
        self.owner = owner if owner is not None else object()
        self.pool = self.context = None
        previous, _local.naming = getattr(_local, "naming", None), index  # its errors name it from the start
        try:
            self.handle = _call("cuDeviceGet", cu.cuDeviceGet(index))
            # host threads that wait on the device sleep rather than spin (they would starve the CPU
            # work that runs beside the GPU); a context another library already made keeps its flags
            cu.cuDevicePrimaryCtxSetFlags(self.handle, int(cu.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC))
            self.context = _call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(self.handle))
            self.make_current()
            name = _call("cuDeviceGetName", cu.cuDeviceGetName(128, self.handle))
            self.name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
            device_names[index] = self.name
            a = cu.CUdevice_attribute
            self.sm_count = self._attr(a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            self.cc = (self._attr(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                       self._attr(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
            self.max_shared_per_block = self._attr(a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            self.total_memory = int(_call("cuDeviceTotalMem", cu.cuDeviceTotalMem(self.handle)))
            self.pool = self._create_pool()
        except BaseException:
            with contextlib.suppress(DeviceError):  # a failed start keeps no retain of the context
                self.close()
            raise
        finally:
            _local.naming = previous

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    def _attr(self, attr) -> int:
        return int(_call("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(attr, self.handle)))

    def make_current(self) -> None:
        """Bind this device's primary context to the calling thread."""
        _call("cuCtxSetCurrent", cu.cuCtxSetCurrent(self.context))
        _local.device = self.index

    def set_owner(self, owner: object) -> None:
        """Check this device's device-global calls against `owner`'s reservations from now on."""
        self.owner = owner

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Device-global calls inside are checked against this device and its owner."""
        previous = getattr(_local, "scope", None)
        _local.scope = (self.index, self.owner)
        try:
            yield
        finally:
            _local.scope = previous

    def _create_pool(self):
        props = cu.CUmemPoolProps()
        props.allocType = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        props.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        props.location.id = self.index
        pool = self.pool = _call("cuMemPoolCreate", cu.cuMemPoolCreate(props))  # (destroyed by a failed start)
        # keep freed memory in the pool: returning it to the OS is what trim (idle only) is for
        threshold = cu.cuuint64_t(0xFFFFFFFFFFFFFFFF)
        _call("cuMemPoolSetAttribute",
              cu.cuMemPoolSetAttribute(pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold))
        # No allocation may wait on another stream's pending free.  The pool's default lets an
        # allocation on stream Y reuse memory freed on stream X before X has run the free, by making Y
        # wait for X: a proof's memory phase allocates on the upload stream, so its upload could wait
        # for the previous proof's compute stream (and a pageable upload, which syncs its stream, the
        # device thread with it).  Measured alone at 2^14 (perf/RESULTS.md, throughput): the memory
        # phase 13.1 -> 3.5 ms at one slot and 32 in flight; most of the gain came with
        # pipeline._fetch_late.  Reuse of frees that have run, and of frees ordered by an event, stays
        # on; a proof's VRAM reservation ends after its done event, when its frees have run, so the
        # budget still bounds the pool.
        _call("cuMemPoolSetAttribute",
              cu.cuMemPoolSetAttribute(pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                                       0))
        return pool

    def stream(self, urgent: bool = False) -> Stream:
        """A non-blocking stream; `urgent`: at the context's highest priority, so that its kernels'
        blocks are scheduled before those of default-priority streams (a proof's kernels beside a
        key's fold tables, which build on a default stream: engine/backends/gpu/key.py)."""
        flags = cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value
        if not urgent:
            return Stream(_call("cuStreamCreate", cu.cuStreamCreate(flags)))
        _least, greatest = _call("cuCtxGetStreamPriorityRange", cu.cuCtxGetStreamPriorityRange())
        return Stream(_call("cuStreamCreateWithPriority", cu.cuStreamCreateWithPriority(flags, int(greatest))))

    def alloc(self, nbytes: int, stream: Stream) -> DeviceBuffer:
        """Stream-ordered allocation from the device's pool (never a synchronous cuMemAlloc)."""
        nbytes = max(int(nbytes), 16)
        ptr = _call("cuMemAllocFromPoolAsync", cu.cuMemAllocFromPoolAsync(nbytes, self.pool, stream.handle),
                    nbytes=nbytes)
        buf = DeviceBuffer(int(ptr), nbytes)
        recorder = getattr(_local, "recorder", None)
        if recorder is not None:
            recorder.append(buf)
        return buf

    @staticmethod
    @contextlib.contextmanager
    def recording() -> Iterator[list[DeviceBuffer]]:
        """Every buffer this thread allocates inside the block is appended to the yielded list
        (a failure path frees exactly what was allocated, whoever allocated it)."""
        previous = getattr(_local, "recorder", None)
        bufs: list[DeviceBuffer] = []
        _local.recorder = bufs
        try:
            yield bufs
        finally:
            _local.recorder = previous
            if previous is not None:
                previous.extend(bufs)

    @staticmethod
    def free(buf: DeviceBuffer, stream: Stream) -> None:
        if buf.ptr:
            _call("cuMemFreeAsync", cu.cuMemFreeAsync(buf.ptr, stream.handle))
            buf.ptr = 0

    @staticmethod
    def upload(buf: DeviceBuffer | int, host: np.ndarray, stream: Stream, offset: int = 0) -> None:
        """Host -> device, asynchronous when `host` is pinned (otherwise the driver stages it)."""
        dst = (buf.ptr if isinstance(buf, DeviceBuffer) else int(buf)) + offset
        src = np.ascontiguousarray(host)
        _call("cuMemcpyHtoDAsync", cu.cuMemcpyHtoDAsync(dst, src.ctypes.data, src.nbytes, stream.handle))

    @staticmethod
    def download(host: np.ndarray, buf: DeviceBuffer | int, stream: Stream, offset: int = 0) -> None:
        src = (buf.ptr if isinstance(buf, DeviceBuffer) else int(buf)) + offset
        assert host.flags.c_contiguous
        _call("cuMemcpyDtoHAsync", cu.cuMemcpyDtoHAsync(host.ctypes.data, src, host.nbytes, stream.handle))

    @staticmethod
    def copy(dst: DeviceBuffer | int, src: DeviceBuffer | int, nbytes: int, stream: Stream) -> None:
        d = dst.ptr if isinstance(dst, DeviceBuffer) else int(dst)
        s = src.ptr if isinstance(src, DeviceBuffer) else int(src)
        _call("cuMemcpyDtoDAsync", cu.cuMemcpyDtoDAsync(d, s, nbytes, stream.handle))

    @staticmethod
    def memset32(buf: DeviceBuffer | int, value: int, count: int, stream: Stream) -> None:
        ptr = buf.ptr if isinstance(buf, DeviceBuffer) else int(buf)
        _call("cuMemsetD32Async", cu.cuMemsetD32Async(ptr, value, count, stream.handle))

    def pool_used_bytes(self) -> int:
        """Bytes of this device's pool in use (a pool-local reading: not device-global)."""
        attr = cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT
        return int(_call("cuMemPoolGetAttribute", cu.cuMemPoolGetAttribute(self.pool, attr)))

    def pool_peak_bytes(self, reset: bool = False, reserved: bool = False) -> int:
        """The pool's high-water mark of bytes in use (pool-local, for benchmarks); reset=True restarts it.
        In use is counted in the order the host calls alloc and free (a free enqueued behind a proof's
        kernels counts at once), so it can read below what the device held; `reserved`: the mark of the
        memory the pool held from the device (what really backed the allocations)."""
        pool_attr = cu.CUmemPool_attribute
        attr = pool_attr.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH if reserved else pool_attr.CU_MEMPOOL_ATTR_USED_MEM_HIGH
        if reset:
            _call("cuMemPoolSetAttribute", cu.cuMemPoolSetAttribute(self.pool, attr, cu.cuuint64_t(0)))
            return 0
        return int(_call("cuMemPoolGetAttribute", cu.cuMemPoolGetAttribute(self.pool, attr)))

    # ---- device-global calls: start-up, idle and shutdown only (checked by the wrapper)
    def synchronize(self) -> None:
        self.make_current()
        with self.scope():
            # off the proof path: shutdown and tests only (refused while any proof is reserved)
            _call("cuCtxSynchronize", cu.cuCtxSynchronize())

    def trim_pool(self, keep_bytes: int = 0) -> None:
        with self.scope():
            # off the proof path: idle trim only (refused while this owner holds a reservation)
            _call("cuMemPoolTrimTo", cu.cuMemPoolTrimTo(self.pool, keep_bytes))

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes: a live, device-wide reading, for start-up budgets only."""
        self.make_current()
        with self.scope():
            # off the proof path: start-up budgets only (refused while this owner holds a reservation)
            free, total = _call("cuMemGetInfo", cu.cuMemGetInfo())
        return int(free), int(total)

    def close(self) -> None:
        """Destroy the pool and release the context; the release is made even when the destroy fails."""
        try:
            if self.pool is not None:
                pool, self.pool = self.pool, None
                _call("cuMemPoolDestroy", cu.cuMemPoolDestroy(pool))
        finally:
            if self.context is not None:
                self.context = None
                with self.scope():
                    _call("cuDevicePrimaryCtxRelease", cu.cuDevicePrimaryCtxRelease(self.handle))
