"""Where a GPU proof ends, and what its key and its proofs take, on the fake driver (tests/fake_cuda.py).

A resident key's proofs end on the device (the tail's three phases; batched proofs too, one tail
each), a host-tier key's on the CPU (CoreResult.proof None, no tail launched, no tail bytes); the
footprint counts exactly what load_key allocates (the epilogue's tables included) and a proof's
working set covers what stage allocates (the tail's r, s and scratch included, within the
allocation rounding it adds).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from conftest import FIXTURES
from engine.formats import read_wtns, read_zkey
from fake_cuda import fake_driver

TINY = FIXTURES / "tiny"
OPTIONS = [{}, {"fold": 1, "tier": "resident"}, {"tier": "host", "host_chunk": 2}]


def _backend(**options):
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    backend = GpuBackend(0, **options)
    backend.ctx.prepare = lambda curve: b"fake cubin"
    return backend


def _tiny(curve):
    return read_zkey(TINY / curve / "tiny.zkey"), np.asarray(read_wtns(TINY / curve / "tiny.wtns").values)


@contextlib.contextmanager
def _one_proof_ordered():
    """The tiny BN254 key's one proof on the fake driver, its launches in happens-before order
    (tests/stream_order.py): yields the backend, the key, the proof's state and result, the order and the
    proof's own launches; unloads and closes after."""
    from stream_order import StreamOrder  # noqa: PLC0415

    zkey, witness = _tiny("bn128")
    with fake_driver() as fake:
        order = StreamOrder(fake)
        backend = _backend()
        key = backend.load_key(zkey)
        staged = backend.stage(key, witness)
        n0 = len(order.launches)
        core = backend.compute(staged).wait()
        yield backend, key, staged.state, core, order, order.launches[n0:]
        backend.unload_key(key)
        backend.close()


@pytest.fixture
def tail_launches(monkeypatch):
    """Counts of the tail's phases run, a proof each (the fake's kernels do nothing); the launches
    themselves in counts["launches"] (a batch's phase is one launch of k blocks)."""
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    counts = _Counts(early=0, mid=0, final=0)
    # a small proof's mid phase is two launches, its products then its join: counted once, as mid; with the
    # products beside (proof_streams.products_beside) only its join (op 6) runs, counted as mid
    for name, phase in (("early", "early"), ("mid", "mid"), ("mid_products", "mid"), ("join", "mid"),
                        ("final", "final")):
        real = getattr(gepi, f"launch_{name}")

        def counted(*args, _real=real, _phase=phase, _name=name, **kw):
            if _name == "join" and not kw.get("products"):
                return _real(*args, **kw)  # the join after launch_mid_products: counted there
            batch = kw.get("batch", args[3] if len(args) > 3 else None)
            counts[_phase] += batch[0] if batch else 1
            counts.launches[_phase] += 1
            return _real(*args, **kw)

        monkeypatch.setattr(gepi, f"launch_{name}", counted)
    return counts


class _Counts(dict):
    """Phases run, a proof each (compared as a dict); the launches in .launches."""

    def __init__(self, **counts):
        super().__init__(**counts)
        self.launches = dict.fromkeys(counts, 0)


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_the_footprint_counts_the_allocations_on_a_fake_driver(curve, options):
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415
    from engine.backends.gpu import footprint, pipeline, proof_streams  # noqa: PLC0415

    zkey, witness = _tiny(curve)
    with fake_driver() as fake:
        backend = _backend(**options)
        key = backend.load_key(zkey)
        fp = key.footprint
        assert fp.tier == ("host" if options.get("tier") == "host" else "resident")
        assert (key.epilogue is None) == (fp.tier == "host")
        assert backend.resident_bytes(key) == fp.device_bytes  # the epilogue's tables counted exactly
        assert backend.host_resident_bytes(key) == fp.host_bytes
        assert backend.working_set_bytes(key) == fp.working_set_bytes
        before = sum(fake.live_device.values())
        staged = backend.stage(key, witness)
        taken = sum(fake.live_device.values()) - before
        st = staged.state
        rounding = footprint.alloc_slack(proof_streams.PRODUCT_SCRATCH_COPIES if st.products is not None else 0)
        assert fp.working_set_bytes - rounding <= taken <= fp.working_set_bytes
        # the products beside (the tiny keys' small plans, by default) carve s w, r w and three more scratch copies
        assert (st.products is not None) == (tail_expected := key.epilogue is not None and
                                              proof_streams.products_beside(key.plan_w, key.domain))
        if tail_expected:  # one reserved region, carved when the products run (proof_state.ProductsRegion)
            region = st.products.buffer
            carved = st.products.scratch()
            assert carved.scaled.nbytes == 2 * key.n_wires * 32 and carved.scaled.ptr == region.ptr
            inside = [carved.scaled, *vars(carved.s[0]).values(), *vars(carved.h[1]).values()]
            bufs = [b for x in inside for b in (x if isinstance(x, list) else [x]) if hasattr(b, "ptr")]
            assert all(region.ptr <= b.ptr and b.ptr + b.nbytes <= region.ptr + region.nbytes for b in bufs)
        tail = 0 if key.epilogue is None else 1
        assert st.witness.nbytes == witness.nbytes + tail * gepi.SCALAR_BYTES
        assert st.results.nbytes == pipeline.result_bytes(key) + tail * gepi.scratch_bytes(key.curve)
        backend.discard(staged).wait()
        assert sum(fake.live_device.values()) == before
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_resident_proofs_end_on_the_device_host_tier_proofs_on_the_cpu(curve, tail_launches):
    zkey, witness = _tiny(curve)
    with fake_driver():
        backend = _backend()
        key = backend.load_key(zkey)
        core = backend.prove_core(key, witness)
        assert core.proof is not None and core.verified is False  # the fake's zero flag: not verified
        assert "gpu_check" in core.timings and tail_launches == {"early": 1, "mid": 1, "final": 1}
        backend.unload_key(key)
        backend.close()

        host = _backend(tier="host", host_chunk=2)
        key = host.load_key(zkey)
        core = host.prove_core(key, witness)
        assert core.proof is None and core.verified is None
        assert "gpu_check" not in core.timings and tail_launches == {"early": 1, "mid": 1, "final": 1}
        host.unload_key(key)
        host.close()


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_batched_proofs_each_get_a_device_tail(curve, tail_launches):
    zkey, witness = _tiny(curve)
    k = 3
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        backend.maintain()
        used = backend.device.pool_used_bytes()
        cores = [p.wait() for p in backend.compute_batch([backend.stage(key, witness) for _ in range(k)])]
        assert tail_launches == {"early": k, "mid": k, "final": k}
        # one launch of k blocks a phase (the driver's 8 hardware queues ran k one-block launches
        # on k streams in rounds of 8: perf/RESULTS.md, h13tput)
        assert tail_launches.launches == {"early": 1, "mid": 1, "final": 1}
        for core in cores:
            assert core.proof is not None and core.verified is False
            assert core.timings["gpu_batch"] == k and "gpu_check" in core.timings
        assert backend.device.pool_used_bytes() == used
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device and not fake.live_pinned


def test_a_core_without_a_device_proof_is_checked_on_the_cpu_whatever_its_timings():
    """A CoreResult with no device proof (CPU backend, GPU host tier) ends in the CPU epilogue; a
    stray gpu_check timing must not mark the proof as checked on the device (api.verify would skip it)."""
    import dataclasses

    from engine.backends.cpu import CpuBackend
    from engine.errors import VerificationError
    from engine.groth16.prover import checked_on_device, finish

    zkey, witness = _tiny("bn128")
    backend = CpuBackend()
    core = backend.prove_core(backend.load_key(zkey), witness)
    core.timings["gpu_check"] = 0.001
    proof = finish(zkey, core, witness)
    assert not checked_on_device(proof)
    wrong = dataclasses.replace(core, pi_h=core.pi_a0)
    with pytest.raises(VerificationError, match="does not verify"):
        finish(zkey, wrong, witness)


def test_a_failed_device_check_raises_verification_error_naming_key_and_witness():
    """A CoreResult whose device pairing check failed (verified False) ends in VerificationError
    with the key's and the witness's names, never a proof (the GPU fault test's path, on the CPU)."""
    import dataclasses

    from engine.backends.cpu import CpuBackend
    from engine.errors import VerificationError
    from engine.groth16.prover import epilogue, finish

    zkey, witness = _tiny("bn128")
    backend = CpuBackend()
    core = backend.prove_core(backend.load_key(zkey), witness)
    failed = dataclasses.replace(core, proof=epilogue(zkey, core, 3, 5), verified=False)
    with pytest.raises(VerificationError, match="does not verify.*device's pairing check failed") as err:
        finish(zkey, failed, witness, witness_name="tiny.wtns")
    assert "tiny.wtns" in str(err.value)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("pinned", [False, True])
def test_a_result_without_a_pinned_buffer_is_fetched_by_the_waiter_not_the_device_thread(k, pinned):
    """A pageable download returns only once its stream is idle: issued in the compute phase, it held the
    device thread until the proof's kernels ended, so no other proof could stage beside it.  Without a
    pinned buffer the compute phase queues no download; wait() fetches the result, then frees it."""
    zkey, witness = _tiny("bn128")
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        if pinned:
            backend.maintain()  # the pinned buffers the key wants
        before = sum(fake.live_device.values())
        staged = [backend.stage(key, witness) for _ in range(k)]
        assert all((s.state.host is not None) == pinned for s in staged)
        mark = len(fake.calls)
        pendings = backend.compute_batch(staged) if k > 1 else [backend.compute(staged[0])]
        launched = fake.calls[mark:]
        assert launched.count("cuMemcpyDtoHAsync") == (k if pinned else 0)
        mark = len(fake.calls)
        cores = [p.wait() for p in pendings]  # the first proof's caller waits for (and decodes) the batch
        assert fake.calls[mark:].count("cuMemcpyDtoHAsync") == (0 if pinned else k)
        assert all(c.proof is not None for c in cores)
        # each Pending its own proof's result (the batch's waiting caller once got another proof's)
        assert len({id(c) for c in cores}) == k
        assert sum(fake.live_device.values()) == before  # every result buffer freed too
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_resident_proofs_msm_sums_are_decoded_only_when_read_and_as_before(curve, monkeypatch):
    """The device made the proof: its five MSM sums (for tests) cost field inversions that no proof's path
    reads, so they are decoded from the returned bytes when first read, to the values the eager decode gave."""
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu import epilogue as gepi, pipeline, points  # noqa: PLC0415

    c = curve_by_name(curve)
    g1_acc, g2_acc = pipeline.acc_bytes(c, False), pipeline.acc_bytes(c, True)
    raw = np.random.default_rng(7).integers(0, 256, 5 * g2_acc + gepi.proof_bytes(c), dtype=np.uint8)
    raw[3 * g2_acc:3 * g2_acc + g1_acc] = 0  # C's sum at infinity (zz = 0): decoded as None
    eager = [points.decode_xyzz_g1(c, raw[i * g2_acc:i * g2_acc + g1_acc]) for i in (0, 1, 3, 4)]
    eager_b2 = points.decode_xyzz_g2(c, raw[2 * g2_acc:3 * g2_acc])
    calls = []
    for name in ("decode_xyzz_g1", "decode_xyzz_g2"):
        real = getattr(pipeline, name)
        monkeypatch.setattr(pipeline, name, lambda *a, _real=real, _n=name: calls.append(_n) or _real(*a))
    core = pipeline._core(c, raw, {"gpu_check": 0.001})
    assert calls == [] and core.timings == {"gpu_check": 0.001}
    assert (core.proof, core.verified) == gepi.decode_proof(c, raw[5 * g2_acc:])
    assert [core.pi_a0, core.pi_b1_0, core.pi_c0, core.pi_h] == eager and core.pi_c0 is None
    assert core.pi_b2_0 == eager_b2
    assert calls.count("decode_xyzz_g1") == 4 and calls.count("decode_xyzz_g2") == 1  # once, then kept


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_proofs_buffers_are_carved_from_one_allocation_disjoint_and_aligned(curve):
    """stage makes one pool allocation for the witness, a/b/c, the sort's and the buckets' scratch (about
    twenty before, each a driver call on the proof's path, and as many frees), carved at 256-byte
    offsets that do not overlap; the results stay an allocation of their own (a late fetch frees them)."""
    from cuda_kernels.driver import DeviceBuffer  # noqa: PLC0415
    from engine.backends.gpu import footprint  # noqa: PLC0415

    zkey, witness = _tiny(curve)
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        backend.maintain()  # the key's pinned buffers: the range check's answer is allocated too
        before = set(fake.live_device)
        staged = backend.stage(key, witness)
        new = {p: n for p, n in fake.live_device.items() if p not in before}
        st = staged.state
        assert len(new) == 3 and st.results.ptr in new  # the answer word, the arena, the results
        base = max(new, key=new.get)
        carved = [st.witness, st.a, st.b, st.c, *vars(st.sort).values(), *vars(st.buckets).values()]
        bufs = [b for x in carved for b in (x if isinstance(x, list) else [x]) if isinstance(b, DeviceBuffer)]
        assert len(bufs) >= 20
        spans = sorted((b.ptr - base, b.ptr - base + b.nbytes) for b in bufs)
        assert all(lo % footprint.ALLOC_ALIGN == 0 for lo, _ in spans)
        assert spans[0][0] == 0 and spans[-1][1] <= new[base]
        assert all(hi <= lo2 for (_, hi), (lo2, _) in zip(spans, spans[1:]))  # disjoint
        assert st.witness.ptr == base  # the witness first: it goes up before the rest is carved
        backend.discard(staged).wait()
        assert set(fake.live_device) == before
        backend.unload_key(key)
        backend.close()


def test_the_event_pool_reuses_keeps_once_and_destroys_when_closed():
    from engine.backends.gpu.runtime import EventPool  # noqa: PLC0415

    with fake_driver() as fake:
        backend = _backend()
        pool = EventPool()
        a, b = pool.take(True), pool.take(False)
        assert a.timing and not b.timing
        pool.give(a, b, a, None)  # a twice: kept once
        assert pool.idle_count() == 2
        assert pool.take(True) is a and pool.take(True) is not a  # a again, then a new one
        pool.give(a)
        made = len(fake.live_events)
        pool.close()
        assert len(fake.live_events) == made - 2  # a and b destroyed; the one still out is its taker's
        c = pool.take(False)
        pool.give(c)  # after close: destroyed, not kept
        assert pool.idle_count() == 0 and c.handle is None
        backend.close()


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_warm_proof_makes_no_events_but_its_fences(curve):
    """The proofs' events come from the context's pool: after the first proof, one makes none of its own
    (about sixteen cuEventCreate and cuEventDestroy calls a proof before) but the fences after its frees."""
    zkey, witness = _tiny(curve)
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        backend.maintain()
        backend.compute(backend.stage(key, witness)).wait()
        mark = len(fake.calls)
        backend.compute(backend.stage(key, witness)).wait()
        calls = fake.calls[mark:]
        assert calls.count("cuEventCreate") <= 2 and calls.count("cuEventDestroy") == calls.count("cuEventCreate")
        assert calls.count("cuEventRecord") >= 10  # its marks were recorded all the same
        backend.unload_key(key)
        backend.close()
        assert not fake.live_events


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_resident_core_copies_with_dataclasses_replace(curve):
    """dataclasses.replace on a resident proof's core (the host-tier GPU tests strip its device proof so):
    the copy has the same sums, the fields given replaced (it raised TypeError on the lazy class's first form)."""
    import dataclasses  # noqa: PLC0415

    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.base import CoreResult  # noqa: PLC0415
    from engine.backends.gpu import epilogue as gepi, pipeline  # noqa: PLC0415

    c = curve_by_name(curve)
    raw = np.random.default_rng(3).integers(0, 256, 5 * pipeline.acc_bytes(c, True) + gepi.proof_bytes(c), dtype=np.uint8)
    core = pipeline._core(c, raw, {"gpu_check": 0.002})
    sums = dataclasses.replace(core, proof=None, verified=None)
    assert isinstance(sums, CoreResult) and sums.proof is None and sums.verified is None
    assert (sums.pi_a0, sums.pi_b1_0, sums.pi_b2_0, sums.pi_c0, sums.pi_h) == (
        core.pi_a0, core.pi_b1_0, core.pi_b2_0, core.pi_c0, core.pi_h) and sums.timings == core.timings
    assert dataclasses.replace(core, pi_h=None).pi_h is None and core.pi_h is not None
    assert dataclasses.replace(core) == core


@pytest.mark.parametrize("beside,front", [(True, True), (True, False), (False, True)])
def test_a_small_proofs_b2_msm_runs_beside_the_rest_on_its_own_scratch(beside, front, monkeypatch):
    """A small plan's B2 (G2) MSM goes on the slot's second side stream, on a sort and buckets of its
    own (counted in the working set), queued before the front; the final phase's stream waits for it.
    The front goes on the tail's side stream (proof_streams.front_beside; GROTH16_FRONT_BESIDE=0: on the
    compute stream between the G1 MSMs and H).  Without proof_streams.b2_beside B2 stays on the compute
    stream after the G1 MSMs, on the shared scratch, and the front before them."""
    import inspect

    from engine.backends.gpu import launch, proof_streams  # noqa: PLC0415
    from engine.backends.gpu import msm as gmsm  # noqa: PLC0415

    if not beside:
        monkeypatch.setattr(proof_streams, "b2_beside", lambda plan_w, granted=False: False)
    monkeypatch.setenv("GROTH16_FRONT_BESIDE", "1" if front else "0")  # (the tiny key's domain is below the bound)
    monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", "0")  # the mid phase's products (test_products_beside_*: with)
    order = []
    real_acc, real_sort, real_front = gmsm.accumulate, gmsm.sort_scalars, launch._front
    acc_sig = inspect.signature(real_acc)

    def accumulate(*args, **kw):
        bound = acc_sig.bind(*args, **kw).arguments
        order.append((bound["group"], bound["stream"], id(bound["sort"])))
        return real_acc(*args, **kw)

    monkeypatch.setattr(gmsm, "accumulate", accumulate)
    monkeypatch.setattr(gmsm, "sort_scalars", lambda mod, plan, w, sort, stream, *a, **k:
                        (order.append(("sort", stream, id(sort))), real_sort(mod, plan, w, sort, stream, *a, **k))[1])
    monkeypatch.setattr(launch, "_front", lambda key, st, stream, mark:
                        (order.append(("front", stream, None)), real_front(key, st, stream, mark))[1])
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    for name in ("mid", "mid_products", "join"):
        real = getattr(gepi, f"launch_{name}")
        monkeypatch.setattr(gepi, f"launch_{name}", lambda mod, tail, side, *a, _r=real, _n=name:
                            (order.append((_n, side, None)), _r(mod, tail, side, *a))[1])
    zkey, witness = _tiny("bn128")
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        assert proof_streams.b2_beside(key.plan_w) == beside
        staged = backend.stage(key, witness)
        st = staged.state
        assert (st.b2_scratch is not None) == beside
        core = backend.compute(staged).wait()
        compute = backend.ctx.compute_stream(0)
        side2 = backend.side_streams.get(0, 1)
        g2 = [o for o in order if o[0] == "g2"]
        assert len(g2) == 1
        side = backend.side_streams.get(0, 0)
        if beside and front:  # B2 on side2, the front on side; A, B1, C (their sort), then H on compute
            assert order[0] == ("sort", side2, id(st.b2_scratch[0])) and order[1] == ("g2", side2, id(st.b2_scratch[0]))
            assert order[2] == ("front", side, None) and order[3] == ("sort", compute, id(st.sort))
            assert [o[0] for o in order[4:]] == ["mid_products", "sort", "g1", "join"]  # H: sort, g1
            assert [o[1] for o in order[4:]] == [side, compute, compute, side]
            assert {"side_b2", "gpu_msm_b2", "side_front", "gpu_front"} <= set(core.timings)
            assert "gpu_ntt" not in core.timings
        elif beside:  # B2 on side2; A, B1, C (their sort) first on the compute stream, then the front and H
            assert order[0] == ("sort", side2, id(st.b2_scratch[0])) and order[1] == ("g2", side2, id(st.b2_scratch[0]))
            assert order[2] == ("sort", compute, id(st.sort))
            assert [o[0] for o in order[3:]] == ["mid_products", "front", "sort", "g1", "join"]  # H: sort, g1
            assert [o[1] for o in order[3:]] == [side, compute, compute, compute, side]
            assert "side_b2" in core.timings and "gpu_msm_b2" in core.timings and "side_front" not in core.timings
        else:  # as before: the front, H, the witness sort, the G1 MSMs, the mid phase, B2, all but mid on compute
            assert [o[0] for o in order] == ["front", "sort", "g1", "sort", "mid", "g2"]
            assert [o[1] for o in order] == [compute, compute, compute, compute, side, compute]
            assert "side_b2" not in core.timings
        assert core.proof is not None
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device


@pytest.mark.parametrize("granted", [True, False])
def test_a_large_plan_granted_b2s_own_stream_takes_the_small_path(granted, monkeypatch):
    """A plan too large for the small path by itself (fused_sets 1) runs B2 on the second side stream over its
    own scratch when its footprint was granted b2_stream (room for the second scratch), else the one-stream
    path; the working set counts the scratch either way."""
    import dataclasses

    from engine.backends.gpu import footprint, pipeline  # noqa: PLC0415
    from engine.backends.gpu import msm as gmsm  # noqa: PLC0415

    monkeypatch.setattr(gmsm, "fused_sets", lambda plan: 1)  # as a large plan: A, B1, C in launch sets of one
    monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", "0")
    import inspect

    order = []
    real_acc = gmsm.accumulate
    acc_sig = inspect.signature(real_acc)

    def accumulate(*args, **kw):
        bound = acc_sig.bind(*args, **kw).arguments
        if bound["group"] == "g2":
            order.append(bound["stream"])
        return real_acc(*args, **kw)

    monkeypatch.setattr(gmsm, "accumulate", accumulate)
    zkey, witness = _tiny("bn128")
    with fake_driver() as fake:
        backend = _backend()
        fp = backend.plan_key(zkey)
        assert fp.b2_stream  # the fake device's budget holds the second scratch
        if not granted:
            early = (fp.early_w, fp.early_h) if fp.early_w is not None else None
            fp = dataclasses.replace(fp, b2_stream=False, working_set_bytes=footprint.proof_working_set(
                zkey.curve, int(zkey.n_vars), int(zkey.domain_size), fp.plan_w, fp.plan_h, backend.device.sm_count,
                early=early, bins=fp.sort_bins))
        key = backend.load_key(zkey, fp)
        assert pipeline.working_set_bytes(key, backend.device.sm_count) == fp.working_set_bytes
        staged = backend.stage(key, witness)
        assert (staged.state.b2_scratch is not None) == granted
        core = backend.compute(staged).wait()
        assert core.proof is not None
        side2 = backend.side_streams.get(0, 1) if granted else None
        assert order == [side2 if granted else backend.ctx.compute_stream(0)]  # the B2 (G2) accumulation's stream
        assert ("side_b2" in core.timings) == granted
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device


def test_ic_table_bound_matches_the_kernel_and_tables_are_made_at_load(monkeypatch):
    """epilogue.IC_TABLE_MAX is groth16_check.cuh's WARP_IC_MAX (the early phase reads IC_i's table exactly
    when n_public <= it), and load_key makes one byte table per IC_i then, after delta2's."""
    import re
    from pathlib import Path

    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    text = (Path(__file__).resolve().parent.parent / "cuda_kernels/groth16_check.cuh").read_text()
    assert int(re.search(r"WARP_IC_MAX = (\d+);", text).group(1)) == gepi.IC_TABLE_MAX
    tables = []
    real = gepi.launch
    monkeypatch.setattr(gepi, "launch", lambda mod, name, *a, **k: (tables.append((name, a[-1])) if name.startswith("fb_table")
                                                                    else None, real(mod, name, *a, **k))[1])
    zkey, _ = _tiny("bn128")
    with fake_driver():
        backend = _backend()
        key = backend.load_key(zkey)
        ep = key.epilogue
        g1b, g2b = 2 * zkey.curve.n8q, 4 * zkey.curve.n8q
        assert zkey.n_public == 3 and gepi.ic_tables(3) == 3
        want = [ep.tables.offset(i * gepi.FB_ROWS * g1b) for i in range(3)] + [ep.tables.offset(3 * gepi.FB_ROWS * g1b)]
        want += [ep.tables.offset(gepi.FB_ROWS * (3 * g1b + g2b + i * g1b)) for i in range(3)]
        assert [t for _, t in tables] == want and ep.tables.nbytes == gepi.FB_ROWS * (6 * g1b + g2b)
        backend.unload_key(key)
        backend.close()
    assert gepi.ic_tables(gepi.IC_TABLE_MAX + 1) == 0


@pytest.mark.parametrize("front", [True, False])
def test_a_small_proofs_streams_order_the_front_before_h_and_the_final_after_everything(front, monkeypatch):
    """Happens-before on the device (tests/stream_order.py): the front's last kernel (quotient_h, which
    writes h into st.c) is done before the H MSM's sort reads st.c, and the final phase starts after the
    front, B2's accumulation and the join.  With the front beside, the A, B1, C sort of the witness and
    the front are not ordered either way (they may run together)."""

    monkeypatch.setenv("GROTH16_FRONT_BESIDE", "1" if front else "0")
    monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", "0")  # the mid phase's products (test_products_beside_*: with)
    with _one_proof_ordered() as (backend, key, st, core, order, proof):
        compute = backend.ctx.compute_stream(0).handle
        side = backend.side_streams.get(0, 0).handle
        (quotient,) = [x for x in proof if x.name == "quotient_h"]
        (evaluate,) = [x for x in proof if x.name == "evaluate_ab"]
        assert quotient.stream == evaluate.stream == (side if front else compute)
        (h_count,) = [x for x in proof if x.name == "msm_count" and x.first_arg == st.c.ptr]
        assert h_count.stream == compute and order.before(quotient, h_count)
        w_counts = [x for x in proof if x.name == "msm_count" and x.first_arg == st.witness.ptr]
        assert len(w_counts) == 2  # B2's own sort on side2, A B1 C's on compute
        (w_compute,) = [x for x in w_counts if x.stream == compute]
        assert not order.before(quotient, w_compute)
        assert order.before(w_compute, evaluate) == (not front)  # the one-stream order: A, B1, C, then the front
        final = [x for x in proof if x.stream == compute][-1]
        g2_acc = [x for x in proof if x.name.startswith("msm_accumulate") and x.stream not in (compute, side)]
        assert g2_acc and all(order.before(x, final) for x in g2_acc + [quotient, evaluate, h_count])
        assert all(order.before(x, final) for x in proof if x.stream == side)
        assert core.proof is not None


def test_the_front_goes_beside_from_its_measured_domain_and_can_be_forced(monkeypatch):
    from engine.backends.gpu import proof_streams  # noqa: PLC0415

    monkeypatch.delenv("GROTH16_FRONT_BESIDE", raising=False)
    bound = proof_streams.FRONT_BESIDE_MIN_DOMAIN
    assert 1 << 14 < bound <= 1 << 17  # between the domains measured: no gain at 2^14, a gain at 2^17
    assert proof_streams.front_beside(bound) and proof_streams.front_beside(1 << 17)
    assert not proof_streams.front_beside(bound // 2)
    monkeypatch.setenv("GROTH16_FRONT_BESIDE", "0")
    assert not proof_streams.front_beside(1 << 20)
    monkeypatch.setenv("GROTH16_FRONT_BESIDE", "1")
    assert proof_streams.front_beside(1 << 10)


def test_b2_beside_can_be_switched_off_for_experiments(monkeypatch):
    from engine.backends.gpu import proof_streams  # noqa: PLC0415
    from engine.backends.gpu import msm as gmsm  # noqa: PLC0415

    small = gmsm.plan_msm(1000, 254)
    assert gmsm.fused_sets(small) > 1 and proof_streams.b2_beside(small)
    monkeypatch.setenv("GROTH16_B2_BESIDE", "0")
    assert not proof_streams.b2_beside(small)


def test_a_key_granted_the_binned_sort_bins_h_and_the_witness_as_told(monkeypatch):
    """Where a key's footprint grants the bins (msm_sort.py), its proofs sort H's scalars through them (msm_bin,
    then the two regrouping passes) and the witness through them too where msm_sort.WITNESS_BINS says so, else
    directly; a key without the grant sorts both directly."""
    from engine.backends.gpu import msm_sort  # noqa: PLC0415

    monkeypatch.setenv("GROTH16_B2_BESIDE", "0")  # the one-stream path: H, then the witness's one sort
    monkeypatch.setattr(msm_sort, "BINNED_CURVES", frozenset({"bn128", "bls12381"}))
    monkeypatch.setattr(msm_sort, "BIN_MAX_WINDOWS", 128)  # the tiny key's witness: c = 2 (no kernel runs here)
    zkey, witness = _tiny("bn128")
    binned = ["msm_bin", "msm_regroup", "msm_regroup"]
    for sort, granted, witness_bins in (("binned", True, True), ("binned", True, False), ("direct", False, True)):
        monkeypatch.setattr(msm_sort, "SORT", sort)
        monkeypatch.setattr(msm_sort, "WITNESS_BINS", witness_bins)
        names = []
        real = msm_sort.launch
        with fake_driver():
            backend = _backend()
            key = backend.load_key(zkey)
            assert key.footprint.sort_bins == granted
            staged = backend.stage(key, witness)
            assert staged.state.sort.binned == granted
            monkeypatch.setattr(msm_sort, "launch", lambda mod, name, *a, **k: (names.append(name), real(mod, name, *a, **k))[1])
            backend.compute(staged).wait()
            monkeypatch.setattr(msm_sort, "launch", real)
            placements = [n for n in names if n in ("msm_scatter", "msm_bin", "msm_regroup")]
            want = ((binned + (binned if witness_bins else ["msm_scatter"])) if granted
                    else ["msm_scatter", "msm_scatter"])
            assert placements == want, (sort, witness_bins, placements)
            backend.unload_key(key)
            backend.close()
