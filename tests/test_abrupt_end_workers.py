"""A process killed abruptly (SIGKILL: the OOM killer; SIGTERM on a script with no handler) while its pool workers
run a task: the workers must end with it, at once and quietly.  Before, each ran its task to the end (a long
witness or MSM: minutes of CPU for nobody), then printed a BrokenPipeError traceback on the user's terminal."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_CPU_POOL = """
    import time
    from scheduler.cpu_pool import get_pool
    pool = get_pool(1)
    fut = pool.submit(time.sleep, {sleep})
    while not (fut.running() and pool.pids()):
        time.sleep(0.02)
    time.sleep(0.2)  # the task is on the worker
    print(pool.pids()[0], flush=True)
    time.sleep(60)
"""

_SYNTH_POOL = """
    import time
    import anyio
    from scheduler.synth_pool import SynthPool
    async def main():
        pool = SynthPool(1)
        await pool.start()
        async with anyio.create_task_group() as tg:
            tg.start_soon(pool.run, time.sleep, ({sleep},), 4096)
            while not pool.pids():
                await anyio.sleep(0.02)
            await anyio.sleep(0.3)
            print(pool.pids()[0], flush=True)
            await anyio.sleep(60)
    anyio.run(main)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] in (b"Z", b"X")
    except OSError:
        return True


@pytest.mark.parametrize("script", [_CPU_POOL, _SYNTH_POOL], ids=["cpu_pool", "synth_pool"])
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_busy_worker_ends_with_its_killed_parent(script, how):
    code = textwrap.dedent(script.format(sleep=20))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    worker = 0
    try:
        worker = int(proc.stdout.readline())
        proc.send_signal(how)
        proc.wait(10)
        deadline = time.monotonic() + 8
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(worker), f"worker {worker} still runs its task after its parent was killed"
    finally:
        for pid in (worker, proc.pid):
            if pid and not _gone(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        from scheduler.shm import remove_orphans, shm_dir  # noqa: PLC0415

        remove_orphans(shm_dir(), "g16w")  # the killed parent's witness block, as its next maker would


def test_a_worker_whose_parent_left_says_nothing():
    """The parent ends while its worker's task is nearly done: the worker's answer has nobody to go to, and that
    is no traceback on the terminal the two share."""
    code = textwrap.dedent(_CPU_POOL.format(sleep=1.0))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    worker = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    try:
        _, err = proc.communicate(timeout=20)  # its stderr ends when every process holding it (the workers) has
    finally:
        if not _gone(worker):
            os.kill(worker, signal.SIGKILL)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()[-800:]


def test_the_next_maker_says_it_removed_a_killed_processs_shared_memory(caplog, monkeypatch):
    """The blocks of a process killed with its witnesses in /dev/shm (RAM) were removed by the next process that
    made one, without a word: an operator looking for where the memory went, or why, saw nothing.  (A warning
    from SAY_FREED_BYTES up, lowered here for blocks of a test's size; below it, an INFO record.)"""
    import uuid  # noqa: PLC0415

    from scheduler import shm  # noqa: PLC0415
    from scheduler.shm import ShmBlock  # noqa: PLC0415

    monkeypatch.setattr(shm, "SAY_FREED_BYTES", 1)

    prefix = f"g16wt{uuid.uuid4().hex[:8]}"
    code = (f"import sys; from scheduler.shm import ShmBlock; bs = [ShmBlock.create(8192, prefix={prefix!r}) "
            "for _ in range(3)]; [b.ndarray((8192,), 'u1').fill(1) for b in bs]; "
            "print(' '.join(b.path for b in bs), flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    paths = proc.stdout.readline().split()
    proc.kill()
    proc.wait()
    with caplog.at_level("WARNING", logger="scheduler.shm"):
        mine = ShmBlock.create(4096, prefix=prefix)
    mine.release()
    assert not any(os.path.exists(p) for p in paths)
    said = [r.getMessage() for r in caplog.records]
    assert any("3 " in m and "24.0 KiB" in m and str(proc.pid) in m and "removed" in m for m in said), said


def _killed_in_chunk(state: dict, start: int, stop: int) -> list:
    if start == 0:
        os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer's choice, as it makes it
    return list(range(start, stop))


def test_a_setup_worker_killed_is_one_engine_error_naming_it():
    """`setup` whose forked worker the OOM killer ended: a BrokenProcessPool traceback, exit 1, no word of why."""
    from engine.errors import EngineError  # noqa: PLC0415
    from scheduler.setup_pool import fork_map  # noqa: PLC0415

    with pytest.raises(EngineError) as info:
        fork_map(_killed_in_chunk, 64, {}, workers=2, min_parallel=1)
    text = str(info.value)
    assert "SIGKILL" in text and "\n" not in text, text



_KILLER = """
    import os, signal, time
    from engine.groth16 import setup_points

    real = setup_points._fixed_base_worker
    MAIN = os.getpid()

    def killer(state, start, stop):  # the OOM killer picks the worker of the first chunk, mid-setup
        if start == 0 and os.getpid() != MAIN:
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)
        return real(state, start, stop)

    setup_points._fixed_base_worker = killer
"""


def test_setup_whose_worker_is_killed_says_so_not_interrupted(tmp_path):
    """The pool ends the other workers with SIGTERM; each, forked from the CLI with its stop-signal handlers, took
    it as Ctrl-C and lived on (the pool's shutdown waited for it), and wrote SIGTERM to the CLI's wakeup pipe: the
    CLI's watchdog then ended `setup` with `interrupted by SIGTERM` (exit 143), a signal nobody had sent it."""
    (tmp_path / "killer_mod.py").write_text(textwrap.dedent(_KILLER))
    (tmp_path / "run_setup.py").write_text(textwrap.dedent("""
        import runpy, sys
        import killer_mod
        sys.argv = ["engine", "setup", sys.argv[1], sys.argv[2], "--backend", "cpu", "--workers", "2"]
        runpy.run_module("engine", run_name="__main__", alter_sys=True)
    """))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    made = subprocess.run([sys.executable, "-m", "engine", "bench-circuit", "--constraints", "4096", "--curve",
                           "bn128", "--quiet", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    proc = subprocess.run([sys.executable, str(tmp_path / "run_setup.py"), str(tmp_path / "bench.r1cs"),
                           str(tmp_path / "k.zkey")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "SIGKILL" in lines[0] and "nothing was written" in lines[0], proc.stderr
    assert not (tmp_path / "k.zkey").exists()


def test_a_worker_killed_by_sigkill_names_the_likely_cause():
    """A pool worker the kernel's OOM killer ended (SIGKILL, the only signal it sends) failed its job with "died
    (killed by SIGKILL)": true, but not the word a user could act on (memory)."""
    from scheduler.cpu_pool import CpuPool, CpuWorkerCrashedError  # noqa: PLC0415

    pool = CpuPool(1)  # its own: the shared pool's restart counts are other tests' to check
    try:
        fut = pool.submit(time.sleep, 10)
        deadline = time.monotonic() + 20
        while not (fut.running() and pool.pids()) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        for pid in pool.pids():
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(CpuWorkerCrashedError) as info:
            fut.result(20)
    finally:
        pool.shutdown(kill=True)
    assert "killed by SIGKILL" in str(info.value) and "out of memory" in str(info.value), str(info.value)


def test_a_long_lived_maker_removes_the_blocks_of_a_process_killed_after_it_started(monkeypatch):
    """Only a process's first block swept: a service running for days never removed the blocks of a script
    killed beside it (its witnesses, in RAM) until the service itself restarted."""
    import uuid  # noqa: PLC0415

    from scheduler import shm  # noqa: PLC0415
    from scheduler.shm import ShmBlock  # noqa: PLC0415

    prefix = f"g16wt{uuid.uuid4().hex[:8]}"
    mine = [ShmBlock.create(4096, prefix=prefix)]  # this process (the service) made its first block already
    code = (f"import sys; from scheduler.shm import ShmBlock; b = ShmBlock.create(8192, prefix={prefix!r}); "
            "print(b.path, flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    path = proc.stdout.readline().strip()
    proc.kill()
    proc.wait()
    try:
        assert os.path.exists(path)
        monkeypatch.setattr(shm, "SWEEP_EVERY_S", 0.0, raising=False)  # (a minute between sweeps, otherwise)
        mine.append(ShmBlock.create(4096, prefix=prefix))
        assert not os.path.exists(path), "the killed process's block is still in /dev/shm"
    finally:
        for block in mine:
            block.release()
