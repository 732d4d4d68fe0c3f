"""The pipeline under load and under cancellation, on the simulated device (design.md §5-§6)."""
import random

import anyio
import pytest

from engine.api import Engine
from engine.config import EngineConfig, SimulationConfig
from engine.errors import BudgetError, EngineError
from scheduler.simulated import SimKey
from scheduler.timeline import MemorySink, Stage

GiB = 1 << 30


def sim_config(**overrides) -> EngineConfig:
    sim = dict(devices=1, vram="4GiB", working_set="1GiB", witness_rows=64, synth_ms=1, upload_ms=1,
               stage_host_ms=0, gpu_ms=3, epilogue_ms=0, verify_ms=0)
    sim.update(overrides.pop("simulation", {}))
    base = dict(backend="simulated", synthesis_workers=2, compute_slots=1, idle_trim_s=None)
    base.update(overrides)
    return EngineConfig(simulation=SimulationConfig(**sim), **base)


async def wait_for(sink, stage, job, timeout=10.0):
    with anyio.fail_after(timeout):
        while not any(e.stage == stage and e.job == job for e in sink):
            await anyio.sleep(0.002)


def assert_at_rest(eng):
    assert eng.at_rest(), eng.stats()
    for w in eng.devices:
        assert w.backend.in_use == 0  # the simulated pool holds nothing either


@pytest.mark.parametrize("lock_mode", ["split", "single"])
async def test_200_random_jobs_with_tight_budgets_all_finish_in_order_of_arrival(lock_mode):
    rng = random.Random(1234)
    sink = MemorySink()
    cfg = sim_config(lock_mode=lock_mode, compute_slots=2, host_budget=64 * 32 * 3,
                     simulation=dict(devices=2, vram="4GiB", working_set="1GiB", gpu_ms=2, synth_ms=1))
    results = {}
    async with Engine(cfg, on_event=sink) as eng:
        small = await eng.load_key(SimKey("small", witness_rows=64, working_set_bytes=GiB // 2))
        big = await eng.load_key(SimKey("big", witness_rows=64, working_set_bytes=3 * GiB))

        async def job(i):
            key = big if rng.random() < 0.2 else small
            n = rng.randint(1, 3)
            results[i] = await eng.prove(key, partitions=[{} for _ in range(n)])
            assert len(results[i]) == n and all(p.key == key.label for p in results[i])

        with anyio.fail_after(120):  # a deadlock shows up as this timeout
            async with anyio.create_task_group() as tg:
                for i in range(200):
                    tg.start_soon(job, i)
                    await anyio.sleep(rng.random() * 0.004)
        assert sorted(results) == list(range(200))  # no job lost
        assert_at_rest(eng)
        for w in eng.devices:  # every device call came from the device's own (bound) threads
            assert w.backend.calls and not w.backend.foreign_calls
        peaks = [w.backend.peak_in_use for w in eng.devices]
        assert max(peaks) <= 4 * GiB  # never beyond the device: the budget prevented every OOM
        assert sum(e.stage == Stage.BUDGET_WAIT for e in sink) > 200  # demand far above the budget
    assert not any(e.stage in (Stage.FAILED, Stage.CANCELLED) for e in sink)
    # first come, first served: grants happen in the order requests arrived (host and VRAM)
    for wait, granted in ((Stage.BUDGET_WAIT, Stage.BUDGET_GRANTED), (Stage.HOST_WAIT, Stage.HOST_GRANTED)):
        asked = [(e.job, e.partition) for e in sink if e.stage == wait]
        got = [(e.job, e.partition) for e in sink if e.stage == granted]
        assert asked == got
    # never two locks: each partition's memory phase ends before it asks for compute
    seen = {}
    for e in sink:
        seen.setdefault((e.job, e.partition), []).append(e.stage)
    for stages in seen.values():
        if Stage.GPU_START in stages:
            assert stages.index(Stage.MEM_END) < stages.index(Stage.GPU_START)
            # the budget comes back only after the done event
            assert stages.index(Stage.GPU_END) < stages.index(Stage.BUDGET_RELEASED)


# (victim's stage to cancel in, simulation overrides, engine overrides, blocker's synthesis options)
STAGES = {
    "host_wait": (Stage.HOST_WAIT, {}, {"host_budget": 64 * 32}, {"synth_ms": 400}),
    "synthesis": (Stage.SYNTH_START, {}, {}, None),
    "budget_wait": (Stage.BUDGET_WAIT, {"vram": "1GiB", "gpu_ms": 400}, {}, {}),
    "memory_wait": (Stage.MEM_WAIT, {"stage_host_ms": 400}, {}, {}),
    "memory": (Stage.MEM_START, {"stage_host_ms": 400}, {}, None),
    # one slot, held by the blocker: the victim surely waits for compute when it is cancelled
    "compute_wait": (Stage.GPU_WAIT, {"gpu_ms": 400}, {"compute_slots": 1}, {}),
    "compute": (Stage.GPU_START, {"gpu_ms": 400}, {}, None),
    "epilogue": (Stage.EPILOGUE_START, {"epilogue_ms": 400}, {}, None),
    "verify": (Stage.VERIFY_START, {"verify_ms": 400}, {}, None),
}


@pytest.mark.parametrize("stage", list(STAGES))
async def test_job_cancelled_in_any_stage_releases_everything_it_held(stage):
    victim_stage, sim, engine_over, blocker = STAGES[stage]
    sink = MemorySink()
    async with Engine(sim_config(simulation=sim, **engine_over), on_event=sink) as eng:
        key = await eng.load_key("k")
        start = eng.stats()
        blocker_result = {}
        async with anyio.create_task_group() as tg:
            if blocker is not None:  # job 1 holds what the victim (job 2) then waits for
                async def run_blocker():
                    blocker_result["proof"] = await eng.prove(key, blocker)

                tg.start_soon(run_blocker)
                # the blocker must hold the compute slot before the victim asks for it
                await wait_for(sink, Stage.GPU_START if stage == "compute_wait" else Stage.SYNTH_START, 1)
            victim_job = 2 if blocker is not None else 1
            victim_scope = anyio.CancelScope()
            times = {}

            async def run_victim():
                with victim_scope:
                    await eng.prove(key, {"synth_ms": 5000} if stage == "synthesis" else {})
                    raise AssertionError("the victim was not cancelled")
                times["returned"] = anyio.current_time()

            tg.start_soon(run_victim)
            await wait_for(sink, victim_stage, victim_job)
            times["cancelled"] = anyio.current_time()
            victim_scope.cancel()
        assert times["returned"] - times["cancelled"] < 0.2  # the caller does not wait for the device
        await eng.drain()
        assert_at_rest(eng)
        end = eng.stats()
        end.pop("synthesis_restarts"), start.pop("synthesis_restarts")  # a killed worker was replaced
        assert end == start  # budgets back at their start values
        assert any(e.stage == Stage.CANCELLED and e.job == victim_job for e in sink)
        if stage == "compute_wait":  # staged, never computed: its memory went back through discard
            assert any(call == "discard" for call, _ in eng.devices[0].backend.calls)
        if blocker is not None:
            assert blocker_result["proof"].key == "k"  # the other job was not disturbed
        assert (await eng.prove(key, {})).key == "k"  # and the engine still serves


async def test_key_whose_proof_needs_more_than_the_whole_budget_fails_at_load():
    async with Engine(sim_config(simulation={"vram": "4GiB"})) as eng:
        with anyio.fail_after(1):
            with pytest.raises(BudgetError, match=r"huge.* one proof's working set is 5\.0 GiB.* budget is 4\.0 GiB"):
                await eng.load_key(SimKey("huge", witness_rows=64, working_set_bytes=5 * GiB))
        assert eng.vram.capacity(0) == 4 * GiB  # nothing taken
        small = await eng.load_key("small")
        assert (await eng.prove(small, {})).key == "small"
        assert_at_rest(eng)


async def test_job_needing_more_than_the_budget_left_by_keys_fails_at_once_never_negative():
    config = sim_config(simulation={"vram": "8GiB", "key_resident": "3GiB"})
    async with Engine(config) as eng:
        big = await eng.load_key(SimKey("big", witness_rows=64, working_set_bytes=4 * GiB))  # 3 + 4 <= 8
        await eng.load_key(SimKey("other", witness_rows=64, working_set_bytes=GiB))  # 3 + 1 <= 5
        assert eng.vram.capacity(0) == 2 * GiB
        with anyio.fail_after(1):
            with pytest.raises(BudgetError) as info:
                await eng.prove(big, {})
        text = str(info.value)
        assert "needs 4.0 GiB" in text and "left for proofs on a device is 2.0 GiB" in text and "-" not in text.split(":")[-1]


async def test_witness_larger_than_the_host_budget_fails_at_once():
    async with Engine(sim_config(host_budget=1024)) as eng:
        key = await eng.load_key("k")  # 64 rows × 32 B = 2 KiB per witness
        with anyio.fail_after(1):
            with pytest.raises(BudgetError, match="host memory"):
                await eng.prove(key, {})


async def test_device_fault_fails_only_its_job_and_returns_its_budget():
    async with Engine(sim_config(compute_slots=2)) as eng:
        key = await eng.load_key("k")
        outcomes = []

        async def run(options):
            try:
                outcomes.append((await eng.prove(key, options)).key)
            except EngineError as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(run, {"device_fail": True} if i == 2 else {})
        errors = [o for o in outcomes if isinstance(o, EngineError)]
        assert len(errors) == 1 and "injected fault" in str(errors[0])
        assert outcomes.count("k") == 5
        await eng.drain()
        assert_at_rest(eng)


async def test_partitions_spread_over_devices():
    sink = MemorySink()
    async with Engine(sim_config(simulation={"devices": 3, "vram": "1GiB", "gpu_ms": 20}), on_event=sink) as eng:
        key = await eng.load_key("k")
        proofs = await eng.prove(key, partitions=[{} for _ in range(9)])
    assert {p.device for p in proofs} == {0, 1, 2}


async def test_a_kits_inline_steps_run_on_the_event_loop_others_on_threads():
    """A kit's `inline(step, key, obj)` keeps that step off the worker threads (a device-made proof's
    finish and verify are microseconds of work: their hand-offs cost 2-3 ms each at 300 proofs/s);
    without it, or when it says no, the step runs on a thread as before."""
    import threading

    from scheduler.simulated import SimulatedKit

    class Kit(SimulatedKit):
        def __init__(self, inline_steps):
            super().__init__(witness_rows=64, synth_ms=1, epilogue_ms=0, verify_ms=0)
            self.inline_steps, self.threads = inline_steps, {}

        def inline(self, step, key, obj):
            return step in self.inline_steps

        def finish(self, key, core, public):
            self.threads["finish"] = threading.get_ident()
            return super().finish(key, core, public)

        def verify(self, key, proof):
            self.threads["verify"] = threading.get_ident()
            return super().verify(key, proof)

    for steps in ({"finish", "verify"}, {"verify"}, set()):
        kit = Kit(steps)
        async with Engine(sim_config(), kit=kit) as eng:
            key = await eng.load_key(SimKey("k", witness_rows=64, working_set_bytes=GiB // 2))
            loop_thread = threading.get_ident()
            proofs = await eng.prove(key, partitions=[{}, {}])
            assert len(proofs) == 2
        for step in ("finish", "verify"):
            assert (kit.threads[step] == loop_thread) == (step in steps), (steps, step)
