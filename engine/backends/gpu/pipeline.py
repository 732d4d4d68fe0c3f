"""One proof on the GPU, in the scheduler's two phases (design.md §5).

Memory phase (`stage`, upload stream): allocate the proof's whole working set
from the stream-ordered pool, copy the witness into pinned memory and upload
it, record an event.  Compute phase (`compute`, a compute stream): wait on that
event, run evaluate -> 3 iNTT (coset factor fused) -> 3 NTT -> h -> H MSM ->
one sort of the witness shared by the A, B1, C (G1) and B2 (G2) MSMs, copy the
five results to pinned memory, free everything asynchronously, record the done
event.  Nothing here waits on the host or touches the device as a whole.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Event, PinnedBuffer, U32, launch

from engine.backends.base import CoreResult, Pending, Staged
from engine.backends.gpu import footprint
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import ntt as gntt
from engine.backends.gpu.footprint import acc_bytes
from engine.backends.gpu.key import GpuKey
from engine.backends.gpu.points import decode_xyzz_g1, decode_xyzz_g2

FR = 32
STAGES = ("evaluate", "ntt", "msm_h", "msm_a_b1_c", "msm_b2")


def _layouts(key: GpuKey, sm_count: int):
    return footprint.layouts(key.plan_w, key.plan_h, sm_count)


def working_set_bytes(key: GpuKey, sm_count: int) -> int:
    """Device bytes one proof allocates beyond the resident key (what the VRAM budget reserves)."""
    if key.host is not None:
        return footprint.host_working_set(key.host.shape, key.plan_w, key.plan_h, sm_count)
    return footprint.proof_working_set(key.curve, key.n_wires, key.domain, key.plan_w, key.plan_h, sm_count)


@dataclass
class ProofState:
    witness: DeviceBuffer
    a: DeviceBuffer
    b: DeviceBuffer
    c: DeviceBuffer
    sort: gmsm.SortScratch
    buckets: gmsm.BucketScratch
    results: DeviceBuffer
    host_witness: PinnedBuffer
    host_results: PinnedBuffer
    uploaded: Event
    upload_start: Event | None = None  # timing events around the witness upload
    host: Any = None  # host-tier key: the proof's staging buffers (host_tier.HostProof)
    tier: Any = None  # host-tier key: its HostTier

    def free_device(self, stream) -> None:
        """Stream-ordered frees of every device buffer of the proof."""
        for buf in (self.witness, self.a, self.b, self.c, self.results):
            Device.free(buf, stream)
        self.sort.free(stream)
        self.buckets.free(stream)
        if self.host is not None:
            self.tier.free_device(self.host, stream)

    def release_host(self, ctx) -> None:
        """After the done event: pinned buffers back to the pool, events destroyed."""
        ctx.give_back(self.host_witness)
        ctx.give_back(self.host_results)
        self.uploaded.destroy()
        self.upload_start.destroy()
        if self.host is not None:
            self.tier.release_host(self.host)


def stage(backend, key: GpuKey, witness: np.ndarray) -> Staged:
    ctx = backend.ctx
    ctx.bind_thread()
    dev, stream = ctx.device, ctx.upload_stream
    curve, n = key.curve, key.domain
    wit = np.ascontiguousarray(witness, dtype=np.uint64)
    host_w = ctx.pinned(wit.nbytes)
    host_w.view(np.uint64, wit.size)[:] = wit.reshape(-1)
    host_r = ctx.pinned(5 * acc_bytes(curve, True))
    shapes = _layouts(key, dev.sm_count)
    state = ProofState(
        witness=dev.alloc(wit.nbytes, stream),
        a=dev.alloc(n * FR, stream),
        b=dev.alloc(n * FR, stream),
        c=dev.alloc(n * FR, stream),
        sort=gmsm.SortScratch(dev, [key.plan_w, key.plan_h], stream),
        buckets=gmsm.BucketScratch(dev, shapes, acc_bytes(curve, True), stream),
        results=dev.alloc(5 * acc_bytes(curve, True), stream),
        host_witness=host_w,
        host_results=host_r,
        uploaded=Event(timing=True),
        upload_start=Event(timing=True),
    )
    if key.host is not None:
        state.tier, state.host = key.host, key.host.stage(dev, stream)
    state.upload_start.record(stream)
    Device.upload(state.witness, host_w.view(np.uint8, wit.nbytes), stream)
    state.uploaded.record(stream)
    return Staged(key=key, witness=witness, state=state)


def discard(backend, staged: Staged) -> Pending:
    """Free a staged proof that will not be computed (its job was cancelled after the memory phase)."""
    ctx = backend.ctx
    ctx.bind_thread()
    st: ProofState = staged.state
    stream = ctx.upload_stream
    st.free_device(stream)
    done = Event().record(stream)

    def wait() -> CoreResult:
        done.synchronize()
        st.release_host(ctx)
        done.destroy()
        return CoreResult(None, None, None, None, None, {})

    return Pending(wait)


def compute(backend, staged: Staged, slot: int = 0, timing: bool = True) -> Pending:
    ctx = backend.ctx
    ctx.bind_thread()
    key: GpuKey = staged.key
    st: ProofState = staged.state
    curve, mod, n = key.curve, key.module, key.domain
    sm = ctx.device.sm_count
    stream = ctx.compute_stream(slot)
    stream.wait_event(st.uploaded)
    stream.wait_event(key.ready)
    marks = [Event(timing=timing).record(stream)] if timing else []

    def mark():
        if timing:
            marks.append(Event(timing=True).record(stream))

    (rp_a, wa, ca), (rp_b, wb, cb) = key.csr
    launch(mod, "evaluate_ab", -(-n // 256), 256, stream, rp_a, wa, ca, rp_b, wb, cb, st.witness, U32(n), st.a, st.b,
           st.c)
    mark()
    for buf in (st.a, st.b, st.c):
        gntt.dif(mod, buf, key.tables, stream, inverse=True, scale=key.tables.coset)
        gntt.dit(mod, buf, key.tables, stream, inverse=False)
    launch(mod, "quotient_h", -(-n // 256), 256, stream, st.a, st.b, st.c, U32(n), st.c)
    mark()
    g1_acc, g2_acc = acc_bytes(curve, False), acc_bytes(curve, True)
    (plan_h, lay_h), (plan_w, lay_w) = _layouts(key, sm)
    if key.host is not None:  # bases streamed from pinned host memory, chunk by chunk
        key.host.enqueue(mod, st, {"h": (plan_h, lay_h), "w": (plan_w, lay_w)}, stream, mark)
        key.host.download(st.host, stream)
    else:
        res = st.results.ptr
        gmsm.sort_scalars(mod, plan_h, st.c, st.sort, stream)
        gmsm.accumulate(mod, "g1", plan_h, lay_h, key.h, st.sort, st.buckets, g1_acc, res + 4 * g2_acc, stream)
        mark()
        gmsm.sort_scalars(mod, plan_w, st.witness, st.sort, stream)
        for i, bases in ((0, key.a), (1, key.b1), (3, key.c)):
            gmsm.accumulate(mod, "g1", plan_w, lay_w, bases, st.sort, st.buckets, g1_acc, res + i * g2_acc, stream)
        mark()
        gmsm.accumulate(mod, "g2", plan_w, lay_w, key.b2, st.sort, st.buckets, g2_acc, res + 2 * g2_acc, stream)
        mark()
        Device.download(st.host_results.view(np.uint8, 5 * g2_acc), st.results, stream)
    st.free_device(stream)
    done = Event().record(stream)

    def wait() -> CoreResult:
        done.synchronize()
        timings = dict(staged.timings)
        timings["gpu_upload"] = st.upload_start.elapsed_ms(st.uploaded) / 1000.0
        for name, (e0, e1) in zip(STAGES, zip(marks, marks[1:])):
            timings[f"gpu_{name}"] = e0.elapsed_ms(e1) / 1000.0
        for e in marks:
            e.destroy()
        done.destroy()
        if key.host is not None:
            a, b1, b2, c, h = key.host.results(st.host)
        else:
            raw = st.host_results.view(np.uint8, 5 * g2_acc).copy()
            pts = [raw[i * g2_acc:(i + 1) * g2_acc] for i in range(5)]
            a, b1, c, h = [decode_xyzz_g1(curve, p[:g1_acc]) for p in (pts[0], pts[1], pts[3], pts[4])]
            b2 = decode_xyzz_g2(curve, pts[2])
        st.release_host(ctx)
        return CoreResult(pi_a0=a, pi_b1_0=b1, pi_b2_0=b2, pi_c0=c, pi_h=h, timings=timings)

    return Pending(wait)
