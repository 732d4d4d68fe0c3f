"""A cancelled job is not computed: one that has not reached its compute phase never does, one in flight
stops at its next stage boundary, and its budgets come back at once (CPU backend, slowed stages)."""
from __future__ import annotations

import asyncio
import threading
import time

import anyio

from engine.api import Engine
from engine.backends.cpu import CpuBackend
from engine.config import EngineConfig
from scheduler.timeline import MemorySink, Stage

from conftest import FIXTURES

TINY = FIXTURES / "tiny" / "bn128"
STAGE_S = 0.15  # each MSM of the slowed backend; a whole compute takes 5 of them


class SlowCpuBackend(CpuBackend):
    """The CPU backend with every G1 MSM slowed down, counting the stages it runs."""

    def __init__(self):
        super().__init__(workers=1)
        self.msms = 0
        self.evaluations = 0
        self.gate = threading.Event()  # MSMs wait for it (set: they do not wait)
        self.gate.set()
        self._lock = threading.Lock()

    def evaluate(self, key, witness):
        with self._lock:
            self.evaluations += 1
        return super().evaluate(key, witness)

    def msm_g1(self, curve, bases, scalars):
        time.sleep(STAGE_S)
        self.gate.wait(30)
        with self._lock:
            self.msms += 1
        return super().msm_g1(curve, bases, scalars)


async def _wait_for(predicate, timeout: float = 30.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.005)


async def test_cancelled_jobs_are_not_computed_and_the_one_in_flight_stops_at_a_stage_boundary():
    backend = SlowCpuBackend()
    sink = MemorySink()
    cfg = EngineConfig(backend="cpu", synthesis_workers=2, compute_slots=1, idle_trim_s=None, verify=False)
    async with Engine(cfg, backends=[backend], on_event=sink) as eng:
        key = await eng.load_key(TINY / "tiny.zkey")
        tasks = [asyncio.ensure_future(eng.prove(key, TINY / "tiny.wtns")) for _ in range(12)]
        await _wait_for(lambda: backend.msms >= 1)  # the first proof is inside its compute phase
        for task in tasks:
            task.cancel()
        t_cancel = time.perf_counter()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        await eng.drain()
        drained_s = time.perf_counter() - t_cancel
        assert eng.at_rest()  # every budget, lock and slot back
    assert backend.evaluations == 1, f"{backend.evaluations} computes started for 1 job in flight"
    assert backend.msms <= 3, f"the cancelled compute ran {backend.msms} of 5 MSMs"
    assert drained_s < 2 * STAGE_S + 1.0, drained_s
    assert not any(e.stage == Stage.GPU_END for e in sink)
    assert sum(e.stage == Stage.JOB_CANCELLED for e in sink) == 12


async def test_job_cancelled_while_staged_gives_its_budgets_back_at_once():
    backend = SlowCpuBackend()
    sink = MemorySink()
    # two device threads: the second job stages while the first computes, then waits for the one slot
    cfg = EngineConfig(backend="cpu", synthesis_workers=2, compute_slots=1, device_threads=2, idle_trim_s=None,
                       verify=False)
    async with Engine(cfg, backends=[backend], on_event=sink) as eng:
        key = await eng.load_key(TINY / "tiny.zkey")
        backend.gate.clear()  # the first proof stays inside its compute phase until the second is gone
        try:
            first = asyncio.ensure_future(eng.prove(key, TINY / "tiny.wtns"))
            await _wait_for(lambda: any(e.stage == Stage.GPU_START and e.job == 1 for e in sink))
            second = asyncio.ensure_future(eng.prove(key, TINY / "tiny.wtns"))
            await _wait_for(lambda: any(e.stage == Stage.GPU_WAIT and e.job == 2 for e in sink))  # staged
            second.cancel()
            await asyncio.gather(second, return_exceptions=True)
            await _wait_for(lambda: any(e.stage == Stage.HOST_RELEASED and e.job == 2 for e in sink), timeout=1)
        finally:
            backend.gate.set()
        proof = await first  # the first job is untouched
        assert proof.public
        await eng.drain()
        assert eng.at_rest()
    order = [(e.stage, e.job) for e in sink]
    first_done = order.index((Stage.GPU_END, 1))
    # the second job's budgets came back while the first was still computing, not after a compute of its own
    assert order.index((Stage.BUDGET_RELEASED, 2)) < first_done
    assert order.index((Stage.HOST_RELEASED, 2)) < first_done
    assert (Stage.GPU_START, 2) not in order
    assert backend.evaluations == 1
