"""A circuit's log() lines when its witness is computed in the Engine's synthesis worker.

`witness` and the direct `prove --wasm` showed them; the same proof through the Engine (`--synthesis-workers`,
`--config`, `--timeline`, the API) dropped them: the worker's logging went nowhere.  The worker now carries
them back with the task's reply (bounded: the first and last lines, and a count of those left out) and the
engine re-emits them under the same logger ("engine.witness.calculator"), where the CLI shows them."""
from __future__ import annotations

import asyncio
import logging
import pickle

import numpy as np
import pytest

from conftest import REPO, circom_compile, run_engine

from scheduler import synth_pool, task_log
from scheduler.shm import ShmBlock

CIRCUIT = REPO / "tests" / "circuits" / "witness" / "guarded.circom"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """(zkey, wasm, dir) of guarded.circom (logs "x is <x>", asserts x != 5), with the engine's own setup."""
    out = tmp_path_factory.mktemp("guarded")
    r1cs, wasm = circom_compile(CIRCUIT, "bn128", out)
    zkey = out / "guarded.zkey"
    done = run_engine("setup", r1cs, zkey, "--quiet")
    assert done.returncode == 0, done.stderr
    (out / "in.json").write_text('{"x": 3}')
    (out / "bad.json").write_text('{"x": 5}')
    return zkey, wasm, out


@pytest.mark.snarkjs
def test_prove_through_the_engine_shows_the_circuits_log_lines(guarded):
    zkey, wasm, out = guarded
    done = run_engine("prove", zkey, "--wasm", wasm, "--input", out / "in.json", out / "p.json", out / "pub.json",
                      "--synthesis-workers", "1", "--backend", "cpu")
    assert done.returncode == 0, done.stderr
    assert f"{wasm}: log: x is 3" in done.stderr, done.stderr


@pytest.mark.snarkjs
def test_a_failed_assertion_in_the_worker_shows_the_lines_before_it_then_the_error(guarded):
    zkey, wasm, out = guarded
    done = run_engine("prove", zkey, "--wasm", wasm, "--input", out / "bad.json", out / "bad_p.json",
                      out / "bad_pub.json", "--synthesis-workers", "1", "--backend", "cpu")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines == [f"{wasm}: log: x is 5",
                     f"error: {wasm}: circuit assertion failed for {out / 'bad.json'}: Error in template Guarded_0 "
                     "line: 9"], done.stderr
    assert not (out / "bad_p.json").exists()


@pytest.mark.snarkjs
def test_the_api_gives_the_lines_to_the_engine_witness_calculator_logger(guarded, caplog):
    from engine import Engine, EngineConfig

    zkey, wasm, _ = guarded

    async def main():
        async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
            key = await eng.load_key(str(zkey), wasm=str(wasm))
            await eng.prove(key, {"x": 7})

    with caplog.at_level(logging.INFO, logger="engine.witness.calculator"):
        asyncio.run(main())
    records = [r for r in caplog.records if r.name == "engine.witness.calculator"]
    assert [r.getMessage() for r in records] == [f"{wasm}: log: x is 7"]
    assert records[0].witness == "inputs for guarded.wasm"  # which job's witness it came from


def _task_reply(fn):
    """A synthesis task run as a worker runs it, in this process: (reply, carried log lines)."""
    block = ShmBlock.create(64)
    try:
        return pickle.loads(synth_pool._synthesise_logged((fn, (), block.name, block.size)))
    finally:
        block.release()


def _chatty(n: int, width: int = 10):
    def task():
        log = logging.getLogger("engine.witness.calculator")
        for i in range(n):
            log.info("line %d %s", i, "x" * width)
        return {}, [[1, 0, 0, 0]]
    return task


def test_a_circuit_that_logs_without_end_carries_back_its_first_and_last_lines_only():
    n = 50_000
    reply, logs = _task_reply(_chatty(n))
    assert reply[0] == "ok"
    keep = task_log.LOG_KEEP_FIRST + task_log.LOG_KEEP_LAST
    assert len(logs.lines) == keep
    assert logs.left_out == n - keep
    assert logs.lines[0][2].startswith("line 0 ") and logs.lines[-1][2].startswith(f"line {n - 1} ")
    assert len(pickle.dumps(logs)) < 200 * keep


def test_a_huge_log_line_is_cut_and_says_so():
    reply, logs = _task_reply(_chatty(1, width=10 << 20))
    assert reply[0] == "ok"
    (line,) = logs.lines
    assert len(line[2]) < task_log.LOG_LINE_MAX + 100
    assert line[2].endswith(f"... ({(10 << 20) + 7 - task_log.LOG_LINE_MAX} more characters)"), line[2][-80:]


def test_the_lines_left_out_are_said_in_the_parent(caplog):
    reply, logs = _task_reply(_chatty(task_log.LOG_KEEP_FIRST + task_log.LOG_KEEP_LAST + 5))
    caplog.clear()  # the task ran in this process: its own records
    with caplog.at_level(logging.INFO, logger="engine.witness.calculator"):
        task_log.emit(logs, "in.json")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == task_log.LOG_KEEP_FIRST + task_log.LOG_KEEP_LAST + 1
    assert messages[task_log.LOG_KEEP_FIRST].startswith("in.json: 5 more log lines left out here (the first ")


def test_lines_below_the_callers_level_are_not_shown(caplog):
    reply, logs = _task_reply(_chatty(3))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        task_log.emit(logs, "in.json")
    assert not caplog.records


def chatty_task(n: int, width: int):
    """A synthesis task (module level: a worker imports it) that logs n lines of `width` characters."""
    log = logging.getLogger("engine.witness.calculator")
    for i in range(n):
        log.info("line %d %s", i, "y" * width)
    return {}, np.zeros((4, 4), dtype="<u8")


def test_a_long_log_comes_back_whole_under_uvloop(caplog):
    """A reply longer than the pipe holds (64 KiB) was read from a descriptor uvloop had made non-blocking: the
    read stopped half-way and the worker was reported dead ("died (exit code unknown)") with the job failed."""
    from engine.api import run

    async def main():
        pool = synth_pool.SynthPool(1)
        await pool.start()
        try:
            result = await pool.run(chatty_task, (3000, 4000), 1024, label="in.json")
            result.release()
        finally:
            await pool.close()

    with caplog.at_level(logging.INFO, logger="engine.witness.calculator"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if r.name == "engine.witness.calculator"]
    assert len(lines) == task_log.LOG_KEEP_FIRST + task_log.LOG_KEEP_LAST + 1
    assert lines[-1].startswith("line 2999 ")
