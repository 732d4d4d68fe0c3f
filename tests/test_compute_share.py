"""compute_slots "auto": a key's proofs compute two at once where the memory costs the key nothing
(scheduler/compute_share.py), else alone; what the engine plans and reports for it."""
from types import SimpleNamespace

import anyio

from engine.algebra.curves import BLS12_381, BN254
from engine.backends.gpu.footprint import KeyShape, plan_key
from engine.config import ConfigError, EngineConfig
from scheduler.compute_share import AUTO_SLOTS, MIN_SHARED_MSM_S, auto_slot_count, plan_with_share
from scheduler.simulated import SimKey

import pytest

from test_key_footprint import PlanningDevice, bench_shape, engine_with

GiB = 1 << 30


def _plans(shape: KeyShape, budget: int):
    asked = []

    def plan(proofs):
        asked.append(proofs)
        return plan_key(shape, budget, proofs=proofs)
    return plan, asked


@pytest.mark.parametrize("curve, log_n", [(BN254, 18), (BN254, 20), (BN254, 22), (BLS12_381, 20), (BLS12_381, 24)])
def test_a_key_with_room_for_a_third_proof_shares_the_device(curve, log_n):
    plan, asked = _plans(bench_shape(curve, log_n), 125 * GiB)  # the whole H200
    fp, take = plan_with_share(plan, AUTO_SLOTS)
    alone = plan_key(bench_shape(curve, log_n), 125 * GiB, proofs=2)
    assert asked == [2, 3] and take == 1 and fp.proofs_in_flight == 3
    assert (fp.tier, fp.fold) == (alone.tier, alone.fold)


def test_a_third_proof_that_would_cost_the_key_a_fold_is_not_planned():
    shape = bench_shape(BN254, 21)
    alone, three = plan_key(shape, 8 * GiB, proofs=2), plan_key(shape, 8 * GiB, proofs=3)
    assert three.fold < alone.fold  # the premise: at 8 GiB room for three proofs costs folds
    plan, asked = _plans(shape, 8 * GiB)
    fp, take = plan_with_share(plan, AUTO_SLOTS)
    assert asked == [2, 3] and take == AUTO_SLOTS and fp == alone


def test_a_host_tier_key_shares_only_at_the_chunks_it_streams_alone():
    shape = bench_shape(BN254, 22)

    def plans(budget):
        asked = []

        def plan(proofs):
            asked.append(proofs)
            return plan_key(shape, budget, proofs=proofs, tier="host")
        return plan, asked

    plan, asked = plans(16 * GiB)  # room for three at the chunks of two
    fp, take = plan_with_share(plan, AUTO_SLOTS)
    assert fp.tier == "host" and take == 1 and fp.proofs_in_flight == 3 and asked == [2, 3]
    assert (fp.chunk_w, fp.chunk_h) == (plan_key(shape, 16 * GiB, proofs=2, tier="host").chunk_w,
                                        plan_key(shape, 16 * GiB, proofs=2, tier="host").chunk_h)
    alone, three = plan_key(shape, 8 * GiB, proofs=2, tier="host"), plan_key(shape, 8 * GiB, proofs=3, tier="host")
    assert three.chunk_w < alone.chunk_w  # the premise: at 8 GiB a third proof needs smaller chunks
    plan, asked = plans(8 * GiB)
    fp, take = plan_with_share(plan, AUTO_SLOTS)
    assert take == AUTO_SLOTS and fp.chunk_w == alone.chunk_w and fp.proofs_in_flight == 2


def c2_shape() -> KeyShape:
    """The C2 job's key (perf/c2.py: a BLS12-381 bench circuit of 2^24 - 3 constraints): the 2^16 bench key's
    wires and A, B coefficients per row (66559, 79556, 101637 at the 2^16 domain) at the 2^24 domain."""
    return KeyShape(BLS12_381, 66559 << 8, 1 << 24, 79556 << 8, 101637 << 8)


def test_the_c2_key_under_16_gib_shares_the_device_with_its_staging_over_a_and_b():
    """Its host-tier proofs at 2^21-wire chunks lay one of their two staging buffers over a and b (dead after
    the front): 3.5 GiB a proof instead of 4.4, so three fit beside its 3.2 GiB on the device at the chunks of two,
    and two compute at once."""
    from engine.backends.gpu.footprint import host_chunk_bytes, staging_over_front  # noqa: PLC0415

    shape = c2_shape()
    plan, asked = _plans(shape, 16 * GiB)
    fp, take = plan_with_share(plan, AUTO_SLOTS)
    assert fp.tier == "host" and take == 1 and fp.proofs_in_flight == 3 and asked == [2, 3]
    assert fp.chunk_w == plan_key(shape, 16 * GiB, proofs=2).chunk_w == 1 << 21
    assert staging_over_front(shape.domain, host_chunk_bytes(shape, fp.chunk_w, fp.chunk_h)) == 1
    assert fp.staging_over_front == fp.as_dict()["staging_over_front"] == 1
    assert "(one of its two staging buffers over its a and b)" in fp.describe()
    assert fp.device_bytes + 3 * fp.working_set_bytes <= 16 * GiB


def test_a_key_with_room_for_one_proof_computes_alone_and_one_slot_asks_for_nothing_more():
    shape = bench_shape(BLS12_381, 24)  # a 2^25 domain: its host tier has room for one proof at 14 GiB
    plan, asked = _plans(shape, 14 * GiB)
    fp, take = plan_with_share(plan, AUTO_SLOTS)
    assert fp.tier == "host" and fp.proofs_in_flight == 1 and take == AUTO_SLOTS and asked == [2, 3]
    plan, asked = _plans(bench_shape(BN254, 18), 125 * GiB)
    assert plan_with_share(plan, 1)[1] == 1 and asked == [2]


@pytest.mark.parametrize("curve", [BN254, BLS12_381])
def test_a_small_key_computes_alone(curve):
    """BN254 2^16's proofs measured level with two slots: its proofs keep the device to themselves."""
    plan, asked = _plans(bench_shape(curve, 16), 125 * GiB)
    fp, take = plan_with_share(plan, AUTO_SLOTS)
    assert fp.msm_cost < MIN_SHARED_MSM_S and take == AUTO_SLOTS and asked == [2] and fp.proofs_in_flight == 2


def test_a_plan_asked_for_three_that_keeps_room_for_one_only_is_alone():
    shape = bench_shape(BN254, 23)
    three = plan_key(shape, 16 * GiB, proofs=3)
    assert three.proofs_in_flight == 2  # the premise: three do not fit (two do, as with proofs=2)
    assert (three.fold, three.proofs_in_flight) == ((two := plan_key(shape, 16 * GiB, proofs=2)).fold,
                                                    two.proofs_in_flight)
    plan, asked = _plans(shape, 16 * GiB)
    fp, take = plan_with_share(plan, AUTO_SLOTS)
    assert asked == [2, 3] and take == AUTO_SLOTS and fp.proofs_in_flight == 2


def test_auto_gives_planning_backends_two_slots_and_others_one():
    assert auto_slot_count(PlanningDevice(bench_shape(BN254, 16))) == AUTO_SLOTS
    assert auto_slot_count(SimpleNamespace(name="cpu")) == 1


def test_compute_slots_config_takes_a_number_or_auto():
    assert EngineConfig().compute_slots == "auto"
    assert EngineConfig(compute_slots=3).compute_slots == 3
    with pytest.raises(ConfigError, match="neither a number nor"):
        EngineConfig(compute_slots="many")
    with pytest.raises(ConfigError, match="need at least 1"):
        EngineConfig(compute_slots=0)


async def test_the_engine_shares_the_device_for_a_key_with_room_and_reports_it():
    device = PlanningDevice(bench_shape(BN254, 20))
    async with engine_with(device, vram_budget=125 * GiB) as eng:
        assert eng.devices[0].locks.compute_slots.size == AUTO_SLOTS
        key = await eng.load_key(SimKey("k", witness_rows=64))
        assert device.loaded[0].proofs_in_flight == 3 and key.proofs_in_flight == 3
        assert key.proofs_computing == 2 and key._record.compute_slots == {0: 1}
        proofs = [await eng.prove(key, {}) for _ in range(2)]
        assert all(p.key == "k" for p in proofs)


async def test_the_engine_runs_a_key_without_room_alone_on_its_slots():
    device = PlanningDevice(bench_shape(BN254, 21))
    async with engine_with(device, vram_budget=8 * GiB) as eng:
        key = await eng.load_key(SimKey("k", witness_rows=64))
        assert device.loaded[0].proofs_in_flight == 2
        assert key.proofs_computing == 1 and key._record.compute_slots == {0: AUTO_SLOTS}


async def test_two_proofs_of_a_sharing_key_compute_at_once_and_of_a_lone_key_one_at_a_time():
    for log_n, budget, most in ((20, 125 * GiB, 2), (21, 8 * GiB, 1)):
        device = PlanningDevice(bench_shape(BN254, log_n))
        async with engine_with(device, vram_budget=budget, synthesis_workers=2) as eng:
            key = await eng.load_key(SimKey("k", witness_rows=64))
            seen = []
            eng.timeline.add_sink(lambda ev: seen.append(ev))
            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(eng.prove, key, {})
            computing, peak = 0, 0
            for ev in seen:
                if ev.stage == "GPU_START":
                    computing += 1
                    peak = max(peak, computing)
                elif ev.stage == "GPU_END":
                    computing -= 1
            assert peak == most, (log_n, peak)
