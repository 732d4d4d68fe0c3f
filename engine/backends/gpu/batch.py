"""Several staged proofs of one key as one compute phase (GpuBackend.compute_batch).

Why a batch is laid out as it is (perf/RESULTS.md, h13tput, batches of 16 at the 2^14 domain):
the k proofs' vectors sit side by side in the batch's own buffers so that every stage is one
launch set for all k, not k.  Proof by proof, the front (evaluate, 6 NTT passes pairs, the
quotient) was 14 launches a proof of n/256 blocks or fewer (32 at 2^13 on 132 SMs): 224 launches
at k = 16, bound by the host's launch rate (3.5 ms of device time, 8 ms of the host's enqueue
beside the tails' copies and launches).  The k tails were one block each on k side streams; the
driver's 8 hardware queues ran 16 of them in two rounds (16.3 ms against 8.3 for 8).  Now:

  side stream   copy proof j's w_0..w_nPublic and r, s, rs into the batch's tail witnesses,
                then the early phase of all k proofs (one launch, block j = proof j)
  compute       gather the k witnesses; evaluate, 3 iNTT (coset), 3 NTT and the quotient of
                all k (cuda_kernels/front_batch.cuh, blockIdx.y = proof); the H MSM and the
                four witness MSMs batched (plan.batch = k: k bucket sets, the bases read once);
                proof j's five sums land at res + j * stride, in its own results block
  side stream   once the G1 sums exist: the mid phase of all k, beside the B2 MSM
  compute       after B2 and the mid phase: the final phase of all k; each proof's results
                block (sums, affine proof, verdict) downloaded to its own pinned buffer

Every proof keeps its own results and its own verdict (the flag its block wrote): a bad proof
fails alone.  The batch's buffers are allocated before anything of the staged proofs is
touched: a failure there frees them, waits, and raises with the proofs still staged (the
scheduler discards them).  After that it fails like pipeline.compute: the compute stream joins
the side stream, everything is freed on it, every Pending raises after the done event.

Beside the proofs' own working sets (which the VRAM budget reserves), a batch allocates the k
h, a and b vectors, the k witnesses, the k results blocks and tail witnesses, and a batch-sized
sort and bucket scratch, not counted in the budget: at k = 16 the vectors and witnesses are ~17 MB
at the 2^13 domain and ~135 MB at 2^16 (GpuBackend batches keys up to BATCH_MAX_DOMAIN only); the
a and b vectors (2 k n 32 bytes) are what the one-launch front added to the batch path before it.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from cuda_kernels.driver import Device, Event, U32, launch

from engine.backends.base import CoreResult, Pending, Staged
from engine.backends.gpu import epilogue as gepi
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import ntt as gntt
from engine.backends.gpu.footprint import acc_bytes
from engine.backends.gpu.key import GpuKey, ProofPlans
from engine.backends.gpu.launch import _msms, _track
from engine.backends.gpu.pipeline import (FR, RESULT_ALIGN, ProofState, _await_frees, _core, _destroy, _fence,
                                          _fetch_late, _free_all, _join_side, _settle, compute, result_bytes,
                                          results_alloc_bytes)
from engine.errors import UnreducedWitnessError

# a batch's phases on its compute stream (timings gpu_batch_<name>, seconds; gpu_check after them:
# the final phase of the k tails, after the mid phase that ran beside B2)
BATCH_PHASES = ("gather", "front", "msm_h", "sort_g1", "msm_b2")


class BatchSpan(NamedTuple):
    """One batch as the device ran it: when the host saw its done event (monotonic ns), its size, its
    slot, its device time from its first kernel to its last (CUDA events, seconds), and the host's
    time from the done event to the k results decoded (seconds)."""
    done_ns: int
    k: int
    slot: int
    device_s: float
    decode_s: float


# The last batches' spans, one append a batch (perf/sweep.py writes them beside a run's timeline and
# perf/timeline_gaps.py places the batches on the device's time line: the gaps between them).
RECENT: deque = deque(maxlen=4096)


@dataclass
class _Slice:
    """Proof j's results block inside the batch's buffer (what backend.fault_hook gets: .ptr)."""
    ptr: int
    nbytes: int


def batch_plans(key: GpuKey, k: int, plans: ProofPlans | None = None):
    """The H and witness plans (and layouts) of k proofs of `key` in one MSM pass each, under
    `plans` (default: the full fold's)."""
    sm_count = key.ctx.device.sm_count
    plans = plans or ProofPlans(key.plan_w, key.plan_h, True)
    out = []
    for plan in (plans.h, plans.w):
        p = gmsm.plan_for_batch(plan, k)
        out.append((p, gmsm.AccumulateLayout.for_plan(p, sm_count)))
    return out


def _align(nbytes: int, to: int = RESULT_ALIGN) -> int:
    return -(-nbytes // to) * to


def tail_witness_bytes(n_public: int) -> int:
    """What a tail reads of a proof's witness (groth16_check.cuh): w_0 .. w_nPublic, then r, s, rs."""
    return (n_public + 1) * FR + gepi.SCALAR_BYTES


def compute_batch(backend, staged: list[Staged], slot: int = 0, timing: bool = True) -> list[Pending]:
    """Staged proofs of one resident key in one compute phase (module docstring); one Pending each."""
    if len(staged) == 1:
        return [compute(backend, staged[0], slot)]
    ctx = backend.ctx
    ctx.bind_thread()
    key: GpuKey = staged[0].key
    if any(s.key is not key for s in staged):
        raise ValueError("compute_batch: the staged proofs are of different keys")
    if key.host is not None:
        raise ValueError("compute_batch: a host-tier key streams its bases per proof (GpuBackend.max_batch is 1)")
    dev = ctx.device
    curve, mod, k, n = key.curve, key.module, len(staged), key.domain
    stream = ctx.compute_stream(slot)
    side = backend.side_streams.get(slot)
    plans = key.plans_now()  # one choice for the whole batch, kept to its end
    (plan_h, lay_h), (plan_w, lay_w) = batch_plans(key, k, plans)
    n_h, n_w = n * FR, key.n_wires * FR
    g2_acc = acc_bytes(curve, True)
    n_public = key.epilogue.n_public
    nbytes = result_bytes(key)  # what comes back of each proof
    res_stride = _align(results_alloc_bytes(key))  # proof j's sums, affine proof, verdict, tail scratch
    tw_bytes = tail_witness_bytes(n_public)
    tw_stride = _align(tw_bytes, 16)
    with Device.recording() as batch_bufs:
        try:
            h_all, a_all, b_all, w_all, res, tw = (dev.alloc(size, stream) for size in (
                k * n_h, k * n_h, k * n_h, k * n_w, k * res_stride, k * tw_stride))
            sort = gmsm.SortScratch(dev, [plan_w, plan_h], stream)  # direct: batched keys are small
            buckets = gmsm.BucketScratch(dev, [(plan_h, lay_h), (plan_w, lay_w)], g2_acc, stream)
        except BaseException:
            _settle(stream, batch_bufs)
            raise
    states: list[ProofState] = [s.state for s in staged]
    raws = [st.results_view(nbytes) for st in states]
    events: list[Event] = []  # cross-stream and timing events (destroyed after the done event)
    marks: list[Event] = []  # BATCH_PHASES' boundaries on the compute stream (timing)
    error: BaseException | None = None
    ordered = False
    side_used = False
    # the tails' arguments: proof j's results block and tail witness at j * stride (kernels.cu)
    tail = gepi.tail_args(key.epilogue, n_public + 1, res, g2_acc, tw)
    strides = (k, res_stride, tw_stride)

    def mark() -> None:
        if timing:
            marks.append(_track(events, Event(timing=True)).record(stream))

    def hook(after: str) -> None:  # tests: corrupt proof j's sums on the device, j = 0 .. k-1 in turn
        if backend.fault_hook is not None:
            for j in range(k):
                backend.fault_hook(_Slice(res.ptr + j * res_stride, res_stride), g2_acc, stream, after)

    try:
        key.wait(plans, stream)
        for st in states:
            stream.wait_event(st.uploaded)
        ordered = True
        side_used = True
        side.wait_event(key.ready)
        for j, st in enumerate(states):
            side.wait_event(st.uploaded)
            Device.copy(tw.ptr + j * tw_stride, st.witness, (n_public + 1) * FR, side)
            Device.copy(tw.ptr + j * tw_stride + (n_public + 1) * FR, st.witness.ptr + n_w, gepi.SCALAR_BYTES, side)
        gepi.launch_early(mod, tail, side, strides)
        mark()
        for j, st in enumerate(states):
            Device.copy(w_all.ptr + j * n_w, st.witness, n_w, stream)
        mark()
        _front_batch(key, k, w_all, a_all, b_all, h_all, stream)
        mark()
        mid_done: list[Event] = []

        def before_b2() -> None:  # the k mid phases beside the B2 MSM
            hook("a_b1_c_h")
            side.wait_event(_track(events, Event()).record(stream))
            gepi.launch_mid(mod, tail, side, strides)
            mid_done.append(_track(events, Event()).record(side))

        _msms(key, plan_h, lay_h, plan_w, lay_w, h_all, w_all, sort, buckets, res.ptr, res_stride, stream, mark,
              before_b2)
        hook("b2")
        check_start = _track(events, Event(timing=True)).record(stream)
        stream.wait_event(mid_done[0])
        gepi.launch_final(mod, tail, stream, strides)
        check_end = _track(events, Event(timing=True)).record(stream)
        for j, st in enumerate(states):
            if raws[j] is not None:
                Device.download(raws[j], res, stream, offset=j * res_stride)
            else:  # no pinned buffer: into its own results buffer, fetched by wait_one (_fetch_late)
                Device.copy(st.results, res.ptr + j * res_stride, nbytes, stream)
    except Exception as exc:  # handed to the Pendings: raised after the done event
        error = exc
        if ordered and side_used:  # whatever reached the side stream finishes before the frees below
            _join_side(stream, side, events)
    late = {j: st.results for j, (st, raw) in enumerate(zip(states, raws)) if raw is None}
    kept = {id(buf) for buf in late.values()}
    failed = _free_all([b for st in states for b in st.device_buffers if id(b) not in kept] + batch_bufs, stream)
    done = _fence(stream)
    results: list[CoreResult] = []
    unreduced: list[int | None] = [None] * k  # each proof's range check, read in the first wait
    outcome: dict = {"waited": False, "exc": None}
    lock = threading.Lock()

    def wait_one(j: int) -> CoreResult:
        """The first caller waits for the done event and decodes all k; every caller gets its own."""
        with lock:
            if not outcome["waited"]:
                outcome["waited"] = True
                try:
                    try:
                        _await_frees(done, failed, stream)
                        t_done = time.monotonic_ns()  # the done event seen (before the k decodes below)
                    finally:
                        for i, buf in late.items():  # the kernels are done (or failed): fetch, or only free
                            raws[i] = _fetch_late(ctx, buf, nbytes, fetch=error is None)
                    if error is None:
                        unreduced[:] = [st.unreduced_row() for st in states]  # before the buffers go back
                        check = check_start.elapsed_ms(check_end) / 1000.0
                        phases = {f"gpu_batch_{name}": e0.elapsed_ms(e1) / 1000.0
                                  for name, (e0, e1) in zip(BATCH_PHASES, zip(marks, marks[1:]))}
                        for s, st, raw in zip(staged, states, raws):
                            timings = dict(s.timings)
                            timings["gpu_upload"] = st.upload_start.elapsed_ms(st.uploaded) / 1000.0
                            timings["gpu_batch"] = k
                            timings["gpu_fold"] = plan_w.fold
                            timings["gpu_check"] = check  # the k final phases, after the batched MSMs
                            timings.update(phases)
                            results.append(_core(curve, raw.copy(), timings))  # the MSM sums decoded when read
                        if marks:
                            RECENT.append(BatchSpan(t_done, k, slot, marks[0].elapsed_ms(check_end) / 1000.0,
                                                    (time.monotonic_ns() - t_done) / 1e9))
                except BaseException as exc:  # noqa: BLE001 - every proof of the batch gets it
                    outcome["exc"] = exc
                finally:
                    _destroy(*events)
                    for st in states:
                        st.release_host(ctx)
        if outcome["exc"] is not None:
            raise outcome["exc"]
        if error is not None:
            raise error
        if unreduced[j] is not None:  # this proof's witness only: the others of the batch are proofs
            raise UnreducedWitnessError(unreduced[j])
        return results[j]

    return [Pending(lambda j=j: wait_one(j)) for j in range(k)]


def _front_batch(key: GpuKey, k: int, w_all, a_all, b_all, h_all, stream) -> None:
    """evaluate -> 3 iNTT (coset) -> 3 NTT -> h of the k witnesses side by side at w_all, h into
    h_all (its c vectors, in place), one launch a step (cuda_kernels/front_batch.cuh)."""
    mod, n = key.module, key.domain
    (rp_a, wa, ca), (rp_b, wb, cb) = key.csr
    grid = (-(-n // 256), k, 1)
    launch(mod, "evaluate_ab_batch", grid, 256, stream, rp_a, wa, ca, rp_b, wb, cb, w_all,
           U32(key.n_wires * FR // 4), U32(n), a_all, b_all, h_all)
    for buf in (a_all, b_all, h_all):
        gntt.dif(mod, buf, key.tables, stream, inverse=True, scale=key.tables.coset, batch=k)
        gntt.dit(mod, buf, key.tables, stream, inverse=False, batch=k)
    launch(mod, "quotient_h_batch", grid, 256, stream, a_all, b_all, h_all, U32(n), h_all)
