"""A proving key resident on one GPU: points (with their window tables), coeffs, NTT tables.

Uploaded once by `GpuBackend.load_key` and reused by every later proof of
the circuit; a proof then moves only its witness over PCIe.  The C points are
padded with the point at infinity for wires 0..nPublic so that the A, B1, B2
and C MSMs all take the same scalars (the whole witness) and share one sort.
"""
from __future__ import annotations

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Event

from engine.backends.base import ResidentKey
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu.footprint import KeyFootprint
from engine.backends.gpu.host_tier import HostTier
from engine.backends.gpu.ntt import build_tables


def csr_from_coeffs(coeffs: np.ndarray, matrix: int, domain: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row_ptr u32 (domain+1), wires u32, values (nnz, 4) u64) for one matrix of the coeffs section.

    Entries hitting the same cell stay separate terms; the kernel's sum adds them, as snarkjs does."""
    sel = coeffs["matrix"] == matrix
    rows = coeffs["row"][sel]
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    row_ptr = np.searchsorted(rows, np.arange(domain + 1, dtype=np.int64), side="left").astype(np.uint32)
    wires = np.ascontiguousarray(coeffs["wire"][sel][order], dtype=np.uint32)
    values = np.ascontiguousarray(coeffs["value"][sel][order], dtype=np.uint64)
    return row_ptr, wires, values


class GpuKey(ResidentKey):
    """`footprint` (footprint.plan_key, chosen from the VRAM budget) fixes the tier and the MSM plans:
    resident keys hold their points and shifted copies here, host-tier keys a `HostTier` of pinned bases."""

    def __init__(self, backend, zkey, footprint: KeyFootprint):
        super().__init__(zkey)
        ctx = backend.ctx
        ctx.bind_thread()
        self.ctx = ctx
        dev, stream = ctx.device, ctx.upload_stream
        curve = zkey.curve
        self.module = mod = ctx.module(curve)
        self.n_wires, self.domain, self.k = zkey.n_vars, zkey.domain_size, zkey.log_domain
        self.footprint = footprint
        self.plan_w, self.plan_h = footprint.plan_w, footprint.plan_h
        self.host: HostTier | None = None
        self.buffers: list[DeviceBuffer] = []
        self.tables = build_tables(dev, mod, curve, self.k, stream, coset=True)
        # sparse A and B in CSR
        self.csr = []
        for matrix in (0, 1):
            arrays = csr_from_coeffs(zkey.coeffs, matrix, self.domain)
            bufs = [self._upload(a) for a in arrays]
            self.csr.append(bufs)
        # points, each with its window tables
        lq = curve.q_limbs64
        c_padded = np.concatenate([np.zeros((zkey.n_public + 1, 2, lq), dtype=np.uint64), np.asarray(zkey.c)])
        if footprint.tier == "host":
            self.host = HostTier(ctx, zkey, c_padded, footprint)
            self.a = self.b1 = self.c = self.b2 = self.h = None
        else:
            self.a = self._points(zkey.a, self.plan_w, "g1")
            self.b1 = self._points(zkey.b1, self.plan_w, "g1")
            self.c = self._points(c_padded, self.plan_w, "g1")
            self.b2 = self._points(zkey.b2, self.plan_w, "g2")
            self.h = self._points(zkey.h, self.plan_h, "g1")
        self.ready = Event().record(stream)
        self.nbytes = sum(b.nbytes for b in self.buffers) + self.tables.nbytes

    def _upload(self, host: np.ndarray, reserve: int | None = None) -> DeviceBuffer:
        dev, stream = self.ctx.device, self.ctx.upload_stream
        host = np.ascontiguousarray(host)
        buf = dev.alloc(max(reserve or 0, host.nbytes), stream)
        if host.nbytes:
            Device.upload(buf, host, stream)
        self.buffers.append(buf)
        return buf

    def _points(self, host: np.ndarray, plan: gmsm.MsmPlan, group: str) -> DeviceBuffer:
        host = np.ascontiguousarray(host)
        buf = self._upload(host, reserve=plan.fold * host.nbytes)
        gmsm.precompute(self.module, group, plan, buf, self.ctx.upload_stream)
        return buf

    def close(self) -> None:
        if self.buffers:
            self.ctx.bind_thread()
            stream = self.ctx.upload_stream
            self.tables.free(stream)
            for b in self.buffers:
                Device.free(b, stream)
            self.buffers = []
        if self.host is not None:
            self.host.close()
            self.host = None
