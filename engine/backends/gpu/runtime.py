"""Per-device state of the GPU backend: the device, its compiled modules and its streams.

Driver calls may come from several threads (the scheduler's device worker and
waiter threads); each binds the context once (`bind_thread`).  Modules are
compiled by NVRTC for the device's own architecture on first use per curve,
then served from the on-disk cache.
"""
from __future__ import annotations

import threading

from cuda_kernels import build
from cuda_kernels.driver import Device, Module, PinnedBuffer, Stream

from engine.algebra.curves import Curve
from engine.errors import KernelCompileError
from engine.backends.gpu.params import params_header


class GpuContext:
    def __init__(self, index: int = 0):
        self.device = Device(index)
        self._local = threading.local()
        self._local.bound = True
        self._lock = threading.Lock()
        self._modules: dict[str, Module] = {}
        self.upload_stream = self.device.stream()
        self._compute_streams: list[Stream] = []
        self._pinned: list[PinnedBuffer] = []

    def bind_thread(self) -> None:
        """Make the device's context current on the calling thread (once per thread)."""
        if not getattr(self._local, "bound", False):
            self.device.make_current()
            self._local.bound = True

    def compute_stream(self, slot: int = 0) -> Stream:
        with self._lock:
            while len(self._compute_streams) <= slot:
                self._compute_streams.append(self.device.stream())
            return self._compute_streams[slot]

    def module(self, curve: Curve) -> Module:
        self.bind_thread()
        with self._lock:
            mod = self._modules.get(curve.name)
            if mod is None:
                try:
                    cubin, _ = build.compile_cubin(params_header(curve), arch=self.device.arch)
                except build.CompileFailed as exc:
                    raise KernelCompileError(f"kernel build for {curve.name} failed: {exc}", exc.log) from exc
                mod = Module(cubin)
                for name in ("ntt_dif_pass", "ntt_dit_pass"):
                    mod.allow_shared(name, 64 * 1024)
                self._modules[curve.name] = mod
            return mod

    def pinned(self, nbytes: int) -> PinnedBuffer:
        """A pinned host buffer of at least nbytes, taken from (and later returned to) a pool."""
        with self._lock:
            best = None
            for buf in self._pinned:
                if buf.nbytes >= nbytes and (best is None or buf.nbytes < best.nbytes):
                    best = buf
            if best is not None:
                self._pinned.remove(best)
                return best
        self.bind_thread()
        return PinnedBuffer(max(nbytes, 1 << 16))

    def give_back(self, buf: PinnedBuffer) -> None:
        with self._lock:
            self._pinned.append(buf)

    def close(self) -> None:
        self.bind_thread()
        for s in [self.upload_stream, *self._compute_streams]:
            s.synchronize()
            s.destroy()
        for buf in self._pinned:
            buf.free()
        self._pinned.clear()
        self.device.close()
