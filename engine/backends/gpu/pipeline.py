"""One proof on the GPU, in the scheduler's two phases (design.md §5).

Memory phase (`stage`, upload stream): allocate the proof's whole working set
from the stream-ordered pool, copy the witness into pinned memory and upload
it, record an event.  Compute phase (`compute`, a compute stream): wait on that
event, run evaluate -> 3 iNTT (coset factor fused) -> 3 NTT -> h -> H MSM ->
one sort of the witness shared by the A, B1, C (G1) and B2 (G2) MSMs, then the
proof's tail (epilogue and pairing check, engine/backends/gpu/epilogue.py: two of
its three phases on the slot's side stream, beside the stages they do not need),
copy the affine proof and the check's verdict to pinned memory, free everything
asynchronously, record the done event.  Nothing here waits on the host or touches the device as a whole.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Event, PinnedBuffer, U32, launch

from engine.backends.base import CoreResult, Pending, Staged
from engine.backends.gpu import epilogue as gepi
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import ntt as gntt
from engine.backends.gpu.key import GpuKey

FR = 32
STAGES = ("evaluate", "ntt", "msm_h", "msm_a_b1_c", "msm_b2", "check")


def acc_bytes(curve, g2: bool) -> int:
    return (8 if g2 else 4) * curve.n8q


def _layouts(key: GpuKey, sm_count: int):
    return [(key.plan_h, gmsm.AccumulateLayout.for_plan(key.plan_h, sm_count)),
            (key.plan_w, gmsm.AccumulateLayout.for_plan(key.plan_w, sm_count))]


def _result_bytes(curve, with_scratch: bool = True) -> int:
    """The five MSM sums (XYZZ slots), then the affine proof, L and the check's flag (what
    comes back), then the scratch the tail's phases share."""
    return 5 * acc_bytes(curve, True) + gepi.proof_bytes(curve) + (gepi.scratch_bytes(curve) if with_scratch else 0)


def working_set_bytes(key: GpuKey, sm_count: int) -> int:
    """Device bytes one proof allocates beyond the resident key (what the VRAM budget reserves)."""
    curve = key.curve
    n = key.domain
    shapes = _layouts(key, sm_count)
    total = key.n_wires * FR + gepi.SCALAR_BYTES + 3 * n * FR
    total += gmsm.SortScratch.nbytes([key.plan_w, key.plan_h])
    total += gmsm.BucketScratch.nbytes(shapes, acc_bytes(curve, True))
    total += _result_bytes(curve)
    return total + 64 * 20  # allocation rounding


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

    def free_device(self, stream) -> None:
        """Stream-ordered frees of every device buffer of the proof."""
        for buf in (self.witness, self.a, self.b, self.c, self.results):
            Device.free(buf, stream)
        self.sort.free(stream)
        self.buckets.free(stream)

    def release_host(self, ctx) -> None:
        """After the done event: pinned buffers back to the pool, events destroyed."""
        ctx.give_back(self.host_witness)
        ctx.give_back(self.host_results)
        self.uploaded.destroy()
        self.upload_start.destroy()


def stage(backend, key: GpuKey, witness: np.ndarray) -> Staged:
    ctx = backend.ctx
    ctx.bind_thread()
    dev, stream = ctx.device, ctx.upload_stream
    curve, n = key.curve, key.domain
    wit = np.ascontiguousarray(witness, dtype=np.uint64)
    # r, s, rs ride after the witness: one upload, and the epilogue reads them there
    up_bytes = wit.nbytes + gepi.SCALAR_BYTES
    host_w = ctx.pinned(up_bytes)
    words = host_w.view(np.uint64, wit.size + 12)
    words[:wit.size] = wit.reshape(-1)
    words[wit.size:] = gepi.blinding_scalars(curve).reshape(-1)
    host_r = ctx.pinned(_result_bytes(curve, with_scratch=False))
    shapes = _layouts(key, dev.sm_count)
    state = ProofState(
        witness=dev.alloc(up_bytes, stream),
        a=dev.alloc(n * FR, stream),
        b=dev.alloc(n * FR, stream),
        c=dev.alloc(n * FR, stream),
        sort=gmsm.SortScratch(dev, [key.plan_w, key.plan_h], stream),
        buckets=gmsm.BucketScratch(dev, shapes, acc_bytes(curve, True), stream),
        results=dev.alloc(_result_bytes(curve), stream),
        host_witness=host_w,
        host_results=host_r,
        uploaded=Event(timing=True),
        upload_start=Event(timing=True),
    )
    state.upload_start.record(stream)
    Device.upload(state.witness, host_w.view(np.uint8, up_bytes), stream)
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
    # the tail's early phase on the slot's side stream, beside evaluate, the NTTs and the MSMs
    side = backend.side_streams.get(slot)
    side.wait_event(st.uploaded)
    side.wait_event(key.ready)
    tail = gepi.tail_args(key.epilogue, key.n_wires, st.results, acc_bytes(curve, True), st.witness)
    side_marks: list[Event] = []  # early start, early end, mid start, mid end

    def side_mark():
        if timing:
            side_marks.append(Event(timing=True).record(side))

    side_mark()
    gepi.launch_early(mod, tail, side)
    side_mark()

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
    res = st.results.ptr
    gmsm.sort_scalars(mod, plan_h, st.c, st.sort, stream)
    gmsm.accumulate(mod, "g1", plan_h, lay_h, key.h, st.sort, st.buckets, g1_acc, res + 4 * g2_acc, stream)
    mark()
    gmsm.sort_scalars(mod, plan_w, st.witness, st.sort, stream)
    for i, bases in ((0, key.a), (1, key.b1), (3, key.c)):
        gmsm.accumulate(mod, "g1", plan_w, lay_w, bases, st.sort, st.buckets, g1_acc, res + i * g2_acc, stream)
    mark()
    if backend.fault_hook is not None:  # tests: corrupt a result on the device
        backend.fault_hook(st.results, g2_acc, stream, "a_b1_c_h")
    g1_done = Event().record(stream)
    side.wait_event(g1_done)  # the mid phase beside the B2 MSM
    side_mark()
    gepi.launch_mid(mod, tail, side)
    mid_done = Event(timing=timing).record(side)
    if timing:
        side_marks.append(mid_done)
    gmsm.accumulate(mod, "g2", plan_w, lay_w, key.b2, st.sort, st.buckets, g2_acc, res + 2 * g2_acc, stream)
    mark()
    if backend.fault_hook is not None:
        backend.fault_hook(st.results, g2_acc, stream, "b2")
    stream.wait_event(mid_done)
    gepi.launch_final(mod, tail, stream)
    mark()
    nbytes = _result_bytes(curve, with_scratch=False)
    Device.download(st.host_results.view(np.uint8, nbytes), st.results, stream)
    st.free_device(stream)
    done = Event().record(stream)

    def wait() -> CoreResult:
        done.synchronize()
        raw = st.host_results.view(np.uint8, nbytes)[5 * g2_acc:].copy()
        timings = dict(staged.timings)
        timings["gpu_upload"] = st.upload_start.elapsed_ms(st.uploaded) / 1000.0
        for name, (e0, e1) in zip(STAGES, zip(marks, marks[1:])):
            timings[f"gpu_{name}"] = e0.elapsed_ms(e1) / 1000.0
        if timing:  # the overlapped phases, beside the stages above (not part of their sum)
            timings["side_early"] = side_marks[0].elapsed_ms(side_marks[1]) / 1000.0
            timings["side_mid"] = side_marks[2].elapsed_ms(side_marks[3]) / 1000.0
        for e in (*marks, *side_marks):
            e.destroy()
        g1_done.destroy()
        if not timing:
            mid_done.destroy()
        done.destroy()
        st.release_host(ctx)
        proof, verified = gepi.decode_proof(curve, raw)
        return CoreResult(pi_a0=None, pi_b1_0=None, pi_b2_0=None, pi_c0=None, pi_h=None, timings=timings,
                          proof=proof, verified=verified)

    return Pending(wait)
