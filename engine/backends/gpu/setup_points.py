"""Development-key setup on the GPU: the fixed-base scalar multiplications k_i * G.

The table of byte multiples d * 2^(8w) * G (32 x 256 points) is built once per
curve and group on the host, uploaded, and then each scalar costs at most 32
mixed additions and one inversion on the device.  Scalars go up and points
come back in chunks, so memory stays bounded at any key size.
"""
from __future__ import annotations

import numpy as np

from cuda_kernels.driver import Device, U32, launch

from engine.algebra import ec
from engine.algebra.curves import Curve
from engine.algebra.limbs import g1_to_mont, g2_to_mont
from engine.groth16.setup_points import SetupOps
from engine.formats.binfile import first_row_ge
from engine.backends.gpu.backend import GpuBackend

CHUNK = 1 << 22  # scalars per launch


def byte_table(curve: Curve, g2: bool) -> np.ndarray:
    """d * 2^(8w) * G for w < 32, d < 256 (d = 0: infinity), Montgomery affine, row w*256 + d."""
    add = ec.g2_add if g2 else ec.g1_add
    base = curve.g2_gen if g2 else curve.g1_gen
    rows = []
    for _ in range(32):
        acc = None
        for _d in range(256):
            rows.append(acc)
            acc = add(curve, acc, base)
        base = acc  # 256 * base = the next byte position's generator multiple
    return (g2_to_mont if g2 else g1_to_mont)(curve, rows)


class GpuSetupOps(SetupOps):
    name = "gpu"

    def __init__(self, device: int = 0, backend: GpuBackend | None = None):
        self._own = backend is None
        self._device = device
        self._backend = backend
        self._tables: dict[tuple[str, bool], object] = {}

    @property
    def backend(self) -> GpuBackend:
        # CUDA starts on first use, after the CPU field work: that work forks worker
        # processes, and a process must not fork once CUDA is initialised.
        if self._backend is None:
            self._backend = GpuBackend(self._device)
        return self._backend

    def _table(self, curve: Curve, g2: bool):
        key = (curve.name, g2)
        if key not in self._tables:
            host = byte_table(curve, g2)
            stream = self.backend.ctx.upload_stream
            buf = self.backend.device.alloc(host.nbytes, stream)
            Device.upload(buf, host, stream)
            stream.synchronize()
            self._tables[key] = buf
        return self._tables[key]

    def _fixed_base(self, curve: Curve, scalars: np.ndarray, g2: bool) -> np.ndarray:
        scalars = np.ascontiguousarray(scalars, dtype=np.uint64)
        bad = first_row_ge(scalars, curve.r)
        if bad >= 0:
            raise ValueError(f"fixed-base: scalar {bad} is not reduced modulo r")
        self.backend.bind_thread()
        n = scalars.shape[0]
        lq = curve.q_limbs64
        shape = (n, 2, 2, lq) if g2 else (n, 2, lq)
        out = np.empty(shape, dtype=np.uint64)
        if n == 0:
            return out
        table = self._table(curve, g2)
        mod = self.backend.ctx.module(curve)
        dev, stream = self.backend.device, self.backend.ctx.compute_stream(0)
        point_bytes = out[:1].nbytes
        chunk = min(CHUNK, n)
        sc = dev.alloc(chunk * 32, stream)
        pts = dev.alloc(chunk * point_bytes, stream)
        name = "fixed_base_g2" if g2 else "fixed_base_g1"
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            Device.upload(sc, scalars[start:start + m], stream)
            launch(mod, name, -(-m // 128), 128, stream, table, sc, U32(m), pts)
            Device.download(out[start:start + m], pts, stream)
            stream.synchronize()  # the host buffers of this chunk are reused by the next
        Device.free(sc, stream)
        Device.free(pts, stream)
        return out

    def g1_fixed_base(self, curve: Curve, scalars: np.ndarray) -> np.ndarray:
        return self._fixed_base(curve, scalars, False)

    def g2_fixed_base(self, curve: Curve, scalars: np.ndarray) -> np.ndarray:
        return self._fixed_base(curve, scalars, True)

    def close(self) -> None:
        if self._tables:
            self.backend.bind_thread()
            for buf in self._tables.values():
                Device.free(buf, self.backend.ctx.upload_stream)
            self._tables.clear()
        if self._own and self._backend is not None:
            self._backend.close()
            self._backend = None
