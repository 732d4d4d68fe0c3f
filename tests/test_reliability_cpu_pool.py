"""The shared CPU process pool survives its workers: a killed worker fails only the task it ran (with an
EngineError), is replaced, and the engine keeps proving; a larger get_pool(n) cancels nobody's work."""
from __future__ import annotations

import os
import signal
import time

import pytest

from engine.algebra import msm
from engine.algebra.curves import BN254
from engine.api import Engine
from engine.groth16.kit import Groth16Kit
from engine.backends.cpu import CpuBackend
from engine.config import EngineConfig
from engine.errors import EngineError
from scheduler import cpu_pool
from scheduler.cpu_pool import CpuPool, CpuWorkerCrashedError

from conftest import FIXTURES

TINY = FIXTURES / "tiny" / "bn128"


def _wait(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _kill_all_workers(pool: CpuPool) -> list[int]:
    _wait(lambda: len(pool.pids()) == pool.size)
    pids = pool.pids()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for pid in pids:
        _wait(lambda pid=pid: pid not in pool.pids())
    return pids


def test_worker_killed_during_a_task_fails_only_that_task_and_is_replaced():
    pool = CpuPool(2)
    try:
        _wait(lambda: len(pool.pids()) == 2)
        victim = pool.pids()[0]
        running = [pool.submit(time.sleep, 1.5) for _ in range(2)]
        _wait(lambda: all(f.running() for f in running))
        time.sleep(0.2)  # both tasks are inside their workers
        os.kill(victim, signal.SIGKILL)
        outcomes = []
        for f in running:
            try:
                outcomes.append(f.result(timeout=30))
            except CpuWorkerCrashedError as exc:
                outcomes.append(exc)
        crashed = [o for o in outcomes if isinstance(o, CpuWorkerCrashedError)]
        assert len(crashed) == 1 and outcomes.count(None) == 1  # the other worker's task finished
        assert isinstance(crashed[0], EngineError) and "SIGKILL" in str(crashed[0])
        assert pool.map(abs, range(-6, 0)) == [6, 5, 4, 3, 2, 1]  # later tasks run
        assert pool.restarts == 1 and victim not in pool.pids()
    finally:
        pool.shutdown()


def test_worker_that_died_while_idle_is_replaced_before_it_gets_work():
    pool = CpuPool(2)
    try:
        killed = _kill_all_workers(pool)
        assert [pool.submit(divmod, 7, k).result(timeout=60) for k in (2, 3, 4)] == [(3, 1), (2, 1), (1, 3)]
        # a lane replaces its dead worker when it next takes a task: one lane or both took these three
        assert 1 <= pool.restarts <= 2
        assert not set(killed) & set(pool.pids())
    finally:
        pool.shutdown()


def test_task_errors_come_back_as_their_own_type_and_the_worker_lives_on():
    pool = CpuPool(1)
    try:
        with pytest.raises(ZeroDivisionError):
            pool.submit(divmod, 1, 0).result(timeout=60)
        assert pool.submit(divmod, 9, 4).result(timeout=60) == (2, 1) and pool.restarts == 0
    finally:
        pool.shutdown()


def test_cancelled_queued_task_is_never_run():
    pool = CpuPool(1)
    try:
        busy = pool.submit(time.sleep, 0.5)
        queued = pool.submit(os._exit, 3)  # would kill the worker if it ran
        assert queued.cancel()
        busy.result(timeout=60)
        assert pool.submit(abs, -1).result(timeout=60) == 1 and pool.restarts == 0
    finally:
        pool.shutdown()


def test_get_pool_with_another_size_cancels_no_one_elses_work():
    cpu_pool.shutdown()
    try:
        first = cpu_pool.get_pool(1)
        queued = [first.submit(time.sleep, 0.05) for _ in range(6)]
        bigger = cpu_pool.get_pool(3)  # another user asks for more workers
        assert bigger is first and bigger.size == 3
        assert [f.result(timeout=60) for f in queued] == [None] * 6  # none was cancelled
        assert cpu_pool.get_pool(2) is bigger  # a smaller request is served by the pool as it is
    finally:
        cpu_pool.shutdown()


def test_msm_uses_the_pool_again_after_its_workers_died(monkeypatch):
    from engine.algebra import ec

    monkeypatch.setitem(msm.PARALLEL_MIN_POINTS, 1, 8)
    pts = [ec.g1_mul(BN254, BN254.g1_gen, i * 104729 + 2) for i in range(40)]
    ks = [(i * 7919 + 3) % BN254.r for i in range(40)]
    want = msm.msm_g1(BN254, pts, ks, workers=1)
    assert not hasattr(msm, "_pool_disabled")  # no permanent one-process fallback any more
    pool = cpu_pool.get_pool(2)
    _kill_all_workers(pool)
    assert msm.msm_g1(BN254, pts, ks, workers=2) == want
    assert pool.restarts >= 2


class _EpilogueKillerKit(Groth16Kit):
    """The real Groth16 kit, except that one job's epilogue worker dies (os._exit) under it."""

    def __init__(self):
        self.kill_jobs = 0

    def finish(self, key, core, public):
        if self.kill_jobs:
            self.kill_jobs -= 1
            cpu_pool.get_pool().submit(os._exit, 70).result()
        return super().finish(key, core, public)


async def test_engine_keeps_proving_after_a_pool_worker_dies():
    """CpuBackend(workers=1) keeps MSMs off the pool, as the GPU backend does: only the epilogue uses it."""
    kit = _EpilogueKillerKit()
    async with Engine(EngineConfig(backend="cpu", synthesis_workers=1, idle_trim_s=None),
                      backends=[CpuBackend(workers=1)], kit=kit) as eng:
        key = await eng.load_key(TINY / "tiny.zkey")
        await eng.prove(key, TINY / "tiny.wtns")
        _kill_all_workers(cpu_pool.get_pool())  # killed while idle
        for _ in range(5):
            await eng.prove(key, TINY / "tiny.wtns")
        kit.kill_jobs = 1  # killed during a job's epilogue: that job fails with an EngineError
        with pytest.raises(CpuWorkerCrashedError, match="died"):
            await eng.prove(key, TINY / "tiny.wtns")
        proofs = await eng.prove(key, partitions=[TINY / "tiny.wtns"] * 3)
        assert len(proofs) == 3
        await eng.drain()
        assert eng.at_rest()
