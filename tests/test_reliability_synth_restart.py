"""A synthesis worker whose restart fails (killed while it starts: the OOM killer, an operator's kill, a fork
refused for a moment) must not break the pool for good nor leave queued tasks waiting forever: the start is tried
again, a task that cannot get a worker fails with a clear error, and a later task gets a fresh worker."""
from __future__ import annotations

import os

import anyio
import pytest

from engine.errors import WitnessGenerationError
from scheduler import synth_pool
from scheduler.simulated import simulated_synthesis
from scheduler.synth_pool import SynthesisCrashedError, SynthPool


def _exit_while_starting(conn, index: int) -> None:
    """A worker's body that dies before it says ready, as a worker killed while starting does."""
    os._exit(3)


@pytest.fixture
def failing_starts(monkeypatch):
    """`failing_starts.append(n)`: the next n worker processes started die before they are ready."""
    budget: list[int] = []
    real_start = synth_pool.start_process

    def start(process) -> None:
        if budget and budget[0] > 0:
            budget[0] -= 1
            process._target = _exit_while_starting
        real_start(process)

    monkeypatch.setattr(synth_pool, "start_process", start)
    return budget


async def _task(pool: SynthPool, options: dict, label: str = "task"):
    result = await pool.run(simulated_synthesis, (64, 0, 1, options), 64 * 32, label=label)
    result.release()
    return "ok"


async def test_a_restart_killed_while_starting_is_tried_again_and_queued_tasks_run(failing_starts):
    pool = SynthPool(1)
    await pool.start()
    try:
        failing_starts.append(1)  # the crashed worker's first replacement dies while starting
        outcomes: dict[str, object] = {}

        async def one(tag: str, options: dict) -> None:
            try:
                outcomes[tag] = await _task(pool, options, tag)
            except WitnessGenerationError as exc:
                outcomes[tag] = exc

        with anyio.fail_after(30):  # before: the queued task waited for ever on a slot nobody would free
            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "crash", {"crash": True})
                await anyio.sleep(0.05)
                tg.start_soon(one, "queued", {})
        assert isinstance(outcomes["crash"], SynthesisCrashedError)
        assert outcomes["queued"] == "ok"
        await pool.wait_ready()
        assert pool.at_rest() and pool.alive() == 1
    finally:
        await pool.close()


async def test_a_worker_that_cannot_start_fails_tasks_clearly_and_the_pool_heals_later(failing_starts):
    pool = SynthPool(1)
    await pool.start()
    try:
        failing_starts.append(100)  # every start fails, for now
        with pytest.raises(SynthesisCrashedError):
            await _task(pool, {"crash": True}, "crash")
        with anyio.fail_after(30):
            with pytest.raises(WitnessGenerationError, match="cannot start workers.*exited while starting"):
                await _task(pool, {}, "while no worker can start")
        failing_starts[0] = 0  # the machine recovers: the pool is not broken for good
        with anyio.fail_after(30):
            assert await _task(pool, {}, "after recovery") == "ok"
        await pool.wait_ready()  # not an error once the pool has its workers again
        assert pool.at_rest() and pool.alive() == 1
    finally:
        await pool.close()


async def test_a_worker_killed_while_the_pool_starts_is_started_again(failing_starts):
    failing_starts.append(1)
    pool = SynthPool(2)
    await pool.start()  # before: WitnessGenerationError "synthesis worker 0 exited while starting"
    try:
        assert pool.alive() == 2 and pool.at_rest()
        assert await _task(pool, {}) == "ok"
    finally:
        await pool.close()


async def test_a_pool_whose_workers_never_start_still_fails_to_start(failing_starts):
    failing_starts.append(100)
    pool = SynthPool(1)
    with pytest.raises(WitnessGenerationError, match="exited while starting"):
        await pool.start()
    await pool.close()
