"""Queued proofs of one key computed as one batch (scheduler/pipeline.py with a backend that
has compute_batch), on the simulated device with batching attached to it."""
import anyio
import numpy as np
import pytest

from engine.api import Engine
from engine.errors import EngineError
from scheduler.simulated import SimKey
from scheduler.timeline import MemorySink, Stage
from test_scheduler_pipeline import assert_at_rest, sim_config, wait_for


def attach_batching(eng, limit: int, fail: list | None = None):
    """Give every simulated device compute_batch (each proof computed in reverse order, the
    results handed back in the input's) and max_batch; returns the batch sizes seen."""
    sizes = []
    for w in eng.devices:
        dev = w.backend

        def compute_batch(staged, slot=0, dev=dev):
            keys = {id(s.key) for s in staged}
            assert len(keys) == 1, "a batch mixed keys"
            assert len(staged) <= limit
            sizes.append(len(staged))
            if fail and len(staged) > 1:  # as the GPU's: a batch of one is the plain compute
                raise fail[0]
            return [dev.compute(s, slot=slot) for s in reversed(staged)][::-1]

        dev.compute_batch = compute_batch
        dev.max_batch = lambda key: limit
    return sizes


def witness(i: int) -> np.ndarray:
    """A witness whose public input and digest are both i + 1: a result given to the wrong
    partition shows as public != digest."""
    w = np.zeros((64, 4), dtype=np.uint64)
    w[1, 0] = i + 1
    return w


async def test_queued_proofs_of_one_key_go_through_as_batches():
    sink = MemorySink()
    cfg = sim_config(simulation=dict(gpu_ms=20, upload_ms=0))
    async with Engine(cfg, on_event=sink) as eng:
        sizes = attach_batching(eng, limit=4)
        a = await eng.load_key(SimKey("a", witness_rows=64))
        b = await eng.load_key(SimKey("b", witness_rows=64))
        out = {}

        async def job(name, key, first):
            out[name] = await eng.prove(key, partitions=[witness(first + i) for i in range(7)])

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(job, "a", a, 0)
                tg.start_soon(job, "b", b, 100)
        for name, first in (("a", 0), ("b", 100)):
            proofs = out[name]
            assert [p.public[0] for p in proofs] == [first + i + 1 for i in range(7)]
            assert all(p.digest == p.public[0] and p.key == name for p in proofs)
        assert sum(sizes) == 14 and max(sizes) > 1  # some proofs shared a compute call
        starts = [e for e in sink if e.stage == Stage.GPU_START]
        ends = [e for e in sink if e.stage == Stage.GPU_END]
        assert len(starts) == len(ends) == 14
        await eng.drain()
        assert_at_rest(eng)


async def test_batch_limit_one_is_the_plain_path():
    async with Engine(sim_config()) as eng:
        sizes = attach_batching(eng, limit=1)
        key = await eng.load_key(SimKey("k", witness_rows=64))
        proofs = await eng.prove(key, partitions=[witness(i) for i in range(5)])
        assert [p.public[0] for p in proofs] == [1, 2, 3, 4, 5]
        assert sizes == []  # compute_batch never called
        await eng.drain()
        assert_at_rest(eng)


async def test_a_failed_batch_is_retried_proof_by_proof_and_the_engine_serves_on():
    """A batch whose shared work fails (one error for all of its proofs) is not its proofs' failure:
    each is staged and computed again alone; before, all of them failed with it."""
    fail = [EngineError("simulated batch failure")]
    sink = MemorySink()
    async with Engine(sim_config(simulation=dict(gpu_ms=10)), on_event=sink) as eng:
        sizes = attach_batching(eng, limit=8, fail=fail)
        key = await eng.load_key(SimKey("k", witness_rows=64))
        proofs = await eng.prove(key, partitions=[witness(i) for i in range(6)])
        assert [p.public[0] for p in proofs] == [1, 2, 3, 4, 5, 6]
        assert any(n > 1 for n in sizes)  # a batch was tried, and failed
        assert any(e.stage == Stage.MEM_WAIT and "alone" in (e.detail or "") for e in sink)
        await eng.drain()
        assert_at_rest(eng)


async def test_a_proof_that_fails_alone_too_fails_and_the_engine_serves_on():
    fail = [EngineError("simulated batch failure")]
    async with Engine(sim_config(simulation=dict(gpu_ms=10))) as eng:
        attach_batching(eng, limit=8, fail=fail)
        dev = eng.devices[0].backend
        real = dev.compute

        def broken(staged, slot=0):
            raise EngineError("simulated device fault alone")

        dev.compute = broken
        key = await eng.load_key(SimKey("k", witness_rows=64))
        with pytest.raises(EngineError, match="simulated device fault alone"):
            await eng.prove(key, partitions=[witness(i) for i in range(6)])
        fail.clear()
        dev.compute = real
        await eng.drain()
        assert_at_rest(eng)
        proofs = await eng.prove(key, partitions=[witness(i) for i in range(3)])
        assert [p.public[0] for p in proofs] == [1, 2, 3]


async def test_one_proofs_own_error_in_a_batch_is_that_proofs_alone():
    """A batch whose Pendings fail one by one (one proof's witness out of range, its check failed):
    only that partition's job fails; before, the first error went to every proof after it."""
    from engine.backends.base import Pending
    from engine.errors import UnreducedWitnessError

    async with Engine(sim_config(simulation=dict(gpu_ms=10))) as eng:
        dev = eng.devices[0].backend
        seen = []

        def failing(pending):
            def wait():  # as the GPU's: raised after the done event, the proof's memory back
                pending.wait()
                raise UnreducedWitnessError(3)
            return Pending(wait)

        def compute_batch(staged, slot=0):
            pendings = [dev.compute(s, slot=slot) for s in staged]
            seen.append(len(staged))
            return [failing(p) if int(s.witness[1, 0]) == 2 else p for s, p in zip(staged, pendings)]

        dev.compute_batch = compute_batch
        dev.max_batch = lambda key: 8
        key = await eng.load_key(SimKey("k", witness_rows=64))
        results = {}

        async def job(i):
            try:
                results[i] = (await eng.prove(key, witness(i))).public[0]
            except UnreducedWitnessError as exc:
                results[i] = str(exc)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(job, i)
        assert any(n > 1 for n in seen)
        assert results[1].endswith("value 3 is not reduced modulo r")
        assert all(results[i] == i + 1 for i in range(6) if i != 1), results
        await eng.drain()
        assert_at_rest(eng)


async def test_cancelled_job_in_a_batch_returns_its_budget_after_the_device():
    sink = MemorySink()
    async with Engine(sim_config(simulation=dict(gpu_ms=60)), on_event=sink) as eng:
        attach_batching(eng, limit=8)
        key = await eng.load_key(SimKey("k", witness_rows=64))
        start = eng.stats()
        scope = anyio.CancelScope()

        async def victim():
            with scope:
                await eng.prove(key, partitions=[witness(i) for i in range(6)])

        async with anyio.create_task_group() as tg:
            tg.start_soon(victim)
            await wait_for(sink, Stage.GPU_START, 1)
            scope.cancel()
        await eng.drain()
        assert_at_rest(eng)
        end = eng.stats()
        end.pop("synthesis_restarts"), start.pop("synthesis_restarts")
        assert end == start
        assert [p.public[0] for p in await eng.prove(key, partitions=[witness(i) for i in range(2)])] == [1, 2]


@pytest.mark.parametrize("slots", [2, 4])
async def test_with_several_slots_a_batch_fills_while_another_computes(slots):
    """A slot that frees while a batch of the key computes waits for a full batch (or for that
    batch's end) instead of taking the one proof that arrived: with 4 slots the H200 ran batches
    of 16 between lone proofs, each waiting out its whole tail (perf/RESULTS.md, h13tput)."""
    cfg = sim_config(compute_slots=slots, max_in_flight=32, simulation=dict(gpu_ms=30, upload_ms=1, vram="64GiB"))
    async with Engine(cfg) as eng:
        sizes = attach_batching(eng, limit=4)
        key = await eng.load_key(SimKey("k", witness_rows=64))
        with anyio.fail_after(30):
            proofs = await eng.prove(key, partitions=[witness(i) for i in range(21)])
        assert [p.public[0] for p in proofs] == list(range(1, 22))
        assert all(p.digest == p.public[0] for p in proofs)
        assert sum(sizes) == 21
        # the first proof runs alone (nothing computes yet); after it every batch is full but the last
        assert sizes[0] == 1 and all(s == 4 for s in sizes[1:-1]), sizes
        await eng.drain()
        assert_at_rest(eng)


async def test_a_batch_is_waited_for_in_one_waiter_hand_off():
    """A batch's k done events are waited for on one waiter thread in one hand-off, not one each (each
    a wake-up of a waiter and of the event loop under the GIL: t13tput); every proof still gets its own."""
    cfg = sim_config(simulation=dict(gpu_ms=20, upload_ms=0))
    async with Engine(cfg) as eng:
        sizes = attach_batching(eng, limit=4)
        lane = eng.devices[0].waiter_lane
        submits = []
        real = lane.submit
        lane.submit = lambda fn, *args: submits.append(fn) or real(fn, *args)
        key = await eng.load_key(SimKey("k", witness_rows=64))
        with anyio.fail_after(30):
            proofs = await eng.prove(key, partitions=[witness(i) for i in range(12)])
        assert [p.public[0] for p in proofs] == list(range(1, 13))
        assert all(p.digest == p.public[0] for p in proofs)
        assert sum(sizes) == 12 and max(sizes) > 1
        assert len(submits) == len(sizes)  # one hand-off a compute call, whatever its size
        await eng.drain()
        assert_at_rest(eng)
