"""The asyncio Engine under long use: many proofs with errors, timeouts and cancellations in between, key loads and
unloads cut short by asyncio's own cancellation (which goes through anyio's shields), witness files that change
while a worker reads them; nothing leaks and every error is one EngineError."""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import random
import signal
import threading
import time

import anyio
import numpy as np
import pytest

from engine import Engine, EngineConfig, EngineError, InputFileError
from engine.config import SimulationConfig
from scheduler.shm import ShmBlock
from scheduler.simulated import SimKey
from scheduler.synth_pool import FileSegment, SynthesisCrashedError, SynthPool, _synthesise
from scheduler.task_errors import rebuild_error

from conftest import EXAMPLES

SUDOKU = EXAMPLES / "bn128"


def sim_config(**sim) -> EngineConfig:
    params = dict(devices=1, vram="4GiB", working_set="1GiB", key_resident="512MiB", witness_rows=64, synth_ms=1,
                  upload_ms=1, stage_host_ms=0, gpu_ms=2, epilogue_ms=0, verify_ms=0)
    params.update(sim)
    return EngineConfig(backend="simulated", synthesis_workers=2, compute_slots=1, idle_trim_s=None,
                        simulation=SimulationConfig(**params))


def slow(eng: Engine, name: str, seconds: float) -> None:
    """Make every device's backend.<name> take `seconds` on its device thread (a GPU key load takes that long)."""
    for worker in eng.devices:
        real = getattr(worker.backend, name)

        def slowed(*args, real=real):
            time.sleep(seconds)
            return real(*args)

        setattr(worker.backend, name, slowed)


def device_key_bytes(eng: Engine) -> list[int]:
    return [w.backend.key_bytes for w in eng.devices]


async def _cancel(how: str, call, after: float) -> None:
    """Run `call()` and cut it short after `after` seconds the way an asyncio application does."""
    if how == "wait_for":
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(call(), after)
    elif how == "task.cancel":
        task = asyncio.ensure_future(call())
        await asyncio.sleep(after)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:  # anyio's own cancel scopes were always honoured; kept as the reference
        with pytest.raises(TimeoutError):
            with anyio.fail_after(after):
                await call()


# ---------------------------------------------------------------- key loads and unloads cut short


@pytest.mark.parametrize("how", ["wait_for", "task.cancel", "fail_after"])
async def test_a_key_load_cut_short_leaves_nothing_on_the_device_or_in_the_budget(how):
    async with Engine(sim_config(devices=2)) as eng:
        capacity = eng.stats()["vram_capacity"]
        slow(eng, "load_key", 0.3)
        await _cancel(how, lambda: eng.load_key(SimKey("k", witness_rows=64)), 0.05)
        assert device_key_bytes(eng) == [0, 0], "the device load ran on after the cancel and was never undone"
        assert eng.stats()["vram_capacity"] == capacity and eng._keys == []
        assert eng.at_rest(), eng.stats()
        key = await eng.load_key(SimKey("k2", witness_rows=64))  # the engine goes on serving
        assert (await eng.prove(key, np.zeros((64, 4), np.uint64))) is not None


@pytest.mark.parametrize("how", ["wait_for", "task.cancel", "fail_after"])
async def test_a_key_unload_cut_short_still_gives_the_whole_key_back(how):
    async with Engine(sim_config(devices=2)) as eng:
        capacity = eng.stats()["vram_capacity"]
        key = await eng.load_key(SimKey("k", witness_rows=64))
        assert device_key_bytes(eng) == [512 << 20] * 2
        slow(eng, "unload_key", 0.3)
        await _cancel(how, lambda: eng.unload_key(key), 0.05)
        # once the unload has begun on the devices it is finished, on every device, and the budget is whole
        assert device_key_bytes(eng) == [0, 0]
        assert eng.stats()["vram_capacity"] == capacity and eng._keys == []
        assert eng.at_rest(), eng.stats()


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_random_loads_unloads_and_proofs_under_asyncio_timeouts_leak_nothing(seed):
    rng = random.Random(seed)
    async with Engine(sim_config(devices=2, synth_ms=2, upload_ms=2, gpu_ms=3)) as eng:
        capacity = eng.stats()["vram_capacity"]
        keys: list = []

        async def one(i: int) -> None:
            what, limit = rng.choice(["load", "unload", "prove"]), rng.uniform(0, 0.02)
            try:
                if what == "load":
                    keys.append(await asyncio.wait_for(eng.load_key(SimKey(f"k{i}", witness_rows=64)), limit))
                elif keys:
                    key = rng.choice(keys)
                    call = eng.unload_key(key) if what == "unload" else eng.prove(key, np.zeros((64, 4), np.uint64))
                    await asyncio.wait_for(call, limit)
            except (TimeoutError, EngineError):
                pass

        for round_ in range(25):
            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(one, round_ * 8 + i)
        for key in keys:
            await eng.unload_key(key)
        await eng.drain()
        assert eng._keys == [] and device_key_bytes(eng) == [0, 0]
        assert eng.stats()["vram_capacity"] == capacity
        assert eng.at_rest(), eng.stats()


# ---------------------------------------------------------------- a witness file that changes while it is read


def _segment_of(path: str, offset: int, rows: int) -> tuple[dict, FileSegment]:
    return {"prime": 0}, FileSegment(path, offset, (rows, 4), "<u8")


def _run_task(fn, args, capacity: int) -> BaseException | str:
    """A synthesis task run as a worker runs it (in this process): its error as the caller gets it."""
    block = ShmBlock.create(capacity)
    try:
        reply = pickle.loads(_synthesise((fn, args, block.name, capacity)))
    finally:
        block.release()
    if reply[0] != "error":
        return reply[0]
    return rebuild_error(*reply[1:], fallback=EngineError, prefix="synthesis failed: ")


def test_a_witness_file_cut_short_before_its_values_are_copied_is_an_input_error_naming_it(tmp_path):
    path = tmp_path / "w.wtns"
    path.write_bytes(bytes(64 + 100))  # the header said 64 rows of 32 bytes from byte 64: the file ends first
    error = _run_task(_segment_of, (str(path), 64, 64), 64 * 32)
    assert isinstance(error, InputFileError), repr(error)
    assert str(path) in str(error) and "ends before" in str(error)


def test_a_witness_file_removed_before_its_values_are_copied_is_an_input_error_naming_it(tmp_path):
    path = tmp_path / "gone.wtns"
    error = _run_task(_segment_of, (str(path), 64, 64), 64 * 32)
    assert isinstance(error, InputFileError), repr(error)
    assert str(error) == f"{path}: no such file"


def test_a_workers_oserror_keeps_the_file_it_names(tmp_path):
    """OSError's filename is no arg: a worker's FileNotFoundError came back as "(2, 'No such file...')"."""
    error = _run_task(open, (str(tmp_path / "nope"),), 64)
    assert isinstance(error, FileNotFoundError) and error.filename == str(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(error)


async def test_a_synthesis_worker_killed_by_a_signal_names_the_signal():
    """SIGBUS is what a worker gets when a mapped input file shrinks under it: "exit code -7" said nothing."""
    pool = SynthPool(1)
    await pool.start()
    try:
        with pytest.raises(SynthesisCrashedError) as info:
            await pool.run(signal.raise_signal, (signal.SIGBUS,), 64, label="w.wtns")
        assert "SIGBUS" in str(info.value) and "-7" not in str(info.value)
        assert "changed on disk" in str(info.value)
    finally:
        await pool.close()


# ---------------------------------------------------------------- closed from another task


async def test_an_engine_entered_in_one_task_closes_from_another():
    """A notebook's cells, or an app's start and stop hooks, are tasks of their own: the close raised anyio's
    "Attempted to exit cancel scope in a different task than it was entered in"."""
    eng = Engine(sim_config())
    await asyncio.create_task(eng.__aenter__())  # cell 1
    key = await asyncio.create_task(eng.load_key(SimKey("k", witness_rows=64)))  # cell 2
    jobs = [asyncio.create_task(eng.prove(key, np.zeros((64, 4), np.uint64))) for _ in range(4)]
    await asyncio.sleep(0.01)
    with anyio.fail_after(20):
        await asyncio.create_task(eng.__aexit__(None, None, None))  # cell 3: drains the jobs, then stops
    assert all(job.done() and job.result() is not None for job in jobs)
    with pytest.raises(EngineError, match="shut down"):
        await eng.prove(key, np.zeros((64, 4), np.uint64))
    assert eng.synth.alive() == 0 and device_key_bytes(eng) == [0]


async def test_closing_from_another_task_does_not_cancel_the_task_that_entered():
    """The close cancelled the engine's task group, whose cancel scope was the entering task's: that task got a
    CancelledError nobody had asked for."""
    eng = Engine(sim_config())
    await eng.__aenter__()
    key = await eng.load_key(SimKey("k", witness_rows=64))
    job = asyncio.create_task(eng.prove(key, np.zeros((64, 4), np.uint64)))
    closer = asyncio.create_task(eng.__aexit__(None, None, None))
    with anyio.fail_after(20):
        await asyncio.sleep(0.2)  # this task is not the engine's: a close elsewhere leaves it alone
        await closer
    assert job.done() and job.result() is not None
    await eng.__aexit__(None, None, None)  # and its own close, later, is a no-op


# ---------------------------------------------------------------- many proofs in a row


def _resources() -> dict:
    import gc  # noqa: PLC0415

    gc.collect()  # a cancelled job's traceback holds its witness's mapping until the collector runs
    pid = os.getpid()
    return {
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": sum(1 for t in threading.enumerate() if t.name != "AnyIO worker thread"),  # the loop's idle pool
        "children": len(multiprocessing.active_children()),
        "shm": sum(1 for n in os.listdir("/dev/shm") if f"-{pid}-" in n) if os.path.isdir("/dev/shm") else 0,
        "rss_mib": int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20,
    }


async def test_proofs_with_errors_timeouts_and_cancels_in_between_leave_nothing_growing(tmp_path):
    bad = tmp_path / "bad.wtns"
    bad.write_bytes((SUDOKU / "sudoku.wtns").read_bytes()[:-40])
    good = SUDOKU / "sudoku.wtns"
    rng = random.Random(3)
    async with Engine(EngineConfig(backend="cpu", synthesis_workers=2)) as eng:
        key = await eng.load_key(SUDOKU / "sudoku.zkey")
        for _ in range(3):
            await eng.prove(key, good)
        before = _resources()
        outcomes: dict[str, int] = {}
        for i in range(36):
            kind = ["ok", "bad", "wait_for", "cancel", "gather", "fail_after"][i % 6]
            limit = rng.uniform(0.0, 0.15)
            try:
                if kind == "ok":
                    await eng.prove(key, good)
                elif kind == "bad":
                    await eng.prove(key, bad)
                elif kind == "wait_for":
                    await asyncio.wait_for(eng.prove(key, good), limit)
                elif kind == "fail_after":
                    with anyio.fail_after(limit):
                        await eng.prove(key, good)
                elif kind == "cancel":
                    task = asyncio.ensure_future(eng.prove(key, good))
                    await asyncio.sleep(limit)
                    task.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await task
                else:
                    out = await asyncio.gather(eng.prove(key, good), eng.prove(key, bad), return_exceptions=True)
                    assert not isinstance(out[0], BaseException) and isinstance(out[1], EngineError), out
                outcome = "ok"
            except TimeoutError:
                outcome = "timeout"
            except EngineError as exc:
                assert kind == "bad" and str(bad) in str(exc), exc
                outcome = type(exc).__name__
            outcomes[f"{kind}:{outcome}"] = outcomes.get(f"{kind}:{outcome}", 0) + 1
        await eng.drain()
        assert eng.at_rest(), eng.stats()
        assert eng.stats()["synthesis_workers_alive"] == 2  # a job cancelled mid-synthesis has its worker replaced
        after = _resources()
        assert outcomes["ok:ok"] == 6 and outcomes["bad:FormatError"] == 6, outcomes
        assert after["children"] == before["children"] and after["threads"] <= before["threads"], (before, after)
        assert after["fds"] <= before["fds"] + 4 and after["shm"] <= before["shm"] + 4, (before, after)
        assert after["rss_mib"] <= before["rss_mib"] + 40, (before, after)
        assert (await eng.prove(key, good)).public == (await eng.prove(key, good)).public


async def test_two_hundred_jobs_with_failures_and_cancels_on_the_simulated_device_end_at_rest():
    async with Engine(sim_config(devices=2)) as eng:
        key = await eng.load_key(SimKey("k", witness_rows=64))
        zeros = np.zeros((64, 4), np.uint64)
        before = _resources()

        async def job(i: int):
            if i % 7 == 3:
                return await eng.prove(key, {"fail": "injected"})
            if i % 11 == 5:
                return await asyncio.wait_for(eng.prove(key, zeros), 0.001 * (i % 5))
            return await eng.prove(key, zeros)

        results = await asyncio.gather(*(job(i) for i in range(200)), return_exceptions=True)
        odd = [r for r in results if isinstance(r, BaseException) and not isinstance(r, (EngineError, TimeoutError))]
        assert odd == []
        assert sum(isinstance(r, EngineError) for r in results) == len(range(3, 200, 7))
        await eng.drain()
        assert eng.at_rest(), eng.stats()
        after = _resources()
        assert after["children"] == before["children"] and after["fds"] <= before["fds"] + 4, (before, after)


def test_a_witness_emptied_between_its_size_check_and_its_mapping_is_a_format_error(tmp_path, monkeypatch):
    """A writer truncating the file at that moment made mmap raise "cannot mmap an empty file", a ValueError that
    reached the caller as itself."""
    import engine.formats.binfile as binfile  # noqa: PLC0415
    from engine import FormatError, read_wtns  # noqa: PLC0415

    path = tmp_path / "w.wtns"
    path.write_bytes((SUDOKU / "sudoku.wtns").read_bytes())

    class Emptied:
        ACCESS_READ = binfile.mmap.ACCESS_READ

        @staticmethod
        def mmap(fd, length, **kw):
            os.truncate(path, 0)
            raise ValueError("cannot mmap an empty file")

    monkeypatch.setattr(binfile, "mmap", Emptied)
    with pytest.raises(FormatError) as info:
        read_wtns(path)
    assert str(info.value).startswith(f"{path}: ")


async def test_load_unload_cycles_of_batched_keys_leave_no_per_key_state_behind():
    """The pipeline kept a batch queue and a running count per (device, key) ever proved, never dropped: memory
    that grew with every key a long-running service loaded."""
    from test_scheduler_batch import attach_batching  # noqa: PLC0415

    async with Engine(sim_config(devices=2)) as eng:
        attach_batching(eng, limit=4)
        for i in range(30):
            key = await eng.load_key(SimKey(f"k{i}", witness_rows=64))
            await eng.prove(key, partitions=[np.zeros((64, 4), np.uint64)] * 3)
            await eng.unload_key(key)
        pipeline = eng._pipeline
        assert (pipeline._waiting, pipeline._batches_running, pipeline._batch_changed) == ({}, {}, {})
        assert eng.at_rest() and device_key_bytes(eng) == [0, 0]


async def test_an_on_event_listener_that_raises_costs_no_proof_and_no_memory(caplog):
    """A listener's bug (on_event) raised inside the pipeline, budgets and device calls: 98 of 100 proofs failed
    with its RuntimeError, reservations were never given back and the device ran out of memory."""
    calls = [0]

    def buggy(event) -> None:
        calls[0] += 1
        if calls[0] % 7 == 0:
            raise RuntimeError(f"listener bug at {event.stage}")

    async with Engine(sim_config(devices=2), on_event=buggy) as eng:
        key = await eng.load_key(SimKey("k", witness_rows=64))
        results = await asyncio.gather(*(eng.prove(key, np.zeros((64, 4), np.uint64)) for _ in range(60)),
                                       return_exceptions=True)
        assert [r for r in results if isinstance(r, BaseException)] == []
        await eng.drain()
        assert eng.at_rest(), eng.stats()
    assert calls[0] > 100
    said = [r for r in caplog.records if "listener bug" in r.getMessage() or (r.exc_info and "listener bug" in
                                                                              str(r.exc_info[1]))]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]  # said once, not once an event


# ---------------------------------------------------------------- a witness given as a pipe


async def _loop_stall(during) -> float:
    """The longest the event loop went without running a 10 ms ticker while `during` ran."""
    worst, stop = [0.0], []

    async def ticker() -> None:
        last = time.monotonic()
        while not stop:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            worst[0], last = max(worst[0], now - last), now

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)
    try:
        await during()
    finally:
        stop.append(True)
        await tick
    return worst[0]


async def test_a_witness_pipe_whose_writer_is_slow_does_not_freeze_the_engine(tmp_path):
    """The pipe was read whole on the event loop: every job and caller of the engine stood still until its writer
    wrote, and for ever if it never did (no timeout could fire)."""
    fifo = tmp_path / "w.fifo"
    os.mkfifo(fifo)
    data = (SUDOKU / "sudoku.wtns").read_bytes()

    def writer() -> None:
        time.sleep(1.5)
        with open(fifo, "wb") as f:
            f.write(data)

    async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
        key = await eng.load_key(SUDOKU / "sudoku.zkey")
        threading.Thread(target=writer, daemon=True).start()
        proofs = []

        async def both() -> None:
            piped = asyncio.create_task(eng.prove(key, fifo))
            proofs.append(await eng.prove(key, SUDOKU / "sudoku.wtns"))  # not held up by the pipe
            proofs.append(await piped)

        stall = await _loop_stall(both)
        assert stall < 0.8, f"the event loop stood still {stall:.2f} s"  # was the writer's 1.5 s
        assert proofs[0].public == proofs[1].public


async def test_a_witness_pipe_that_never_gets_a_writer_times_out_and_the_engine_serves_on(tmp_path):
    fifo = tmp_path / "never.fifo"
    os.mkfifo(fifo)
    try:
        async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
            key = await eng.load_key(SUDOKU / "sudoku.zkey")
            with anyio.fail_after(10):  # before: wait_for never fired, the loop being stuck in open()
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(eng.prove(key, fifo), 0.3)
                assert (await eng.prove(key, SUDOKU / "sudoku.wtns")) is not None
    finally:
        try:  # let the abandoned reader go (open for writing, then close: it reads an empty pipe)
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


async def test_a_close_cut_short_by_a_timeout_fails_each_job_with_a_clear_error_and_leaves_nothing():
    """Jobs that the close's task group cancelled (the close itself cancelled before it had cancelled them) came
    back with no proof and no error: `prove` failed with "TypeError: 'NoneType' object is not subscriptable"."""
    before = _resources()
    eng = Engine(sim_config(gpu_ms=20))
    await eng.__aenter__()
    key = await eng.load_key(SimKey("k", witness_rows=64))
    jobs = [asyncio.create_task(eng.prove(key, np.zeros((64, 4), np.uint64))) for _ in range(8)]
    await asyncio.sleep(0.01)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(eng.__aexit__(None, None, None), 0.02)
    results = await asyncio.gather(*jobs, return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    assert failed and all(isinstance(r, EngineError) and "shut down" in str(r) for r in failed), failed
    assert eng._state == "closed" and eng.synth.alive() == 0 and device_key_bytes(eng) == [0]
    assert _resources()["children"] == before["children"]


@pytest.mark.parametrize("failing", [1, 2])
async def test_a_key_load_failing_on_a_device_raises_its_error_not_an_exception_group(failing):
    """The devices' loads run in a task group: one device out of memory reached the caller as anyio's
    "ExceptionGroup: unhandled errors in a TaskGroup", which `except EngineError` misses."""
    from engine import DeviceOutOfMemoryError  # noqa: PLC0415

    async with Engine(sim_config(devices=2)) as eng:
        for worker in eng.devices[:failing]:
            def refuse(key, index=worker.index):
                raise DeviceOutOfMemoryError(f"device {index}: out of memory loading the key")

            worker.backend.load_key = refuse
        with pytest.raises(DeviceOutOfMemoryError, match="out of memory loading the key") as info:
            await eng.load_key(SimKey("k", witness_rows=64))
        assert not isinstance(info.value, BaseExceptionGroup)
        assert device_key_bytes(eng) == [0, 0] and eng._keys == [] and eng.at_rest(), eng.stats()


def test_cut_short_loads_and_a_close_from_another_task_under_uvloop():
    import uvloop  # noqa: PLC0415 - a test dependency, as in test_engine_api

    async def main() -> None:
        eng = Engine(sim_config(devices=2))
        await asyncio.create_task(eng.__aenter__())
        slow(eng, "load_key", 0.2)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(eng.load_key(SimKey("k", witness_rows=64)), 0.05)
        assert device_key_bytes(eng) == [0, 0] and eng._keys == []
        key = await eng.load_key(SimKey("k2", witness_rows=64))
        assert (await eng.prove(key, np.zeros((64, 4), np.uint64))) is not None
        await asyncio.create_task(eng.__aexit__(None, None, None))
        assert device_key_bytes(eng) == [0, 0] and eng.synth.alive() == 0

    uvloop.run(main())
