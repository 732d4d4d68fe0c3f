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

import threading

from cuda_kernels import build
from cuda_kernels.driver import Device, Event, Module, PinnedBuffer, Stream

from engine.algebra.curves import Curve
from engine.errors import DeviceError, KernelCompileError
from engine.backends.gpu.params import params_header

MIN_PINNED = 1 << 16


def pinned_size_class(nbytes: int) -> int:
    """Buffers come in powers of two (at least 64 KiB), so keys of similar size share them."""
    return max(MIN_PINNED, 1 << (max(int(nbytes), 1) - 1).bit_length())


def curve_cubin(curve: Curve, arch: str) -> bytes:
    """The curve's kernels as CUBIN for `arch` (the disk cache, else NVRTC); no driver call, any thread."""
    try:
        cubin, _ = build.compile_cubin(params_header(curve), arch=arch)
    except build.CompileFailed as exc:
        raise KernelCompileError(f"kernel build for {curve.name} failed: {exc}", exc.log) from exc
    return cubin


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
        self.misses = 0

    def want(self, tag: object, nbytes: int, count: int) -> None:
        with self._lock:
            size = pinned_size_class(nbytes)
            _, had = self._wants.get(tag, (size, 0))
            self._wants[tag] = (size, max(had, count))

    def unwant(self, tag: object) -> None:
        with self._lock:
            self._wants.pop(tag, None)

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
        for buf in surplus:
            buf.free()
        for size, delta in plan.items():
            for _ in range(max(delta, 0)):
                buf = PinnedBuffer(self.device, size)
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
        for buf in bufs:
            buf.free()


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
        self.finish()
        for s in [self.upload_stream, *self._compute_streams]:
            s.destroy()
        self.events.close()
        self.pinned.close()
        self.device.close()
