"""A cancelled job's CPU work stops: its pool tasks' workers are replaced (not left computing a proof nobody
wants), its in-process NTTs stop between transforms, and the engine serves the next jobs with its budgets back.
Also: a small file size limit on the Engine's path is one EngineError, and `serve` drains on SIGHUP and
SIGQUIT as on SIGTERM (and leaves a signal it was started ignoring ignored)."""
from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
import sys
import time
from concurrent.futures import CancelledError

import anyio
import pytest

from engine.api import Engine
from engine.backends.base import ComputeStopped
from engine.backends.cpu import CpuBackend
from engine.config import EngineConfig
from engine.errors import EngineError
from scheduler import cpu_pool
from scheduler.cpu_pool import CpuPool
from scheduler.timeline import MemorySink, Stage

from conftest import FIXTURES, REPO, run_engine
from test_service import ServerProcess

TINY = FIXTURES / "tiny" / "bn128"
CLK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a live process; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else (int(fields[11]) + int(fields[12])) / CLK


def _wait(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


async def _await(predicate, timeout: float = 60.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.005)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """A 2^13-domain BN254 circuit and its key: its CPU MSMs take the pool's workers for most of a second."""
    d = tmp_path_factory.mktemp("bench13")
    for args in (("bench-circuit", "--constraints", "4000", "--quiet", d),
                 ("setup", d / "bench.r1cs", d / "k.zkey", "--quiet")):
        proc = run_engine(*args)
        assert proc.returncode == 0, proc.stderr
    return d


# ------------------------------------------------------------------ the pool


def test_cancelling_a_running_task_stops_its_worker_and_spares_the_others():
    pool = CpuPool(2)
    try:
        _wait(lambda: len(pool.pids()) == 2)
        long, short = pool.submit(time.sleep, 60), pool.submit(time.sleep, 1.0)
        _wait(lambda: long.running() and short.running())
        time.sleep(0.1)  # both are inside their workers
        before = set(pool.pids())
        t = time.monotonic()
        assert long.cancel(), "a running task could not be cancelled"
        with pytest.raises(CancelledError):
            long.result(timeout=10)
        assert time.monotonic() - t < 5
        assert short.result(timeout=30) is None  # the other worker's task is untouched
        assert not short.cancel()  # done: nothing to stop
        assert pool.map(abs, range(-4, 0)) == [4, 3, 2, 1]  # both lanes serve on
        _wait(lambda: len(pool.pids()) == 2)
        assert len(before - set(pool.pids())) == 1  # exactly one worker was replaced
        assert pool.stopped == 1
    finally:
        pool.shutdown()


def test_a_task_cancelled_as_it_finishes_is_cancelled_and_its_lane_serves_on():
    pool = CpuPool(1)
    try:
        for delay in (0.0, 0.01, 0.05):
            fut = pool.submit(time.sleep, 0.05)
            _wait(fut.running)
            time.sleep(delay)
            if fut.cancel():
                with pytest.raises(CancelledError):
                    fut.result(timeout=10)
            else:
                assert fut.result(timeout=10) is None
            assert pool.submit(divmod, 7, 2).result(timeout=60) == (3, 1)
    finally:
        pool.shutdown()


def test_a_task_cancelled_while_its_worker_is_being_replaced_is_never_sent():
    pool = CpuPool(1)
    try:
        _wait(lambda: len(pool.pids()) == 1)
        victim = pool.pids()[0]
        os.kill(victim, signal.SIGKILL)
        _wait(lambda: victim not in pool.pids())
        fut = pool.submit(time.sleep, 60)  # the lane takes it, then starts a successor (a tenth of a second)
        _wait(fut.running)
        assert fut.cancel()
        t = time.monotonic()
        with pytest.raises(CancelledError):
            fut.result(timeout=30)
        assert time.monotonic() - t < 10
        assert pool.submit(divmod, 7, 2).result(timeout=60) == (3, 1)
    finally:
        pool.shutdown()


class _Unreadable:
    """Pickles in a worker, cannot be unpickled in the parent (int("not a number"))."""

    def __reduce__(self):
        return int, ("not a number",)


def _unreadable_result() -> _Unreadable:
    return _Unreadable()


def test_a_result_that_cannot_be_read_fails_its_task_and_the_lane_serves_on():
    """Its lane thread died of the ValueError: the task's future never ended (result() waited for ever)."""
    pool = CpuPool(1)
    try:
        fut = pool.submit(_unreadable_result)
        with pytest.raises(EngineError, match="_unreadable_result: its result could not be read"):
            fut.result(timeout=60)
        assert pool.submit(divmod, 9, 4).result(timeout=60) == (2, 1)
    finally:
        pool.shutdown(kill=True)


# ------------------------------------------------------------------ the engine


async def test_a_cancelled_cpu_proof_stops_its_pool_work_and_the_engine_serves_on(bench):
    """Measured before the fix: each worker went on computing the cancelled proof's MSM (0.3-0.6 CPU s in the
    next 0.6 s), and the next proof ran that much slower."""
    sink = MemorySink()
    cfg = EngineConfig(backend="cpu", idle_trim_s=None)
    async with Engine(cfg, backends=[CpuBackend(workers=2)], on_event=sink) as eng:
        key = await eng.load_key(bench / "k.zkey")
        pool = cpu_pool.get_pool(2)
        assert pool.map(abs, [-1, -2]) == [1, 2]
        await _await(lambda: len(pool.pids()) >= 2)
        pids = pool.pids()
        base = sum(_cpu_s(p) or 0 for p in pids)
        task = asyncio.ensure_future(eng.prove(key, bench / "bench.wtns"))
        await _await(lambda: sum(_cpu_s(p) or 0 for p in pids) - base >= 0.05)  # the workers start its MSM
        task.cancel()
        assert (await asyncio.gather(task, return_exceptions=True))[0].__class__ is asyncio.CancelledError
        await eng.drain()
        start = {p: _cpu_s(p) for p in pids}
        await anyio.sleep(0.8)
        burned = {p: _cpu_s(p) - start[p] for p in pids if start[p] is not None and _cpu_s(p) is not None}
        assert all(b < 0.1 for b in burned.values()), f"CPU seconds spent on the cancelled proof: {burned}"
        assert eng.at_rest() and eng.stats()["jobs_in_flight"] == 0
        stats = eng.stats()
        assert stats["host_available"] == stats["host_capacity"]
        proof = await eng.prove(key, bench / "bench.wtns")  # verified before it is returned
        assert proof.public and '"pi_a"' in proof.to_json()
        await _await(lambda: len(pool.pids()) >= 2)
    assert sum(e.stage == Stage.JOB_CANCELLED for e in sink) == 1


@pytest.fixture(scope="module")
def many_public(tmp_path_factory):
    """3000 public signals: the CPU verification's MSM over them takes a pool worker for a third of a second."""
    d = tmp_path_factory.mktemp("public3000")
    for args in (("bench-circuit", "--constraints", "4000", "--public", "3000", "--quiet", d),
                 ("setup", d / "bench.r1cs", d / "k.zkey", "--quiet")):
        proc = run_engine(*args)
        assert proc.returncode == 0, proc.stderr
    return d


async def test_a_proof_cancelled_while_verified_stops_its_verification(many_public):
    """The epilogue and the verification wait for the CPU pool in a thread the cancelled job abandons: the pool
    went on verifying a proof nobody would get."""
    sink = MemorySink()
    async with Engine(EngineConfig(backend="cpu", idle_trim_s=None), on_event=sink) as eng:
        key = await eng.load_key(many_public / "k.zkey")
        assert (await eng.prove(key, many_public / "bench.wtns")).public  # decoded, warm
        pool = cpu_pool.get_pool()
        stopped = getattr(pool, "stopped", 0)
        seen = len(list(sink))
        task = asyncio.ensure_future(eng.prove(key, many_public / "bench.wtns"))
        await _await(lambda: any(e.stage == Stage.VERIFY_START for e in list(sink)[seen:]))
        pids = pool.pids()
        base = sum(_cpu_s(p) or 0 for p in pids)
        await _await(lambda: sum(_cpu_s(p) or 0 for p in pids) - base >= 0.03)  # a worker verifies it
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await eng.drain()
        start = {p: _cpu_s(p) for p in pids}
        await anyio.sleep(0.3)
        burned = {p: _cpu_s(p) - start[p] for p in pids if start[p] is not None and _cpu_s(p) is not None}
        assert all(b < 0.1 for b in burned.values()), f"CPU seconds spent verifying the cancelled proof: {burned}"
        assert pool.stopped == stopped + 1
        assert eng.at_rest()
        assert (await eng.prove(key, many_public / "bench.wtns")).public


def test_the_quotient_stops_between_its_ntts_once_told(monkeypatch):
    """The quotient's six NTTs run in the calling thread; a cancelled proof ran all of them before its stop was
    looked at."""
    from engine.backends import cpu
    from engine.formats import read_zkey, read_wtns

    backend = CpuBackend(workers=1)
    zkey = read_zkey(TINY / "tiny.zkey")
    key = backend.load_key(zkey)
    witness = read_wtns(TINY / "tiny.wtns").values
    calls = []
    real = cpu._ntt

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cpu, "_ntt", counting)
    a, b = backend.evaluate(key, witness)
    with pytest.raises(ComputeStopped):
        backend.prove_core(key, witness, stop=lambda: len(calls) >= 1)
    assert len(calls) == 1, f"{len(calls)} NTTs ran after the stop"
    calls.clear()
    h = backend.quotient(zkey.curve, a, b)  # without a stop: all six, as before
    assert len(calls) == 6 and h.shape == a.shape


# ------------------------------------------------------------------ a file size limit


def _small_files() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))


def test_a_small_file_size_limit_is_one_engine_error_naming_it(bench, tmp_path):
    """ulimit -f 64: the witness's shared-memory block (128 KiB) could not be sized, an OSError EFBIG traceback."""
    code = (
        "from engine import EngineConfig, EngineError, prove_files\n"
        "try:\n"
        f"    prove_files({str(bench / 'k.zkey')!r}, [{str(bench / 'bench.wtns')!r}], "
        "config=EngineConfig(backend='cpu'))\n"
        "except EngineError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO,
                          preexec_fn=_small_files)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "file size limit" in proc.stdout and "64.0 KiB" in proc.stdout and "ulimit -f" in proc.stdout, proc.stdout
    proc = subprocess.run([sys.executable, "-m", "engine", "prove", bench / "k.zkey", bench / "bench.wtns",
                           tmp_path / "p.json", tmp_path / "pub.json", "--backend", "cpu", "--timeline",
                           tmp_path / "t.jsonl"], capture_output=True, text=True, timeout=300, cwd=REPO,
                          preexec_fn=_small_files, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "file size limit" in lines[0], proc.stderr
    assert not (tmp_path / "p.json").exists()


def _no_files() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_a_zero_file_size_limit_names_itself_when_the_pool_cannot_start(bench, tmp_path):
    """ulimit -f 0: Python's temporary directory probe fails, and the pool's start said only "No usable temporary
    directory found in ['/tmp', ...]" of a /tmp that is fine."""
    proc = subprocess.run([sys.executable, "-m", "engine", "prove", bench / "k.zkey", bench / "bench.wtns",
                           tmp_path / "p.json", tmp_path / "pub.json", "--backend", "cpu"], capture_output=True,
                          text=True, timeout=300, cwd=REPO, preexec_fn=_no_files, stdin=subprocess.DEVNULL)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "file size limit of this process is 0" in lines[0] and "ulimit -f" in lines[0], lines[0]


def test_no_room_for_a_witness_block_is_an_engine_error(monkeypatch):
    """Full /dev/shm: the "no room for a witness" error was a plain OSError, a traceback from the CLI and the API."""
    import errno

    from scheduler import shm

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shm.os, "posix_fallocate", full, raising=False)
    block = shm.ShmBlock.create(4096)
    try:
        with pytest.raises(EngineError) as info:
            block.reserve(4096)
        assert str(info.value).startswith("no room for a witness of 4.0 KiB in ")
        assert isinstance(info.value, OSError) and info.value.errno == errno.ENOSPC
    finally:
        block.release()


# ------------------------------------------------------------------ serve and its signals


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGQUIT], ids=["SIGHUP", "SIGQUIT"])
def test_serve_drains_on_sighup_and_sigquit_as_on_sigterm(tmp_path, bench, signum):
    """SIGHUP (the terminal closed) killed the server where it stood, its admitted jobs lost; SIGQUIT too."""
    srv = ServerProcess(tmp_path, "--running-jobs", "1")
    try:
        with srv.client() as c:
            kid = c.load_key(str(bench / "k.zkey"))["id"]
            jobs = [c.submit(kid, str(bench / "bench.wtns")) for _ in range(2)]
            srv.send(signum)
            for job in jobs:  # every admitted job finishes
                assert c.wait(job["id"]).proof["curve"] == "bn128"
        srv.stop(signum, expect=0)
        assert f"engine serve: {signal.Signals(signum).name}: draining" in srv.log.read_text()
    finally:
        srv.kill()


def _ignore_sighup() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def test_serve_started_ignoring_sighup_keeps_ignoring_it(tmp_path):
    """nohup: a SIGHUP the server was started ignoring stays ignored."""
    srv = ServerProcess(tmp_path, preexec_fn=_ignore_sighup)
    try:
        with srv.client() as c:
            srv.send(signal.SIGHUP)
            time.sleep(0.3)
            assert c.prove(c.load_key(f"{TINY}/tiny.zkey")["id"], f"{TINY}/tiny.wtns").public
        assert "draining" not in srv.log.read_text()
        srv.stop(signal.SIGTERM, expect=0)
    finally:
        srv.kill()
