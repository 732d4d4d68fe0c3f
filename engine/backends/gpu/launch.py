"""A proof's kernels on its streams: the front, the MSMs and the device tail, in the order each kind of
proof runs them (engine/backends/gpu/pipeline.py's compute phase calls `_launch_proof`; batch.py runs
the front and the MSMs of k proofs with the same helpers).

Everything here only queues work and records events: no host waits, nothing device-global
(design.md §5).  A resident key's proof ends on the device (the tail, epilogue.py); a small one runs
on three streams (`_launch_small`); a host-tier key's streams its bases (host_tier.py).
"""
from __future__ import annotations

from cuda_kernels.driver import Event, U32, launch

from engine.backends.gpu import epilogue as gepi
from engine.backends.gpu import footprint
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_sort as gsort
from engine.backends.gpu import ntt as gntt
from engine.backends.gpu import proof_streams
from engine.backends.gpu.footprint import FR, acc_bytes
from engine.backends.gpu.key import GpuKey, ProofPlans
from engine.backends.gpu.proof_state import ProofState

STAGES = ("evaluate", "ntt", "msm_h", "msm_a_b1_c", "msm_b2", "check")  # "check": the device tail only


def _layouts(plans: ProofPlans, sm_count: int):
    return footprint.layouts(plans.w, plans.h, sm_count)


def _track(events: list[Event], event: Event) -> Event:
    events.append(event)
    return event


def _launch_proof(backend, key: GpuKey, st: ProofState, plans: ProofPlans, stream, side, marks: list[Event],
                  side_marks: list[Event], side_events: list[Event], timing: bool, side2=None,
                  beside: dict[str, list[Event]] | None = None, lanes: tuple | None = None) -> tuple:
    """evaluate -> 3 iNTT + 3 coset NTT -> h -> H MSM -> the witness MSMs, into st.results, and for
    a resident key the proof's tail: its early phase on `side` from the start, its mid phase on
    `side` once the G1 sums exist (beside the B2 MSM), its final phase on `stream` after both.  With
    `side2` and a small plan, or a larger one granted it (proof_streams.b2_beside): _launch_small, which records
    the start and end of what it runs beside the compute stream into `beside` (by name: "b2", "front"); with
    `lanes` too (three more side streams, st.products: proof_streams.products_beside) _launch_products.  Returns
    the timed stages' names in the order of the marks."""
    ctx = backend.ctx
    sm = ctx.device.sm_count
    pool = ctx.events

    def mark():
        if timing:
            marks.append(pool.take(True))
            marks[-1].record(stream)

    def side_mark():
        if timing:
            side_marks.append(pool.take(True))
            side_marks[-1].record(side)

    mark()
    g2_acc = acc_bytes(key.curve, True)
    (plan_h, lay_h), (plan_w, lay_w) = _layouts(plans, sm)
    if key.host is not None:  # bases streamed from pinned host memory, chunk by chunk; no device tail
        _front(key, st, stream, mark)
        key.host.enqueue(key.module, st, {"h": (plan_h, lay_h), "w": (plan_w, lay_w)}, stream, mark)
        return STAGES[:-1]
    mod = key.module
    side.wait_event(st.uploaded)
    side.wait_event(key.ready)
    tail = gepi.tail_args(key.epilogue, key.n_wires, st.results, g2_acc, st.witness)

    def early() -> None:
        side_mark()
        gepi.launch_early(mod, tail, side)
        side_mark()

    small_path = st.b2_scratch is not None and proof_streams.b2_beside(plan_w, key.footprint.b2_stream)
    if side2 is not None and lanes is not None and small_path:  # B2 first, then early
        return _launch_products(backend, key, st, plans, ((plan_h, lay_h), (plan_w, lay_w)), stream, side, side2,
                                lanes, tail, mark, side_mark, beside if beside is not None else {}, side_events,
                                timing, early)
    early()
    if side2 is not None and small_path:
        return _launch_small(backend, key, st, plans, ((plan_h, lay_h), (plan_w, lay_w)), stream, side, side2, tail,
                             mark, side_mark, beside if beside is not None else {}, side_events, timing)
    mid_done: list[Event] = []

    def before_b2() -> None:  # the mid phase beside the B2 MSM
        if backend.fault_hook is not None:  # tests: corrupt a result on the device
            backend.fault_hook(st.results, g2_acc, stream, "a_b1_c_h")
        side.wait_event(_track(side_events, pool.take()).record(stream))
        side_mark()
        gepi.launch_mid(mod, tail, side)
        mid_done.append(_track(side_events, pool.take()).record(side))
        side_mark()

    _front(key, st, stream, mark)
    _msms(key, plan_h, lay_h, plan_w, lay_w, st.c, st.witness, st.sort, st.buckets, st.results.ptr, 5 * g2_acc,
          stream, mark, before_b2)
    if backend.fault_hook is not None:
        backend.fault_hook(st.results, g2_acc, stream, "b2")
    stream.wait_event(mid_done[0])
    st.before_final = _track(side_events, pool.take()).record(stream)
    gepi.launch_final(mod, tail, stream)
    mark()
    return STAGES


# A small proof's stages in the order its compute stream runs them (_launch_small); with the front
# beside (proof_streams.front_beside), "front" is what waiting for it added to the compute stream
SMALL_STAGES = ("msm_a_b1_c", "evaluate", "ntt", "msm_h", "msm_b2", "check")
SMALL_STAGES_FRONT_BESIDE = ("msm_a_b1_c", "front", "msm_h", "msm_b2", "check")


def _launch_small(backend, key: GpuKey, st: ProofState, plans: ProofPlans, layouts: tuple, stream, side, side2,
                  tail: tuple, mark, side_mark, beside: dict[str, list[Event]], side_events: list[Event],
                  timing: bool) -> tuple:
    """A small plan's proof (proof_streams.b2_beside), whose MSMs are latency chains on a few SMs, on three
    streams: `side2` sorts the witness into the B2 scratch and runs the B2 MSM from the start; `stream`
    runs the A, B1, C MSMs first (they need only the witness), then the H MSM; `side`, after the early
    phase, runs the front (evaluate, the NTTs, h: proof_streams.front_beside; else the compute stream runs
    it before H), the mid phase's s·A + r·B1 as soon as A and B1 exist, and its join (pi_a, pi_c) once
    H does too.  The final phase waits for B2 and the join.  So the G2 MSM, the front and the tail's
    products leave the compute stream's chain (A, B1, C, then H).  With proof_streams.pi_b_beside (the
    default), `side2` makes pi_b right after B2 and the final phase reads it."""
    pool = backend.ctx.events
    mod = key.module
    g1_acc, g2_acc = acc_bytes(key.curve, False), acc_bytes(key.curve, True)
    (plan_h, lay_h), (plan_w, lay_w) = layouts  # _launch_proof's, for this proof's plans
    res, stride = st.results.ptr, 5 * g2_acc

    def hook(after: str) -> None:  # tests: corrupt a result on the device
        if backend.fault_hook is not None:
            backend.fault_hook(st.results, g2_acc, stream, after)

    beside_mark = _beside_marker(pool, beside, timing)
    pi_b = proof_streams.pi_b_beside()
    early_done = _track(side_events, pool.take()).record(side) if pi_b else None  # side: the early phase
    side2.wait_event(st.uploaded)
    key.wait(plans, side2)
    _b2_msm(key, st, plan_w, lay_w, side2, beside_mark)
    if pi_b:  # pi_b right after B2, beside the rest
        _pi_b_after_b2(backend, key, st, side2, tail, beside_mark, early_done)
    b2_done = _track(side_events, pool.take()).record(side2)

    front_beside = proof_streams.front_beside(key.domain)
    front_done = None
    if front_beside:  # side already waits for the upload and the key (_launch_proof)
        beside_mark("front", side)
        _front(key, st, side, lambda: beside_mark("front", side))
        front_done = _track(side_events, pool.take()).record(side)
    gmsm.sort_scalars(mod, plan_w, st.witness, st.sort, stream)
    g1_msms = [(key.a, res), (key.b1, res + g2_acc), (key.c, res + 3 * g2_acc)]
    gmsm.accumulate_sets(mod, "g1", plan_w, lay_w, g1_msms, st.sort, st.buckets, g1_acc, stream, stride)
    mark()
    hook("a_b1_c")
    side.wait_event(_track(side_events, pool.take()).record(stream))
    side_mark()
    gepi.launch_mid_products(mod, tail, side)
    if front_done is not None:
        stream.wait_event(front_done)
        mark()  # "front": what waiting for it added to the compute stream
    else:
        _front(key, st, stream, mark)
    gmsm.run_msm(mod, "g1", plan_h, lay_h, key.h, st.c, st.sort, st.buckets, g1_acc, res + 4 * g2_acc, stream, stride)
    mark()
    hook("h")
    side.wait_event(_track(side_events, pool.take()).record(stream))
    gepi.launch_join(mod, tail, side)
    side_mark()
    mid_done = _track(side_events, pool.take()).record(side)
    stream.wait_event(b2_done)
    mark()  # "msm_b2": what waiting for it (and pi_b) added to the compute stream
    if not pi_b:
        hook("b2")
    stream.wait_event(mid_done)
    st.before_final = _track(side_events, pool.take()).record(stream)
    gepi.launch_final(mod, tail, stream, pi_b_given=pi_b)
    mark()
    return SMALL_STAGES_FRONT_BESIDE if front_beside else SMALL_STAGES


# A small proof's stages with the products beside (_launch_products): the compute stream's A, C MSMs, then what
# waiting for the front and H lane, for B2 and pi_b, and the final phase (after the join) added to it
PRODUCTS_STAGES = ("msm_a_b1_c", "msm_h", "msm_b2", "check")


def _launch_products(backend, key: GpuKey, st: ProofState, plans: ProofPlans, layouts: tuple, stream, side, side2,
                     lanes: tuple, tail: tuple, mark, side_mark, beside: dict[str, list[Event]],
                     side_events: list[Event], timing: bool, early) -> tuple:
    """A small plan's proof (proof_streams.b2_beside) with the mid phase's products as MSMs of their own
    (proof_streams.products_beside), on six streams from the upload on, so that no chain waits for another:
    `side2` the B2 MSM then pi_b (as _launch_small); `stream` the A and C MSMs over the sorted witness; lane 0
    scales the witness by s and r (fr_scale_pair) and runs the MSM of s w over A into the tail's scratch; lane 1
    that of r w over B1 into B1's slot (so st.b1_times_r: ResidentCore divides by r when the B1 sum is read);
    lane 2 the front (evaluate, the NTTs, h) then the H MSM; `side`, after the early phase, the join (op 6:
    pi_a, pi_c from the sums and the two products) once all of them are done.  The final phase waits for B2,
    pi_b and the join, as before.  `early` queues the tail's early phase on `side` (after B2: B2 and pi_b are the
    proof's longest chain, and the host's enqueue decides when each stream starts)."""
    pool = backend.ctx.events
    mod = key.module
    curve = key.curve
    g1_acc, g2_acc = acc_bytes(curve, False), acc_bytes(curve, True)
    (plan_h, lay_h), (plan_w, lay_w) = layouts
    res, stride = st.results.ptr, 5 * g2_acc
    lane_s, lane_r, lane_h = lanes
    pr = st.products.scratch()  # carved from the memory phase's region now

    def hook(after: str, on) -> None:  # tests: corrupt a result on the device
        if backend.fault_hook is not None:
            backend.fault_hook(st.results, g2_acc, on, after)

    def done(on) -> Event:
        return _track(side_events, pool.take()).record(on)

    beside_mark = _beside_marker(pool, beside, timing)
    pi_b = proof_streams.pi_b_beside()
    for lane in (side2, lane_s, lane_r, lane_h):
        lane.wait_event(st.uploaded)
        key.wait(plans, lane)
    _b2_msm(key, st, plan_w, lay_w, side2, beside_mark)
    early()  # the early phase on `side` (queued after B2: B2 and pi_b are the longest chain)
    if pi_b:
        _pi_b_after_b2(backend, key, st, side2, tail, beside_mark, done(side))
    else:
        hook("b2", side2)
    b2_done = done(side2)

    # queued in the order of their chains' lengths on the device (B2 and pi_b ~1.8 ms above, then the front and
    # H ~1.0, the products ~0.9, A and C ~0.65: perf/RESULTS.md, "Session 27"): the host's enqueue decides when
    # each stream starts
    beside_mark("front", lane_h)
    _front(key, st, lane_h, lambda: None)
    beside_mark("front", lane_h)
    beside_mark("h", lane_h)
    gmsm.run_msm(mod, "g1", plan_h, lay_h, key.h, st.c, pr.h[0], pr.h[1], g1_acc, res + 4 * g2_acc, lane_h)
    beside_mark("h", lane_h)
    hook("h", lane_h)
    h_done = done(lane_h)

    n_w = key.n_wires
    beside_mark("products", lane_s)
    rows = st.witness.ptr + FR * n_w  # r, s, ... after the witness (epilogue.blinding_scalars)
    launch(mod, "fr_scale_pair", (-(-n_w // 256), 2, 1), 256, lane_s, st.witness, U32(n_w), rows + FR, rows,
           pr.scaled)
    lane_r.wait_event(done(lane_s))
    gmsm.run_msm(mod, "g1", plan_w, lay_w, key.b1, pr.scaled.ptr + FR * n_w, pr.r[0], pr.r[1], g1_acc,
                 res + g2_acc, lane_r)
    gmsm.run_msm(mod, "g1", plan_w, lay_w, key.a, pr.scaled, pr.s[0], pr.s[1], g1_acc,
                 res + 5 * g2_acc + gepi.glv_sum_offset(curve), lane_s)
    beside_mark("products", lane_s)
    r_done = done(lane_r)

    gmsm.sort_scalars(mod, plan_w, st.witness, st.sort, stream)
    gmsm.accumulate_sets(mod, "g1", plan_w, lay_w, [(key.a, res), (key.c, res + 3 * g2_acc)], st.sort, st.buckets,
                         g1_acc, stream, stride)
    mark()
    hook("a_b1_c", stream)
    for ev in (done(stream), done(lane_s), r_done, h_done):
        side.wait_event(ev)
    hook("products", side)  # every sum the join reads is done: a corruption here is what it reads
    side_mark()
    gepi.launch_join(mod, tail, side, products=True)
    side_mark()
    st.b1_times_r = True
    join_done = done(side)
    stream.wait_event(h_done)
    mark()  # "msm_h": what waiting for the front and H added to the compute stream
    stream.wait_event(b2_done)
    mark()  # "msm_b2": what waiting for B2 (and pi_b) added
    stream.wait_event(join_done)
    st.before_final = _track(side_events, pool.take()).record(stream)
    gepi.launch_final(mod, tail, stream, pi_b_given=pi_b)
    mark()
    return PRODUCTS_STAGES


def _beside_marker(pool, beside: dict[str, list[Event]], timing: bool):
    """beside_mark(name, stream): a timing event for `name` on `stream` (the start and end of what runs beside
    the compute stream), kept before it is recorded: a failed record still gives it back (pipeline.compute's wait)."""
    def beside_mark(name: str, on) -> None:
        if timing:
            _track(beside.setdefault(name, []), pool.take(True)).record(on)

    return beside_mark


def _b2_msm(key: GpuKey, st: ProofState, plan_w, lay_w, side2, beside_mark) -> None:
    """A small proof's B2 MSM on `side2`, over its own sort and buckets (proof_streams.b2_beside)."""
    mod, g2_acc = key.module, acc_bytes(key.curve, True)
    sort2, buckets2 = st.b2_scratch
    beside_mark("b2", side2)
    gmsm.sort_scalars(mod, plan_w, st.witness, sort2, side2)
    gmsm.accumulate(mod, "g2", plan_w, lay_w, key.b2, sort2, buckets2, g2_acc, st.results.ptr + 2 * g2_acc, side2,
                    5 * g2_acc)
    beside_mark("b2", side2)


def _pi_b_after_b2(backend, key: GpuKey, st: ProofState, side2, tail: tuple, beside_mark, early_done) -> None:
    """pi_b on `side2` right after B2 (proof_streams.pi_b_beside) once the early phase is done too; the fault hook
    "b2" before it."""
    if backend.fault_hook is not None:  # tests: corrupt a result on the device
        backend.fault_hook(st.results, acc_bytes(key.curve, True), side2, "b2")
    side2.wait_event(early_done)
    beside_mark("pi_b", side2)
    gepi.launch_pi_b(key.module, tail, side2)
    beside_mark("pi_b", side2)


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
          mark, before_b2=None) -> None:
    """The H MSM over the h vectors at `h` and the A, B1, C, B2 MSMs over the witnesses at `w`
    (plan.batch vectors each, one after another): proof j's five results at res + j * stride,
    in the order A, B1, B2, C, H, each slot one G2 accumulator wide.  `before_b2` runs once the
    G1 sums are queued (a single proof's tail starts its mid phase there)."""
    curve, mod = key.curve, key.module
    g1_acc, g2_acc = acc_bytes(curve, False), acc_bytes(curve, True)
    gmsm.run_msm(mod, "g1", plan_h, lay_h, key.h, h, sort, buckets, g1_acc, res + 4 * g2_acc, stream, stride)
    mark()
    # the witness's sort takes the scratch's bins where msm_sort.WITNESS_BINS says so (perf/RESULTS.md
    # "Session 37"; with msm_place finishing the binned sort it was slower for B2, "Session 25")
    gmsm.sort_scalars(mod, plan_w, w, sort, stream, bins=gsort.WITNESS_BINS)
    g1_msms = [(key.a, res), (key.b1, res + g2_acc), (key.c, res + 3 * g2_acc)]  # one launch set when small
    gmsm.accumulate_sets(mod, "g1", plan_w, lay_w, g1_msms, sort, buckets, g1_acc, stream, stride)
    mark()
    if before_b2 is not None:
        before_b2()
    gmsm.accumulate(mod, "g2", plan_w, lay_w, key.b2, sort, buckets, g2_acc, res + 2 * g2_acc, stream, stride)
    mark()
