"""A small proof with the mid phase's products beside (proof_streams.products_beside) on the fake driver
(tests/fake_cuda.py): s·A and r·B1 as MSMs of s·w over A and r·w over B1, each on a stream of its own from the
upload on, the front and H on a fifth; which launches wait for which (tests/stream_order.py), where the sums
land, what the B1 sum reads back as, and the paths that keep the products as scalar products."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from fake_cuda import fake_driver
from test_gpu_tail_fake import _backend, _one_proof_ordered, _tiny


@contextlib.contextmanager
def _tiny_key():
    """The tiny BN254 key loaded on the fake driver with its fold tables (the small path's full-fold plan): yields
    the backend, the key and its witness; unloads and closes after."""
    zkey, witness = _tiny("bn128")
    with fake_driver():
        backend = _backend()
        key = backend.load_key(zkey)
        key.synchronize()
        yield backend, key, witness
        backend.unload_key(key)
        backend.close()


def _op(proof, op: int):
    return [x for x in proof if x.name == "groth16_pairing" and x.first_arg & 0xFFFFFFFF == op]


def test_the_products_run_beside_on_their_own_streams_and_the_join_waits_for_every_sum(monkeypatch):
    """fr_scale_pair on lane 2 after the upload; the s·w sort there and the r·w sort on lane 3, both after it;
    the front (evaluate .. quotient) and H's sort on lane 4; A and C (one sort of the witness) on the compute
    stream, B2 on side2; the join of op 6 on the tail's side stream after every accumulation and the early
    phase; no mid-phase products (op 4, op 1) or plain join (op 5); the final phase last, after the join and
    pi_b."""
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    for name in ("GROTH16_PRODUCTS_BESIDE", "GROTH16_FRONT_BESIDE", "GROTH16_PI_B_BESIDE"):
        monkeypatch.delenv(name, raising=False)
    with _one_proof_ordered() as (backend, key, st, core, order, proof):
        streams = backend.side_streams
        compute = backend.ctx.compute_stream(0).handle
        side, side2 = streams.get(0, 0).handle, streams.get(0, 1).handle
        lane_s, lane_r, lane_h = (streams.get(0, i).handle for i in (2, 3, 4))
        assert len({compute, side, side2, lane_s, lane_r, lane_h}) == 6
        n = key.n_wires
        scaled = st.products.scratch().scaled.ptr
        (scale,) = [x for x in proof if x.name == "fr_scale_pair"]
        assert scale.stream == lane_s and scale.first_arg == st.witness.ptr
        (sort_s,) = [x for x in proof if x.name == "msm_count" and x.first_arg == scaled]
        (sort_r,) = [x for x in proof if x.name == "msm_count" and x.first_arg == scaled + 32 * n]
        assert sort_s.stream == lane_s and sort_r.stream == lane_r
        assert order.before(scale, sort_s) and order.before(scale, sort_r)
        (quotient,), (evaluate,) = [x for x in proof if x.name == "quotient_h"], [x for x in proof
                                                                                    if x.name == "evaluate_ab"]
        (sort_h,) = [x for x in proof if x.name == "msm_count" and x.first_arg == st.c.ptr]
        assert quotient.stream == evaluate.stream == sort_h.stream == lane_h and order.before(quotient, sort_h)
        w_sorts = [x for x in proof if x.name == "msm_count" and x.first_arg == st.witness.ptr]
        assert sorted(x.stream for x in w_sorts) == sorted([side2, compute])
        (join,) = _op(proof, gepi.TAIL_JOIN_PRODUCTS)
        (early,) = _op(proof, gepi.TAIL_EARLY)
        assert join.stream == side
        assert not _op(proof, gepi.TAIL_MID_PRODUCTS) and not _op(proof, gepi.TAIL_MID) and not _op(proof, gepi.TAIL_JOIN)
        g1_work = [x for x in proof if x.name.startswith("msm_") and x.stream in (compute, lane_s, lane_r, lane_h)]
        assert {x.stream for x in g1_work} == {compute, lane_s, lane_r, lane_h}
        assert all(order.before(x, join) for x in g1_work + [early])
        assert not order.before(sort_s, w_sorts[0]) and not order.before(w_sorts[0], sort_s)  # side by side
        (pi_b,), (final,) = _op(proof, gepi.TAIL_PI_B), _op(proof, gepi.TAIL_FINAL_GIVEN_B)
        b2_acc = [x for x in proof if x.name.startswith("msm_accumulate") and x.stream == side2]
        assert pi_b.stream == side2 and b2_acc and all(order.before(x, pi_b) for x in b2_acc + [early])
        assert final is proof[-1] and final.stream == compute
        assert all(order.before(x, final) for x in proof if x is not final)
        assert st.b1_times_r and core.proof is not None
        assert {"gpu_msm_a_b1_c", "gpu_msm_h", "gpu_msm_b2", "gpu_check", "side_products", "side_front", "side_h",
                "side_b2", "side_pi_b"} <= set(core.timings)


def test_the_products_msms_read_the_scaled_witness_and_write_where_the_join_reads(monkeypatch):
    """s·w over A into the tail's scratch (groth16_check.cuh glv_sum), r·w over B1 into B1's slot, H into H's,
    each on its own sort and buckets; A and C (one launch set over the witness's sort) into theirs.  Queued
    after B2 in the order of their chains on the device: the front and H, the products, then A and C."""
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415
    from engine.backends.gpu import msm as gmsm  # noqa: PLC0415
    from engine.backends.gpu.footprint import acc_bytes  # noqa: PLC0415

    monkeypatch.delenv("GROTH16_PRODUCTS_BESIDE", raising=False)
    runs, sets = [], []
    real_run, real_sets = gmsm.run_msm, gmsm.accumulate_sets

    def run_msm(mod, group, plan, layout, bases, scalars, sort, b, acc, result, stream, *a, **k):
        runs.append((bases, int(getattr(scalars, "ptr", scalars)), id(sort), id(b), result, stream))
        return real_run(mod, group, plan, layout, bases, scalars, sort, b, acc, result, stream, *a, **k)

    def accumulate_sets(mod, group, plan, layout, msms, sort, b, acc, stream, *a, **k):
        sets.append((group, list(msms), id(sort), stream))
        return real_sets(mod, group, plan, layout, msms, sort, b, acc, stream, *a, **k)

    monkeypatch.setattr(gmsm, "run_msm", run_msm)
    monkeypatch.setattr(gmsm, "accumulate_sets", accumulate_sets)
    with _tiny_key() as (backend, key, witness):
        staged = backend.stage(key, witness)
        st = staged.state
        res, c_ptr, scaled = st.results.ptr, st.c.ptr, st.products.scratch().scaled.ptr  # (freed after it)
        core = backend.compute(staged).wait()
        curve = key.curve
        g2 = acc_bytes(curve, True)
        pr = st.products.scratch()
        lanes = [backend.side_streams.get(0, i) for i in (2, 3, 4)]
        n = key.n_wires
        assert runs == [(key.h, c_ptr, id(pr.h[0]), id(pr.h[1]), res + 4 * g2, lanes[2]),
                        (key.b1, scaled + 32 * n, id(pr.r[0]), id(pr.r[1]), res + g2, lanes[1]),
                        (key.a, scaled, id(pr.s[0]), id(pr.s[1]), res + 5 * g2 + gepi.glv_sum_offset(curve), lanes[0])]
        compute = backend.ctx.compute_stream(0)
        assert [x for x in sets if x[3] is compute] == [("g1", [(key.a, res), (key.c, res + 3 * g2)], id(st.sort), compute)]
        assert core.proof is not None


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_the_scratch_slot_the_products_write_is_the_kernels_glv_sum(curve):
    """glv_sum_offset is groth16_check.cuh's glv_sum (fixed1(6): after the proof area, four G1 and one G2 table
    products): the last XYZZ slot of the tail's scratch."""
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    c = curve_by_name(curve)
    assert gepi.glv_sum_offset(c) == gepi.proof_bytes(c) + 4 * (4 * c.n8q) + 2 * (4 * c.n8q)
    assert gepi.glv_sum_offset(c) + 4 * c.n8q == gepi.proof_bytes(c) + gepi.scratch_bytes(c)


def test_r_zero_keeps_the_scalar_products_and_the_b1_sum_as_it_is(monkeypatch):
    """With r = 0 (drawn with chance 2^-254; the edge test forces it) r·B1 is infinity and B1's slot could not
    give back the B1 sum: that proof takes the small path's products (op 4, then the join of op 5)."""
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    monkeypatch.delenv("GROTH16_PRODUCTS_BESIDE", raising=False)
    draws = iter([0, 12345])
    real = gepi.blinding_scalars
    monkeypatch.setattr(gepi, "blinding_scalars", lambda c: real(c, draw=lambda _n: next(draws)))
    with _one_proof_ordered() as (backend, key, st, core, order, proof):
        assert st.products is not None and st.blinding_r == 0 and not st.b1_times_r
        assert not [x for x in proof if x.name == "fr_scale_pair"]
        assert _op(proof, gepi.TAIL_MID_PRODUCTS) and _op(proof, gepi.TAIL_JOIN) and not _op(proof, gepi.TAIL_JOIN_PRODUCTS)
        assert core.proof is not None


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_b1_slot_holding_r_b1_reads_back_as_the_b1_sum(curve):
    """ResidentCore with b1_times = r: B1's slot holds r·B1 (the products beside), read back as B1; the other
    sums as they are."""
    from engine.algebra import ec  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.algebra.limbs import from_ints  # noqa: PLC0415
    from engine.backends.gpu import epilogue as gepi, pipeline, points  # noqa: PLC0415

    c = curve_by_name(curve)
    g1_acc, g2_acc = pipeline.acc_bytes(c, False), pipeline.acc_bytes(c, True)
    raw = np.random.default_rng(11).integers(0, 256, 5 * g2_acc + gepi.proof_bytes(c), dtype=np.uint8)
    b1, r = ec.g1_mul(c, c.g1_gen, 987654321), 0x1234567890ABCDEF % c.r
    x, y = ec.g1_mul(c, b1, r)
    mont = lambda v: v * (1 << (64 * c.q_limbs64)) % c.q  # noqa: E731
    xyzz = from_ints([mont(x), mont(y), mont(1), mont(1)], c.q_limbs64).reshape(-1).view(np.uint8)
    raw[g2_acc:g2_acc + g1_acc] = xyzz
    assert points.decode_xyzz_g1(c, raw[g2_acc:g2_acc + g1_acc]) == (x, y)
    plain = pipeline._core(c, raw, {})
    scaled = pipeline._core(c, raw, {}, r)
    assert plain.pi_b1_0 == (x, y) and scaled.pi_b1_0 == b1
    assert (scaled.pi_a0, scaled.pi_c0, scaled.pi_h) == (plain.pi_a0, plain.pi_c0, plain.pi_h)


def test_the_products_go_beside_up_to_their_domain_and_can_be_forced(monkeypatch):
    from engine.backends.gpu import proof_streams  # noqa: PLC0415
    from engine.backends.gpu import msm as gmsm  # noqa: PLC0415

    small = gmsm.plan_msm(1 << 13, 254)
    assert proof_streams.b2_beside(small)
    monkeypatch.delenv("GROTH16_PRODUCTS_BESIDE", raising=False)
    assert proof_streams.products_beside(small, proof_streams.PRODUCTS_MAX_DOMAIN)
    assert not proof_streams.products_beside(small, 2 * proof_streams.PRODUCTS_MAX_DOMAIN)
    monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", "0")
    assert not proof_streams.products_beside(small, 1 << 14)
    monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", "1")
    assert proof_streams.products_beside(small, 1 << 20)
    monkeypatch.setenv("GROTH16_B2_BESIDE", "0")  # not a small path: never
    assert not proof_streams.products_beside(small, 1 << 14)


@pytest.mark.parametrize("forced", [None, "1"])
def test_a_proof_beside_others_staged_or_in_flight_keeps_the_scalar_products_unless_forced(forced, monkeypatch):
    """The products beside run for a proof alone on its backend (proof_streams.products_now: no other proof staged or
    in flight, waiting.Flight.idle): beside others the device is busy already and their MSMs and launches cost
    throughput; GROTH16_PRODUCTS_BESIDE=1 runs them always."""
    if forced is None:
        monkeypatch.delenv("GROTH16_PRODUCTS_BESIDE", raising=False)
    else:
        monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", forced)
    with _tiny_key() as (backend, key, witness):
        alone = backend.stage(key, witness)
        core_alone = backend.compute(alone).wait()
        first, second = backend.stage(key, witness), backend.stage(key, witness)
        p1 = backend.compute(first)  # the second is staged meanwhile
        p2 = backend.compute(second)  # the first is in flight
        core2, core1 = p2.wait(), p1.wait()
        dropped = backend.stage(key, witness)  # staged, then discarded: not counted after
        backend.discard(dropped).wait()
        again = backend.stage(key, witness)
        core_again = backend.compute(again).wait()
        assert alone.state.b1_times_r and again.state.b1_times_r
        assert first.state.b1_times_r == second.state.b1_times_r == (forced == "1")
        assert ("side_products" in core2.timings) == (forced == "1") and "side_products" in core_again.timings
        assert all(c.proof is not None for c in (core_alone, core1, core2, core_again))


def test_a_staged_proof_dropped_unused_stops_counting():
    from engine.backends.gpu.waiting import Flight  # noqa: PLC0415

    class Staged:  # (a dataclass with eq: unhashable, as engine.backends.base.Staged)
        __hash__ = None

    flight = Flight()
    a, b = Staged(), Staged()
    flight.staged(a)
    flight.staged(b)
    assert not flight.idle()
    flight.unstaged(a)
    assert not flight.idle()
    del b
    assert flight.idle()
