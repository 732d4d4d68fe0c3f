"""Per-device state of the GPU backend: the device, its compiled modules, streams and pinned buffers.

Driver calls may come from several threads (the scheduler's device worker and
waiter threads); each binds the context once (`bind_thread`).  Kernels are
compiled by NVRTC for the device's own architecture (`prepare`, on any thread:
the scheduler runs it off the device thread, so a compile never stalls the
proofs on the device) and loaded on first use per curve (`module`).

Pinned host buffers (`PinnedPool`) are made and freed only in `maintain()`:
pinning synchronises the device implicitly, so it is device-global (design.md
§5 rule 1) and the driver wrapper refuses it while this device's owner holds a
proof reservation.  A proof only takes and gives back.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Callable

from cuda_kernels import build
from cuda_kernels.driver import Device, DeviceContextLostError, Event, Module, PinnedBuffer, Stream

from engine.algebra.curves import Curve
from engine.errors import DeviceError, KernelCompileError
from engine.backends.gpu.params import params_header

MIN_PINNED = 1 << 16
log = logging.getLogger(__name__)
_lost_told = False  # release_all has warned of a lost context


def release_all(*steps: Callable[[], object]) -> None:
    """Run every clean-up step though one fails (a failing free or destroy skipped the rest, which then
    leaked), then raise the first DeviceError.  Where the context is lost its resources go with it and the
    jobs have said so: that is logged, not raised (an Engine's close then still stops its threads)."""
    errors: list[DeviceError] = []
    for step in steps:
        try:
            step()
        except DeviceError as exc:
            errors.append(exc)
    if any(isinstance(e, DeviceContextLostError) for e in errors):
        global _lost_told
        told, _lost_told = _lost_told, True  # once a process: every later release meets the same error
        log.log(logging.DEBUG if told else logging.WARNING, "releasing a lost GPU context's resources: %s", errors[0])
    elif errors:
        raise errors[0]


def free_buffers(bufs, stream: Stream) -> None:
    """Free every live buffer on `stream`; those whose free failed are freed again once the stream's work
    is done, and the first error that stays is raised after the last free."""
    failed = []
    for buf in bufs:
        if buf is not None and buf.ptr:
            try:
                Device.free(buf, stream)
            except DeviceError:
                failed.append(buf)
    if failed:
        release_all(stream.synchronize, *[(lambda b=b: Device.free(b, stream)) for b in failed])


def pinned_size_class(nbytes: int) -> int:
    """Buffers come in powers of two (at least 64 KiB), so keys of similar size share them."""
    return max(MIN_PINNED, 1 << (max(int(nbytes), 1) - 1).bit_length())


def curve_cubin(curve: Curve, arch: str) -> bytes:
    """The curve's kernels as CUBIN for `arch` (the disk cache, else NVRTC); no driver call, any thread.  The
    cache is an optimisation: one that cannot be read or written (a read-only home, a full disk) is gone
    without (a bare OSError from it failed the key load)."""
    params = params_header(curve)
    try:
        try:
            if _writable(build.cache_dir()):
                cubin, _ = build.compile_cubin(params, arch=arch)
            else:  # read where it can be (a read-only cache made ahead), compiled without it where it cannot
                log.warning("kernel cache %s cannot be written: a kernel missing there is compiled by every "
                            "process (set GROTH16_KERNEL_CACHE to a writable directory)", build.cache_dir())
                cubin = _cached(params, arch) or build.compile_cubin(params, arch=arch, use_cache=False)[0]
        except OSError as exc:  # a read error, or the write failed after the compile (a full disk): again, without
            log.warning("kernel cache %s: %s; compiling without it", build.cache_dir(), exc)
            cubin, _ = build.compile_cubin(params, arch=arch, use_cache=False)
    except build.CompileFailed as exc:
        raise KernelCompileError(f"kernel build for {curve.name} failed: {exc}", exc.log) from exc
    return cubin


def _cached(params: str, arch: str) -> bytes | None:
    try:
        return build.cached_cubin(params, arch)
    except OSError:
        return None


def _writable(directory) -> bool:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK)


def cached_curve_cubin(curve: Curve, arch: str) -> bytes | None:
    """The curve's CUBIN for `arch` from the kernel cache, or None; never compiles.  For work done ahead (the CLI's,
    beside the context's start): a miss, or any trouble reading, is left to GpuContext.prepare, which compiles
    or reports it where it always has."""
    try:
        return build.cached_cubin(params_header(curve), arch)
    except Exception:  # noqa: BLE001 - an optimisation only: prepare meets the same trouble and names it
        return None


class PinnedPool:
    """Pinned host buffers for the proofs' witness uploads and result downloads, by size class.

    `want(tag, nbytes, count)` says what a resident key needs (`count` proofs of it in flight);
    `take` and `give_back` are all a proof does; a proof that finds no free buffer is counted
    (`misses`), goes on with pageable memory, and raises the count wanted for its size, so the next
    `maintain()` pins one more.  `maintain()` pins what is wanted and unpins what no key wants any
    more (a key unloaded, a size class gone): the pool grows and shrinks, off the proof path.
    """

    def __init__(self, device: Device):
        self.device = device
        self._lock = threading.Lock()
        self._free: dict[int, list[PinnedBuffer]] = {}
        self._count: dict[int, int] = {}  # buffers that exist per size class (free or in use)
        self._wants: dict[object, tuple[int, int]] = {}  # tag -> (size class, count)
        self._caps: dict[int, int] = {}  # size class -> buffers held when pinning more failed (until wants change)
        self.misses = 0

    def want(self, tag: object, nbytes: int, count: int) -> None:
        with self._lock:
            size = pinned_size_class(nbytes)
            _, had = self._wants.get(tag, (size, 0))
            self._wants[tag] = (size, max(had, count))
            self._caps.clear()  # a key came: pinning is tried again

    def unwant(self, tag: object) -> None:
        with self._lock:
            self._wants.pop(tag, None)
            self._caps.clear()

    def take(self, nbytes: int, tag: object = None, *, count_miss: bool = True) -> PinnedBuffer | None:
        """A free buffer of at least nbytes, or None (never pins: that is `maintain`'s job).
        count_miss=False: a caller with a pageable fallback that wants no more buffers (key loads)."""
        size = pinned_size_class(nbytes)
        with self._lock:
            free = self._free.get(size)
            if free:
                return free.pop()
            if not count_miss:
                return None
            self.misses += 1
            if tag in self._wants:
                wanted_size, count = self._wants[tag]
                if wanted_size == size:
                    self._wants[tag] = (size, count + 1)
            return None

    def give_back(self, buf: PinnedBuffer | None) -> None:
        if buf is None:
            return
        with self._lock:
            self._free.setdefault(pinned_size_class(buf.nbytes), []).append(buf)

    def _target(self) -> dict[int, int]:
        target: dict[int, int] = {}
        for size, count in self._wants.values():
            target[size] = target.get(size, 0) + count
        for size, cap in self._caps.items():
            if size in target:
                target[size] = min(target[size], cap)
        return target

    def maintenance_due(self) -> bool:
        with self._lock:
            target = self._target()
            sizes = set(target) | set(self._count)
            return any(self._count.get(s, 0) != target.get(s, 0) for s in sizes)

    def maintain(self) -> None:
        """Pin what the keys want, unpin free buffers nobody wants (only while the owner is idle)."""
        with self._lock:
            target = self._target()
            plan = {s: target.get(s, 0) - self._count.get(s, 0) for s in set(target) | set(self._count)}
            surplus = []
            for size, delta in plan.items():
                free = self._free.get(size, [])
                while delta < 0 and free:  # buffers in use come back later and are unpinned then
                    surplus.append(free.pop())
                    self._count[size] -= 1
                    delta += 1
        unpinned = [(lambda b=b: b.free()) for b in surplus]
        try:
            release_all(*unpinned)
        except DeviceError as exc:  # that buffer stays pinned; the rest are unpinned, and proofs go on
            log.warning("%s; a pinned host buffer could not be unpinned", exc)
        for size, delta in plan.items():
            for _ in range(max(delta, 0)):
                try:
                    buf = PinnedBuffer(self.device, size)
                except DeviceError as exc:
                    # the proofs' buffers are an optimisation: without them they copy through pageable memory.
                    # Raised here it failed the key load that asked for them (whose key stayed on the device)
                    with self._lock:
                        self._caps[size] = self._count.get(size, 0)
                    log.warning("%s; proofs without a pinned buffer copy through pageable memory", exc)
                    break
                with self._lock:
                    self._free.setdefault(size, []).append(buf)
                    self._count[size] = self._count.get(size, 0) + 1

    @property
    def nbytes(self) -> int:
        """Pinned bytes held (free or in use): what the host budget counts."""
        with self._lock:
            return sum(size * n for size, n in self._count.items())

    def free_count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._free.values())

    def close(self) -> None:
        with self._lock:
            bufs = [b for v in self._free.values() for b in v]
            self._free.clear()
            self._count.clear()
            self._wants.clear()
            self._caps.clear()
        release_all(*[(lambda b=b: b.free()) for b in bufs])


class EventPool:
    """The events a context's proofs use, made once and recorded again and again: a proof took about
    sixteen cuEventCreate and as many cuEventDestroy calls, some microseconds each on its path (the
    destroys after its done event, before its result).  Re-recording is safe: a stream's wait on an
    event waits on the record made before that wait, whatever is recorded later.  An event given
    back twice is kept once; beyond MAX_IDLE idle events, or once the pool is closed, they are
    destroyed."""

    MAX_IDLE = 1024

    def __init__(self):
        self._lock = threading.Lock()
        self._idle: dict[bool, list[Event]] = {False: [], True: []}
        self._ids: set[int] = set()
        self._closed = False

    def take(self, timing: bool = False) -> Event:
        with self._lock:
            idle = self._idle[timing]
            if idle:
                event = idle.pop()
                self._ids.discard(id(event))
                return event
        return Event(timing=timing)

    def give(self, *events: Event | None) -> None:
        """Back to the pool, after the device is done with them (their proof's done event)."""
        for e in events:
            if e is None or e.handle is None:
                continue
            with self._lock:
                if id(e) in self._ids:
                    continue
                keep = not self._closed and len(self._idle[e.timing]) < self.MAX_IDLE
                if keep:
                    self._idle[e.timing].append(e)
                    self._ids.add(id(e))
            if not keep:
                destroy_events(e)

    def idle_count(self) -> int:
        with self._lock:
            return len(self._ids)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            events = self._idle[False] + self._idle[True]
            self._idle, self._ids = {False: [], True: []}, set()
        destroy_events(*events)


def destroy_events(*events: Event | None) -> None:
    """Destroy events, on a failure path too (a failing destroy leaks one handle, nothing more)."""
    for e in events:
        if e is not None:
            try:
                e.destroy()
            except DeviceError:
                pass


class GpuContext:
    def __init__(self, index: int | Device = 0):
        """index: the device's, or a Device already started (the CLI's, engine/backends/device_start.py),
        whose context this thread is then bound to."""
        if isinstance(index, Device):
            self.device = index
            index.make_current()
        else:
            self.device = Device(index)
        try:
            self._start()
        except BaseException:
            if not isinstance(index, Device):  # made here: its pool and context released (a caller's stays)
                try:
                    self.device.close()
                except DeviceError:  # the start's own error is the one to report
                    pass
            raise

    def _start(self) -> None:
        self._local = threading.local()
        self._local.bound = True
        self._lock = threading.Lock()
        self._compile_locks: dict[str, threading.Lock] = {}
        self._cubins: dict[str, bytes] = {}
        self._modules: dict[str, Module] = {}
        self.upload_stream = self.device.stream()
        self._compute_streams: list[Stream] = []
        self.pinned = PinnedPool(self.device)
        self.events = EventPool()

    def bind_thread(self) -> None:
        """Make the device's context current on the calling thread (once per thread)."""
        if not getattr(self._local, "bound", False):
            self.device.make_current()
            self._local.bound = True

    def compute_stream(self, slot: int = 0) -> Stream:
        with self._lock:
            while len(self._compute_streams) <= slot:
                self._compute_streams.append(self.device.stream(urgent=True))  # ahead of key tables
            return self._compute_streams[slot]

    def prepare(self, curve: Curve) -> bytes:
        """The curve's kernels as CUBIN for this device (NVRTC or the disk cache); no driver call,
        so any thread may run it."""
        with self._lock:
            cubin = self._cubins.get(curve.name)
            lock = self._compile_locks.setdefault(curve.name, threading.Lock())
        if cubin is not None:
            return cubin
        with lock:  # one compile per curve, however many threads ask
            cubin = self._cubins.get(curve.name)
            if cubin is None:
                cubin = curve_cubin(curve, self.device.arch)
                with self._lock:
                    self._cubins[curve.name] = cubin
        return cubin

    def adopt(self, curve: Curve, cubin: bytes, arch: str) -> None:
        """The curve's CUBIN found ahead by cached_curve_cubin (the CLI's, while this context started), kept
        when it was made for this device's architecture."""
        if arch == self.device.arch:
            with self._lock:
                self._cubins.setdefault(curve.name, cubin)

    def module(self, curve: Curve) -> Module:
        """The loaded module of the curve's kernels (compiled here when `prepare` did not run first)."""
        self.bind_thread()
        with self._lock:
            mod = self._modules.get(curve.name)
        if mod is not None:
            return mod
        cubin = self.prepare(curve)
        with self._lock:
            mod = self._modules.get(curve.name)
            if mod is None:
                mod = Module(cubin, curve.name)
                for name in ("ntt_dif_pass", "ntt_dit_pass", "ntt_dif_pass_m", "ntt_dit_pass_m"):
                    mod.allow_shared(name, 64 * 1024)
                self._modules[curve.name] = mod
            return mod

    def finish(self) -> None:
        """Wait for every stream's work; nothing is released (GpuBackend.close_for_exit)."""
        self.bind_thread()
        for s in [self.upload_stream, *self._compute_streams]:
            s.synchronize()

    def close(self) -> None:
        """Wait for every stream, destroy them, the events, the pinned buffers, the pool and the context: each
        even when one before it fails (the first failure raised after the last)."""
        self.bind_thread()
        streams = [self.upload_stream, *self._compute_streams]
        release_all(*[s.synchronize for s in streams], *[s.destroy for s in streams], self.events.close,
                    self.pinned.close, self.device.close)
