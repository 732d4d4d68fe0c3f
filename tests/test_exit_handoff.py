"""engine/exit_handoff.py: the child that inherits a process's device files keeps those and nothing else, and
leaves once its parent has; without device files (or with GROTH16_EXIT_HANDOFF=0) nothing is forked.

A FIFO stands in for the device files (the prefix is its path): its reader sees EOF only once every process
holding the write end has closed it, which is how the driver's release waits for the last reference."""
from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and fork: Linux")

SCRIPT = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from engine import exit_handoff
fifo, hold = sys.argv[2], float(sys.argv[3])
fd = os.open(fifo, os.O_WRONLY)                 # the stand-in for /dev/nvidia*
log = open(os.path.join(os.path.dirname(fifo), "log"), "w")   # a file that is not a device file
pid = exit_handoff.hand_off(prefix=fifo)
print(pid, flush=True)
time.sleep(hold)                                # the parent still alive: the child waits
os._exit(0)
"""


def _open_reader(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK)


def _settled_fds(pid: int, seconds: float = 5.0) -> set[str]:
    """What the child holds once it has closed what it closes (it starts with a copy of its parent's table)."""
    end = time.monotonic() + seconds
    while True:
        held = set()
        for n in os.listdir(f"/proc/{pid}/fd"):
            try:
                held.add(os.readlink(f"/proc/{pid}/fd/{n}"))
            except FileNotFoundError:
                pass
        if len(held) <= 2 or time.monotonic() > end:
            return held
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a reaper (the child's parent has gone: init or a subreaper reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _eof_within(fd: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready and os.read(fd, 1) == b"":
            return True
    return False


def test_child_keeps_only_the_device_files_and_leaves_after_its_parent(tmp_path):
    fifo = tmp_path / "devfile"
    os.mkfifo(fifo)
    reader = _open_reader(fifo)
    try:
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(ROOT), str(fifo), "1.5"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "GROTH16_EXIT_HANDOFF": "1"})
        child = int(proc.stdout.readline())
        assert child > 0
        held = _settled_fds(child)
        assert str(fifo) in held  # the device file's reference
        assert not any(t.startswith("/") and t != str(fifo) for t in held), held  # not the log file
        assert sum(t.startswith("pipe:") for t in held) == 1, held  # its signal pipe only, not stdout/stderr
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0 and "DeprecationWarning" not in err, err
        # the parent has gone: the child follows, and with it the last reference to the device file
        assert _eof_within(reader, 10.0)
        end = time.monotonic() + 10  # its exit is under way once the file's last reference is closed
        while _alive(child) and time.monotonic() < end:
            time.sleep(0.02)
        assert not _alive(child)
    finally:
        os.close(reader)


def test_parent_wait_ends_before_the_child_has_left(tmp_path):
    """Whoever waits on the parent's pipes (a shell's $(...), subprocess.run) is not held by the child."""
    fifo = tmp_path / "devfile"
    os.mkfifo(fifo)
    reader = _open_reader(fifo)
    try:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT), str(fifo), "0"], capture_output=True,
                           text=True, timeout=20)
        assert p.returncode == 0 and int(p.stdout) > 0, p.stderr
        assert time.perf_counter() - t < 10
        assert _eof_within(reader, 10.0)
    finally:
        os.close(reader)


@pytest.mark.parametrize("setting, fifo_open", [("1", False), ("0", True)])
def test_nothing_forked_without_device_files_or_when_off(tmp_path, setting, fifo_open):
    fifo = tmp_path / "devfile"
    os.mkfifo(fifo)
    reader = _open_reader(fifo)
    script = SCRIPT if fifo_open else SCRIPT.replace("fd = os.open(fifo, os.O_WRONLY)", "fd = None")
    try:
        p = subprocess.run([sys.executable, "-c", script, str(ROOT), str(fifo), "0"], capture_output=True,
                           text=True, timeout=20, env={**os.environ, "GROTH16_EXIT_HANDOFF": setting})
        assert p.returncode == 0, p.stderr
        assert int(p.stdout) == 0
    finally:
        os.close(reader)


def test_releases_left_to_exit_only_for_a_process_that_ends(monkeypatch):
    from engine import exit_handoff

    monkeypatch.setenv("GROTH16_EXIT_HANDOFF", "1")
    monkeypatch.setattr(exit_handoff, "process_ends", False)
    assert not exit_handoff.releases_left_to_exit()  # an in-process caller of cli.main keeps its context tidy
    monkeypatch.setattr(exit_handoff, "process_ends", True)
    assert exit_handoff.releases_left_to_exit()
    monkeypatch.setenv("GROTH16_EXIT_HANDOFF", "0")
    assert not exit_handoff.releases_left_to_exit()


def _holders(marker: str) -> list[int]:
    """Processes whose command line names `marker` and that hold a device file."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker not in (entry / "cmdline").read_bytes().decode(errors="replace"):
                continue
            if any(os.readlink(fd).startswith("/dev/nvidia") for fd in (entry / "fd").iterdir()):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _cuda() -> int:
    from engine.backends.select import cuda_device_count

    return cuda_device_count()


@pytest.mark.gpu
@pytest.mark.skipif(_cuda() == 0, reason="no CUDA device on this machine")
def test_cli_proof_on_the_device_leaves_its_teardown_to_a_child_that_ends(tmp_path):
    """The real CLI on the real driver: the proof is written and verifies, the command returns at once, and the
    child holding the device files is gone soon after (nothing is left holding the device)."""
    example = ROOT / "examples" / "bn128"
    proof, public = tmp_path / "handoff-proof.json", tmp_path / "handoff-public.json"
    env = {**os.environ, "GROTH16_EXIT_HANDOFF": "1", "GROTH16_KEY_CACHE": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-m", "engine", "prove", "--backend", "gpu", "--quiet",
                        str(example / "sudoku.zkey"), str(example / "sudoku.wtns"), str(proof), str(public)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    end = time.monotonic() + 15
    while _holders(str(proof)) and time.monotonic() < end:
        time.sleep(0.05)
    assert _holders(str(proof)) == []
    v = subprocess.run([sys.executable, "-m", "engine", "verify", str(example / "verification_key.json"), str(public),
                        str(proof)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr
