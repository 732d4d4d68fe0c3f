"""One proof on the GPU, in the scheduler's two phases (design.md §5).

Memory phase (`stage`, upload stream): allocate the proof's whole working set
from the stream-ordered pool, copy the witness into a pinned buffer taken from
the context's pool (never pinned here: pinning is device-global) and upload
it, record an event.  Compute phase (`compute`, a compute stream): wait on that
event, run evaluate -> 3 iNTT (coset factor fused) -> 3 NTT -> h -> H MSM ->
one sort of the witness shared by the A, B1, C (G1) and B2 (G2) MSMs (a small plan's B2
runs from the start on a second side stream, on a sort and buckets of its own, beside the
front and the G1 MSMs: proof_streams.b2_beside), then, for a resident key, the proof's tail
(epilogue and pairing check, engine/backends/gpu/epilogue.py:
two of its three phases on the slot's side stream, beside the stages they do not
need); copy what comes back (the affine proof and the check's verdict, with the MSM
sums) to pinned memory, free everything asynchronously, record the done event.
Nothing here waits on the host or touches the device as a whole.

A host-tier key's MSM sums are complete only on the host (one result per MSM per
chunk, summed there): its proofs run no tail, upload no r, s and allocate no tail
scratch; their CoreResult carries the sums only (`proof` None) and the prover ends
them on the CPU, as the CPU backend's.

Failure paths free everything: a failing `stage` frees what it allocated on
its stream and waits for those frees before raising; a failing `compute`
frees on the stream and its Pending raises after the done event, so the
scheduler returns the VRAM budget only when the memory is really free.

engine/backends/gpu/launch.py queues a proof's kernels on its streams;
engine/backends/gpu/batch.py runs several staged proofs of one key as one compute
phase on the helpers here and there.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Event, U32, launch

from engine.algebra.ec import g1_mul
from engine.algebra.limbs import to_ints
from engine.backends.base import CoreResult, Pending, Staged
from engine.errors import DeviceError, UnreducedWitnessError
from engine.formats.binfile import first_row_ge
from engine.formats.rows import copy_rows
from engine.backends.gpu import epilogue as gepi
from engine.backends.gpu import footprint
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import proof_streams
from engine.backends.gpu.footprint import acc_bytes
from engine.backends.gpu.launch import STAGES, _launch_proof, _track
from engine.backends.gpu.key import GpuKey, ProofPlans
from engine.backends.gpu.points import decode_xyzz_g1, decode_xyzz_g2
from engine.backends.gpu.proof_state import ProductsRegion, ProductsScratch, ProofState
from engine.backends.gpu.runtime import destroy_events as _destroy
from engine.backends.gpu.waiting import await_awake

FR = 32




def _scratch_shapes(key: GpuKey, sm_count: int):
    """The sort's plans and the buckets' shapes of a proof of `key`: every plan it may run under
    (the fold-1 plans too while the key's tables may still be building: chosen at compute)."""
    return footprint.scratch_shapes(key.footprint.all_plans(), sm_count)


class _Arena:
    """A proof's buffers carved, in order, from one stream-ordered allocation.  The memory phase made
    about twenty pool allocations and the compute phase as many frees, each some microseconds of host
    time on the proof's path; now one of each.  A request beyond the size it was made for gets a pool
    allocation of its own (recorded like any other, so a failure path frees it)."""

    def __init__(self, dev, nbytes: int, stream):
        self.dev, self.size, self.off = dev, nbytes, 0
        self.base = dev.alloc(nbytes, stream) if nbytes else None

    def alloc(self, nbytes: int, stream) -> DeviceBuffer:
        n = max(int(nbytes), 16)
        if self.base is None or self.off + n > self.size:
            return self.dev.alloc(n, stream)
        buf = DeviceBuffer(self.base.ptr + self.off, n)
        self.off += -(-n // footprint.ALLOC_ALIGN) * footprint.ALLOC_ALIGN
        return buf


class _Region:
    """Buffers carved, in order, from one DeviceBuffer sized for them by a _Sizer run of the same carving."""

    def __init__(self, buffer: DeviceBuffer):
        self.buffer, self.off = buffer, 0

    def alloc(self, nbytes: int, stream) -> DeviceBuffer:
        n = max(int(nbytes), 16)
        if self.off + n > self.buffer.nbytes:
            raise RuntimeError(f"carving {n} bytes past a region of {self.buffer.nbytes} (at {self.off})")
        buf = DeviceBuffer(self.buffer.ptr + self.off, n)
        self.off += -(-n // footprint.ALLOC_ALIGN) * footprint.ALLOC_ALIGN
        return buf


class _Sizer:
    """Stands in for the device in a dry run of a proof's allocations: the arena's size."""

    def __init__(self):
        self.total = 0

    def alloc(self, nbytes: int, stream) -> DeviceBuffer:
        n = max(int(nbytes), 16)
        self.total += -(-n // footprint.ALLOC_ALIGN) * footprint.ALLOC_ALIGN
        return DeviceBuffer(0, n)


@dataclass
class _ProofLayout:
    """What every proof of a key allocates, worked out once per key (the Python of the plans' scratch
    sizes was 0.2-0.3 ms a proof): the sort's plans, the buckets' shapes and sizes, the arena's bytes."""

    sort_plans: list
    shapes: list
    bucket_sizes: tuple
    arena_bytes: int
    b2_beside: bool = False  # a second sort and bucket scratch for the B2 MSM on its own stream
    products: bool = False  # s w, r w and three more scratch copies (proof_streams.products_beside)
    products_bytes: int = 0  # their region (ProductsRegion), carved when the products run


def _allocate(dev, key: GpuKey, layout: _ProofLayout, up_bytes: int, stream, witness=None) -> tuple:
    """witness (unless given: carved first), a, b, c, sort scratch, bucket scratch, then (None, or when B2
    runs beside the rest) B2's own sort and bucket scratch, then (None, or with the products beside) their
    ProductsRegion, from `dev` (an _Arena, or a _Sizer), in that order."""
    n = key.domain
    witness = dev.alloc(up_bytes, stream) if witness is None else witness
    a, b, c = (dev.alloc(n * FR, stream) for _ in range(3))

    sort, buckets = _scratch(dev, key, layout, stream)
    b2 = _scratch(dev, key, layout, stream) if layout.b2_beside else None
    products = None
    if layout.products:  # reserved now, carved when the products run
        products = ProductsRegion(dev.alloc(layout.products_bytes, stream),
                                  lambda buffer: _carve_products(_Region(buffer), key, layout))
    return witness, a, b, c, sort, buckets, b2, products


def _scratch(dev, key: GpuKey, layout: _ProofLayout, stream) -> tuple:
    """One sort and bucket scratch for every plan a proof of `key` may run under."""
    return (gmsm.SortScratch(dev, layout.sort_plans, stream, binned=key.footprint.sort_bins),
            gmsm.BucketScratch(dev, layout.shapes, acc_bytes(key.curve, True), stream, sizes=layout.bucket_sizes))


def _carve_products(dev, key: GpuKey, layout: _ProofLayout) -> ProductsScratch:
    """s w, r w (2 n_wires scalars), then the s w MSM's, the r w MSM's and the H lane's scratch."""
    scaled = dev.alloc(2 * key.n_wires * FR, None)
    return ProductsScratch(scaled, _scratch(dev, key, layout, None), _scratch(dev, key, layout, None),
                           _scratch(dev, key, layout, None))


def _layout(key: GpuKey, sm_count: int, up_bytes: int) -> _ProofLayout:
    cache = key.proof_layouts
    got = cache.get((sm_count, up_bytes))
    if got is None:
        sort_plans, shapes = _scratch_shapes(key, sm_count)
        got = _ProofLayout(sort_plans, shapes, gmsm.BucketScratch.sizes(shapes), 0,
                           b2_beside=has_tail(key) and proof_streams.b2_beside(key.plan_w, key.footprint.b2_stream),
                           products=has_tail(key) and proof_streams.products_beside(key.plan_w, key.domain))
        if got.products:
            region = _Sizer()
            _carve_products(region, key, got)
            got.products_bytes = region.total
        sizer = _Sizer()
        _allocate(sizer, key, got, up_bytes, None)
        got.arena_bytes = sizer.total
        cache[(sm_count, up_bytes)] = got
    return got


def working_set_bytes(key: GpuKey, sm_count: int) -> int:
    """Device bytes one proof allocates beyond the resident key (what the VRAM budget reserves)."""
    if key.host is not None:
        return footprint.host_working_set(key.host.shape, key.plan_w, key.plan_h, sm_count)
    fp = key.footprint
    early = (fp.early_w, fp.early_h) if fp.early_w is not None else None
    return footprint.proof_working_set(key.curve, key.n_wires, key.domain, key.plan_w, key.plan_h, sm_count,
                                       tail=has_tail(key), early=early, bins=fp.sort_bins, b2_stream=fp.b2_stream)


def has_tail(key: GpuKey) -> bool:
    """Whether proofs of `key` end on the device (epilogue and pairing check): resident keys."""
    return key.epilogue is not None


def result_bytes(key: GpuKey) -> int:
    """What one proof downloads: the five MSM sums then the tail's affine proof and verdict, or
    one result per MSM per chunk on the host tier."""
    if key.host is not None:
        return key.host.slots * acc_bytes(key.curve, True)
    return 5 * acc_bytes(key.curve, True) + (gepi.proof_bytes(key.curve) if has_tail(key) else 0)


def results_alloc_bytes(key: GpuKey) -> int:
    """The proof's results buffer on the device: what comes back, then the tail's scratch."""
    return result_bytes(key) + (gepi.scratch_bytes(key.curve) if has_tail(key) else 0)


def upload_bytes(key: GpuKey) -> int:
    """What one proof uploads: its witness, then r, s, rs when the tail runs on the device."""
    return key.n_wires * FR + (gepi.SCALAR_BYTES if has_tail(key) else 0)


RESULT_ALIGN = 256


def _results_offset(witness_bytes: int) -> int:
    """Where the five results sit in a proof's pinned buffer (after the witness)."""
    return -(-witness_bytes // RESULT_ALIGN) * RESULT_ALIGN


RANGE_BYTES = footprint.RANGE_CHECK_BYTES  # the device's range check's answer, after the results


def _range_offset(results_offset: int, key: GpuKey) -> int:
    return results_offset + -(-result_bytes(key) // RANGE_BYTES) * RANGE_BYTES


def pinned_bytes(key: GpuKey) -> int:
    """The pinned host buffer one proof of `key` uses: its witness (and r, s, rs), then what comes
    back, then the range check's answer."""
    return _range_offset(_results_offset(upload_bytes(key)), key) + RANGE_BYTES


def _free_all(bufs: list[DeviceBuffer], stream) -> list[DeviceBuffer]:
    """Stream-ordered frees of every live buffer; returns those whose free failed (retried later)."""
    failed = []
    for buf in bufs:
        if buf.ptr:
            try:
                Device.free(buf, stream)
            except DeviceError:
                failed.append(buf)
    return failed


def _fence(stream) -> Event | None:
    """An event recorded after everything queued on `stream`; None when that failed."""
    event = None
    try:
        event = Event()
        return event.record(stream)
    except DeviceError:
        _destroy(event)
        return None


def _wait_fence(fence: Event | None, stream) -> None:
    """Wait for the fence (or for the stream when there is none, or the event wait fails)."""
    if fence is not None:
        try:
            fence.synchronize()
            return
        except DeviceError:
            pass
        finally:
            _destroy(fence)
    stream.synchronize()


def _await_frees(fence: Event | None, failed: list[DeviceBuffer], stream) -> None:
    """Wait until the device has done the frees queued before `fence`; retry the ones that failed
    (the stream is idle then) and wait for those too."""
    _wait_fence(fence, stream)
    if failed and _free_all(failed, stream):
        _wait_fence(_fence(stream), stream)


def _settle(stream, bufs: list[DeviceBuffer]) -> None:
    """A failure path's end: free what is live, on the stream, and return only once the device is
    done with it (so the VRAM budget the caller returns next is really free)."""
    failed = _free_all(bufs, stream)
    _await_frees(_fence(stream), failed, stream)


def _fetch_late(ctx, buf: DeviceBuffer, nbytes: int, fetch: bool = True) -> np.ndarray | None:
    """A result that has no pinned buffer, fetched after its done event by the waiting thread, then
    freed (returns once the free has run).  A pageable download returns only when its stream is
    idle: issued in the compute phase it held the device thread until the proof's kernels ended,
    so no other proof could stage beside it (perf/RESULTS.md: throughput at 2^14, every memory phase
    ~14 ms at 8-32 proofs in flight against 0.55 ms alone).  On the upload stream, where only
    allocations and uploads queue, it waits for little."""
    raw = np.empty(nbytes, dtype=np.uint8) if fetch else None
    try:
        if raw is not None:
            Device.download(raw, buf, ctx.upload_stream)
    finally:
        _settle(ctx.upload_stream, [buf])
    return raw


def stage(backend, key: GpuKey, witness: np.ndarray) -> Staged:
    """The memory phase.  On any failure everything it allocated is freed, the device is done with
    it, and the pinned buffer is back in the pool before the error propagates."""
    ctx = backend.ctx
    ctx.bind_thread()
    dev, stream = ctx.device, ctx.upload_stream
    curve = key.curve
    wit = np.ascontiguousarray(witness, dtype=np.uint64)
    # r, s, rs ride after the witness (device tail only): one upload, and the tail's phases read them there
    scalars = gepi.blinding_scalars(curve).reshape(-1) if has_tail(key) else np.zeros(0, np.uint64)
    up_bytes = wit.nbytes + scalars.nbytes
    results_offset = _results_offset(up_bytes)
    range_offset = _range_offset(results_offset, key)
    host = ctx.pinned.take(range_offset + RANGE_BYTES, tag=key)
    events: list[Event] = []  # from the context's pool
    streaming: list[Event] = []  # a host-tier proof's own (HostTier.stage)
    with Device.recording() as allocated:
        try:
            if host is None:  # pageable (no pinned buffer free): no answer to fetch early, so the range is checked here
                bad = first_row_ge(wit, curve.r)
                if bad >= 0:
                    raise UnreducedWitnessError(bad)
            else:
                words = host.view(np.uint64, wit.size + scalars.size)
                copy_rows(words[:wit.size].reshape(wit.shape), wit)  # in parts on threads when large
                words[wit.size:] = scalars
            # the witness goes up first and the rest of the working set is carved behind it (the device copies
            # while the host does that); sending the witness in parts behind its copy gained nothing at 2^16
            # (perf/RESULTS.md: the copy paces the upload either way) and is not done
            found = dev.alloc(RANGE_BYTES, stream) if host is not None else None
            layout = _layout(key, dev.sm_count, up_bytes)
            arena = _Arena(dev, layout.arena_bytes, stream)
            witness_buf = arena.alloc(up_bytes, stream)
            uploaded = _track(events, ctx.events.take(True))
            upload_start = _track(events, ctx.events.take(True)).record(stream)
            # from pinned memory the copy is asynchronous; from pageable memory (no pinned buffer was free)
            # the driver stages it and returns once it holds the bytes: slower, correct
            up = host.view(np.uint8, up_bytes) if host is not None else (
                np.concatenate([wit.reshape(-1), scalars]) if scalars.size else wit)
            Device.upload(witness_buf, up, stream)
            if found is not None:  # the range check: a few microseconds of kernel, one word back
                Device.memset32(found, 0, RANGE_BYTES // 4, stream)
                launch(key.module, "witness_range_check", -(-key.n_wires // 256), 256, stream, witness_buf,
                       U32(key.n_wires), found)
                Device.download(host.array[range_offset:range_offset + RANGE_BYTES], found, stream)
            _, a, b, c, sort, buckets, b2_scratch, products = _allocate(arena, key, layout, up_bytes, stream,
                                                                        witness=witness_buf)
            state = ProofState(
                witness=witness_buf,
                a=a,
                b=b,
                c=c,
                sort=sort,
                buckets=buckets,
                results=dev.alloc(results_alloc_bytes(key), stream),
                device_buffers=allocated,
                host=host,
                results_offset=results_offset,
                range_offset=range_offset if host is not None else None,
                uploaded=uploaded,
                upload_start=upload_start,
                b2_scratch=b2_scratch,
                products=products,
                blinding_r=int(to_ints(scalars[:4])[0]) if scalars.size else 0,
            )
            if key.host is not None:  # staging buffers for the streamed bases (in `allocated` too)
                state.streaming = key.host.stage(dev, stream, front=(a, b))
                streaming = state.streaming.events
            state.uploaded.record(stream)
        except BaseException:
            try:
                _settle(stream, allocated)
            finally:
                ctx.pinned.give_back(host)
                ctx.events.give(*events)  # the context's pool's
                _destroy(*streaming)  # a host-tier proof's own
            raise
    return Staged(key=key, witness=witness, state=state)




def discard(backend, staged: Staged) -> Pending:
    """Free a staged proof that will not be computed (its job was cancelled after the memory phase)."""
    ctx = backend.ctx
    ctx.bind_thread()
    st: ProofState = staged.state
    stream = ctx.upload_stream  # where the upload ran: the frees come after it
    failed = _free_all(st.device_buffers, stream)
    done = _fence(stream)

    def wait() -> CoreResult:
        try:
            _await_frees(done, failed, stream)
        finally:
            st.release_host(ctx)
        return CoreResult(None, None, None, None, None, {})

    return Pending(wait)


def compute(backend, staged: Staged, slot: int = 0, timing: bool = True) -> Pending:
    """The compute phase.  It never raises: a failure midway (a launch, an event) still frees every
    buffer on the stream (after whatever reached the side stream), and the Pending raises the error
    only after the device is done with them, so the VRAM budget comes back after the done event on
    the failure path too (rule 4)."""
    ctx = backend.ctx
    ctx.bind_thread()
    key: GpuKey = staged.key
    st: ProofState = staged.state
    curve = key.curve
    tail = has_tail(key)
    stream = side = side2 = lanes = None  # made at a slot's first proof: a failure there is this proof's error
    marks: list[Event] = []
    side_marks: list[Event] = []  # early start, early end, mid start, mid end
    beside: dict[str, list[Event]] = {}  # a small proof's phases beside the compute stream: "b2", "front"
    side_events: list[Event] = []  # the cross-stream events (back to the pool after the done event)
    nbytes = result_bytes(key)  # what comes back
    raw = st.results_view(nbytes)
    late = st.results if raw is None else None  # no pinned buffer: fetched by wait() (_fetch_late)
    error: BaseException | None = None
    ordered = False  # the compute stream waits on the upload: frees may go on it
    plans: ProofPlans | None = None
    stages = STAGES if tail else STAGES[:-1]  # the timed stages, in the order _launch_proof ran them
    try:
        stream = ctx.compute_stream(slot)
        side = backend.side_streams.get(slot) if tail else None
        side2 = backend.side_streams.get(slot, 1) if tail and st.b2_scratch is not None else None  # B2 beside
        # the products beside (proof_streams.products_beside) on lanes 2-4: the s w and r w MSMs, the front and H,
        # when this proof is alone on its backend, none other staged or in flight (proof_streams.products_now); not
        # for r = 0 (B1's slot then could not give back the B1 sum that ResidentCore reports)
        lanes = (tuple(backend.side_streams.get(slot, i) for i in (2, 3, 4))
                 if side2 is not None and st.products is not None and st.blinding_r != 0
                 and proof_streams.products_now(backend.flight.idle()) else None)
        stream.wait_event(st.uploaded)
        ordered = True
        plans = key.plans_now()  # fixed for this proof: fold 1 while the key's tables still build
        key.wait(plans, stream)
        stages = _launch_proof(backend, key, st, plans, stream, side, marks, side_marks, side_events, timing, side2,
                               beside, lanes)
        if late is None:
            Device.download(raw, st.results, stream)
    except Exception as exc:  # handed to the Pending: raised after the done event
        error = exc
        if ordered:  # whatever reached the side streams finishes before the frees
            for s in (side, side2, *(lanes or ())):
                if s is not None:
                    _join_side(stream, s, side_events, ctx.events)
    free_on = stream if ordered else ctx.upload_stream
    failed = _free_all([b for b in st.device_buffers if b is not late], free_on)
    done = _fence(free_on)

    def wait() -> CoreResult:
        nonlocal raw
        try:
            try:
                if error is None and backend.flight.lone():  # waiting.py: awake for the end
                    await_awake(st.before_final, done, backend.wait_spin_s)
                _await_frees(done, failed, free_on)
            finally:
                if late is not None:  # the kernels are done (or failed): fetch it, or only free it
                    raw = _fetch_late(ctx, late, nbytes, fetch=error is None)
            if error is not None:
                raise error
            bad = st.unreduced_row()
            if bad is not None:
                raise UnreducedWitnessError(bad)
            out = raw.copy()
            timings = dict(staged.timings)
            timings["gpu_upload"] = st.upload_start.elapsed_ms(st.uploaded) / 1000.0
            timings["gpu_fold"] = plans.w.fold
            for name, (e0, e1) in zip(stages, zip(marks, marks[1:])):
                timings[f"gpu_{name}"] = e0.elapsed_ms(e1) / 1000.0
            if len(side_marks) == 4:  # the overlapped phases, beside the stages above (not in their sum)
                timings["side_early"] = side_marks[0].elapsed_ms(side_marks[1]) / 1000.0
                timings["side_mid"] = side_marks[2].elapsed_ms(side_marks[3]) / 1000.0
            for name, ev in beside.items():  # B2, the front beside the rest: their own times (gpu_msm_b2,
                if len(ev) >= 2:  # gpu_front are then the compute stream's waits for them)
                    timings[f"side_{name}"] = ev[0].elapsed_ms(ev[-1]) / 1000.0
        finally:
            ctx.events.give(*marks, *side_marks, *[e for ev in beside.values() for e in ev], *side_events)
            st.release_host(ctx)
        if key.host is not None:  # one result per MSM per chunk: their sums (the CPU ends this proof)
            a, b1, b2, c, h = key.host.results(out)
            return CoreResult(pi_a0=a, pi_b1_0=b1, pi_b2_0=b2, pi_c0=c, pi_h=h, timings=timings)
        return _core(curve, out, timings, st.blinding_r if st.b1_times_r else None)

    return Pending(wait)


def _join_side(stream, side, side_events: list[Event], pool=None) -> None:
    """On a failure path: `stream` waits for everything queued on `side` (the frees come after)."""
    try:
        stream.wait_event(_track(side_events, pool.take() if pool is not None else Event()).record(side))
    except DeviceError:
        side.synchronize()


class ResidentCore(CoreResult):
    """A resident key's CoreResult: the device tail's affine proof and verdict, decoded at once, and the
    five MSM sums (tests compare them with the CPU reference) decoded from the same bytes only when
    read: their field inversions were 0.2-0.3 ms of Python after every proof's done event, on its
    latency path, for values nothing on that path reads."""

    def __init__(self, curve=None, raw: np.ndarray | None = None, timings: dict | None = None, *, pi_a0=None,
                 pi_b1_0=None, pi_b2_0=None, pi_c0=None, pi_h=None, proof=None, verified=None, b1_times=None):
        self.timings = {} if timings is None else timings
        self._curve, self._raw, self._sums = curve, raw, None
        self._b1_times = b1_times  # B1's slot holds b1_times * B1 (the products beside: launch.py)
        if raw is None:  # every field given, as dataclasses.replace(core, ...) makes a copy
            self._sums = (pi_a0, pi_b1_0, pi_b2_0, pi_c0, pi_h)
            self.proof, self.verified = proof, verified
            return
        self.proof, self.verified = gepi.decode_proof(curve, raw[5 * acc_bytes(curve, True):])

    def _decoded(self) -> tuple:
        if self._sums is None:
            curve, raw = self._curve, self._raw
            g1_acc, g2_acc = acc_bytes(curve, False), acc_bytes(curve, True)
            pts = [raw[i * g2_acc:(i + 1) * g2_acc] for i in range(5)]
            a, b1, c, h = (decode_xyzz_g1(curve, p[:g1_acc]) for p in (pts[0], pts[1], pts[3], pts[4]))
            if self._b1_times is not None:
                b1 = g1_mul(curve, b1, pow(self._b1_times, -1, curve.r))
                self._b1_times = None  # the proof's r: not kept longer than needed
            self._sums = (a, b1, decode_xyzz_g2(curve, pts[2]), c, h)
        return self._sums

    pi_a0 = property(lambda self: self._decoded()[0])
    pi_b1_0 = property(lambda self: self._decoded()[1])
    pi_b2_0 = property(lambda self: self._decoded()[2])
    pi_c0 = property(lambda self: self._decoded()[3])
    pi_h = property(lambda self: self._decoded()[4])


def _core(curve, raw: np.ndarray, timings: dict, b1_times: int | None = None) -> CoreResult:
    """A resident key's CoreResult from the bytes that came back (the sums decoded when read); `b1_times`: B1's
    slot holds that multiple of the B1 sum (the products beside), undone when read."""
    return ResidentCore(curve, raw, timings, b1_times=b1_times)
