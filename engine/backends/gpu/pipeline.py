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

import threading
from dataclasses import dataclass

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Event, PinnedBuffer, U32, launch

from engine.backends.base import CoreResult, Pending, Staged
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import ntt as gntt
from engine.backends.gpu.key import GpuKey
from engine.backends.gpu.points import decode_xyzz_g1, decode_xyzz_g2

FR = 32
STAGES = ("evaluate", "ntt", "msm_h", "msm_a_b1_c", "msm_b2")


def acc_bytes(curve, g2: bool) -> int:
    return (8 if g2 else 4) * curve.n8q


def _layouts(key: GpuKey, sm_count: int):
    return [(key.plan_h, gmsm.AccumulateLayout.for_plan(key.plan_h, sm_count)),
            (key.plan_w, gmsm.AccumulateLayout.for_plan(key.plan_w, sm_count))]


def working_set_bytes(key: GpuKey, sm_count: int) -> int:
    """Device bytes one proof allocates beyond the resident key (what the VRAM budget reserves)."""
    curve = key.curve
    n = key.domain
    shapes = _layouts(key, sm_count)
    total = key.n_wires * FR + 3 * n * FR
    total += gmsm.SortScratch.nbytes([key.plan_w, key.plan_h])
    total += gmsm.BucketScratch.nbytes(shapes, acc_bytes(curve, True))
    total += 5 * acc_bytes(curve, True)
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


def _front(key: GpuKey, st: ProofState, stream, mark) -> None:
    """evaluate -> 3 iNTT (coset) -> 3 NTT -> h (into st.c), on `stream`."""
    mod, n = key.module, key.domain
    (rp_a, wa, ca), (rp_b, wb, cb) = key.csr
    launch(mod, "evaluate_ab", -(-n // 256), 256, stream, rp_a, wa, ca, rp_b, wb, cb, st.witness, U32(n), st.a, st.b,
           st.c)
    mark()
    for buf in (st.a, st.b, st.c):
        gntt.dif(mod, buf, key.tables, stream, inverse=True, scale=key.tables.coset)
        gntt.dit(mod, buf, key.tables, stream, inverse=False)
    launch(mod, "quotient_h", -(-n // 256), 256, stream, st.a, st.b, st.c, U32(n), st.c)
    mark()


def _msms(key: GpuKey, plan_h, lay_h, plan_w, lay_w, h, w, sort, buckets, res: int, stride: int, stream,
          mark) -> None:
    """The H MSM over the h vectors at `h` and the A, B1, C, B2 MSMs over the witnesses at `w`
    (plan.batch vectors each, one after another): proof j's five results at res + j * stride,
    in the order A, B1, B2, C, H, each slot one G2 accumulator wide."""
    curve, mod = key.curve, key.module
    g1_acc, g2_acc = acc_bytes(curve, False), acc_bytes(curve, True)
    gmsm.run_msm(mod, "g1", plan_h, lay_h, key.h, h, sort, buckets, g1_acc, res + 4 * g2_acc, stream, stride)
    mark()
    gmsm.sort_scalars(mod, plan_w, w, sort, stream)
    for i, bases in ((0, key.a), (1, key.b1), (3, key.c)):
        gmsm.accumulate(mod, "g1", plan_w, lay_w, bases, sort, buckets, g1_acc, res + i * g2_acc, stream, stride)
    mark()
    gmsm.accumulate(mod, "g2", plan_w, lay_w, key.b2, sort, buckets, g2_acc, res + 2 * g2_acc, stream, stride)
    mark()


def _core(curve, raw: np.ndarray, timings: dict) -> CoreResult:
    g1_acc, g2_acc = acc_bytes(curve, False), acc_bytes(curve, True)
    pts = [raw[i * g2_acc:(i + 1) * g2_acc] for i in range(5)]
    g1 = [decode_xyzz_g1(curve, p[:g1_acc]) for p in (pts[0], pts[1], pts[3], pts[4])]
    return CoreResult(pi_a0=g1[0], pi_b1_0=g1[1], pi_b2_0=decode_xyzz_g2(curve, pts[2]), pi_c0=g1[2],
                      pi_h=g1[3], timings=timings)


def compute(backend, staged: Staged, slot: int = 0, timing: bool = True) -> Pending:
    ctx = backend.ctx
    ctx.bind_thread()
    key: GpuKey = staged.key
    st: ProofState = staged.state
    curve = key.curve
    sm = ctx.device.sm_count
    stream = ctx.compute_stream(slot)
    stream.wait_event(st.uploaded)
    stream.wait_event(key.ready)
    marks = [Event(timing=timing).record(stream)] if timing else []

    def mark():
        if timing:
            marks.append(Event(timing=True).record(stream))

    _front(key, st, stream, mark)
    g2_acc = acc_bytes(curve, True)
    (plan_h, lay_h), (plan_w, lay_w) = _layouts(key, sm)
    _msms(key, plan_h, lay_h, plan_w, lay_w, st.c, st.witness, st.sort, st.buckets, st.results.ptr, 5 * g2_acc,
          stream, mark)
    Device.download(st.host_results.view(np.uint8, 5 * g2_acc), st.results, stream)
    st.free_device(stream)
    done = Event().record(stream)

    def wait() -> CoreResult:
        done.synchronize()
        raw = st.host_results.view(np.uint8, 5 * g2_acc).copy()
        timings = dict(staged.timings)
        timings["gpu_upload"] = st.upload_start.elapsed_ms(st.uploaded) / 1000.0
        for name, (e0, e1) in zip(STAGES, zip(marks, marks[1:])):
            timings[f"gpu_{name}"] = e0.elapsed_ms(e1) / 1000.0
        for e in marks:
            e.destroy()
        done.destroy()
        st.release_host(ctx)
        return _core(curve, raw, timings)

    return Pending(wait)


def batch_plans(key: GpuKey, k: int):
    """The H and witness plans (and layouts) of k proofs of `key` in one MSM pass each."""
    sm_count = key.ctx.device.sm_count
    plans = []
    for plan in (key.plan_h, key.plan_w):
        p = gmsm.plan_for_batch(plan, k)
        plans.append((p, gmsm.AccumulateLayout.for_plan(p, sm_count)))
    return plans


def compute_batch(backend, staged: list[Staged], slot: int = 0) -> list[Pending]:
    """Several staged proofs of one key in one compute phase: each proof's evaluate and NTTs,
    then the H MSMs of all of them in one pass over the H bases and the four witness MSMs in
    one pass each (plan.batch = k: k bucket sets, the bases read once for all k).

    The batch's scratch is allocated before anything of the staged proofs is touched, so a
    failure there (out of memory) leaves them as staged, for the caller to discard; each
    proof's own sort and bucket scratch is then freed (stream-ordered).  The scheduler batches
    only small keys (GpuBackend.max_batch), where that extra scratch is a few MB."""
    if len(staged) == 1:
        return [compute(backend, staged[0], slot)]
    ctx = backend.ctx
    ctx.bind_thread()
    key: GpuKey = staged[0].key
    if any(s.key is not key for s in staged):
        raise ValueError("compute_batch: the staged proofs are of different keys")
    dev = ctx.device
    curve, k = key.curve, len(staged)
    stream = ctx.compute_stream(slot)
    (plan_h, lay_h), (plan_w, lay_w) = batch_plans(key, k)
    n_h, n_w = key.domain * FR, key.n_wires * FR
    g2_acc = acc_bytes(curve, True)
    shapes = [(plan_h, lay_h), (plan_w, lay_w)]
    bufs: list[DeviceBuffer] = []
    scratch: list = []
    try:
        for nbytes in (k * n_h, k * n_w, k * 5 * g2_acc):
            bufs.append(dev.alloc(nbytes, stream))
        scratch.append(gmsm.SortScratch(dev, [plan_w, plan_h], stream))
        scratch.append(gmsm.BucketScratch(dev, shapes, g2_acc, stream))
    except BaseException:
        for b in bufs:
            Device.free(b, stream)
        for x in scratch:
            x.free(stream)
        raise
    (h_all, w_all, res), (sort, buckets) = bufs, scratch
    stream.wait_event(key.ready)
    states: list[ProofState] = [s.state for s in staged]
    for st in states:
        stream.wait_event(st.uploaded)
    for st in states:
        _front(key, st, stream, lambda: None)
    for st in states:
        st.sort.free(stream)
        st.buckets.free(stream)
    for j, st in enumerate(states):
        Device.copy(h_all.ptr + j * n_h, st.c, n_h, stream)
        Device.copy(w_all.ptr + j * n_w, st.witness, n_w, stream)
    _msms(key, plan_h, lay_h, plan_w, lay_w, h_all, w_all, sort, buckets, res.ptr, 5 * g2_acc, stream, lambda: None)
    host = ctx.pinned(k * 5 * g2_acc)
    Device.download(host.view(np.uint8, k * 5 * g2_acc), res, stream)
    for buf in (h_all, w_all, res):
        Device.free(buf, stream)
    sort.free(stream)
    buckets.free(stream)
    for st in states:
        for buf in (st.witness, st.a, st.b, st.c, st.results):
            Device.free(buf, stream)
    done = Event().record(stream)
    results: list[CoreResult] = []
    lock = threading.Lock()

    def wait_all() -> list[CoreResult]:
        with lock:
            if results:
                return results
            done.synchronize()
            raw = host.view(np.uint8, k * 5 * g2_acc).copy()
            ctx.give_back(host)
            done.destroy()
            for j, (s, st) in enumerate(zip(staged, states)):
                timings = dict(s.timings)
                timings["gpu_upload"] = st.upload_start.elapsed_ms(st.uploaded) / 1000.0
                timings["gpu_batch"] = k
                st.release_host(ctx)
                results.append(_core(curve, raw[j * 5 * g2_acc:(j + 1) * 5 * g2_acc], timings))
            return results

    return [Pending(lambda j=j: wait_all()[j]) for j in range(k)]
