"""Inputs that never arrive: a FIFO given as an input that no writer opens, or whose writer writes half of the
file and then stalls.  The first Ctrl-C (or SIGTERM) must stop the command: exit 130 (143), the one line, no
output file, no process left.  Each test names what used to happen.

The signal is sent once the command waits at the FIFO (a thread of it asleep in the kernel in the FIFO's open
or read, as /proc/PID/task/*/wchan tells), so it lands there whatever this machine's speed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO

TINY = FIXTURES / "tiny" / "bn128"
INPUT = FIXTURES / "tiny" / "input.json"
ENGINE_PATH = ["--backend", "cpu", "--compute-slots", "1"]  # an Engine flag: the asyncio Engine's path
WAIT_OPEN = ("wait_for_partner",)  # a FIFO's open() waiting for a writer
WAIT_READ = ("pipe_read", "pipe_wait")  # a read() waiting for bytes (anon_pipe_read on newer kernels)


def _env() -> dict:
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *inherited])}


def _start(tmp_path: Path, *argv) -> subprocess.Popen:
    """`python -m engine <argv>` in a session of its own (its workers too: the group is checked at the end)."""
    return subprocess.Popen([sys.executable, "-m", "engine", *map(str, argv)], cwd=tmp_path, env=_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _group(pgid: int) -> list[int]:
    """The live processes (zombies not counted) of process group `pgid`."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def _at_fifo(pid: int, task: str, states: tuple[str, ...], fifo: Path) -> bool:
    """Whether thread `task` of `pid` sleeps in one of the kernel functions `states`, at `fifo` where its system
    call names a descriptor (a read; an open() has none yet, and only a FIFO's waits in wait_for_partner)."""
    try:
        with open(f"/proc/{pid}/task/{task}/wchan") as f:
            where = f.read()
        if not any(state in where for state in states):
            return False
        if states == WAIT_OPEN:
            return True
        with open(f"/proc/{pid}/task/{task}/syscall") as f:
            fd = int(f.read().split()[1], 16)
        return os.readlink(f"/proc/{pid}/fd/{fd}") == str(fifo)
    except (OSError, ValueError, IndexError):
        return False


def _waiting(pid: int, states: tuple[str, ...], fifo: Path, limit_s: float = 60.0) -> None:
    """Until a thread of `pid` waits at `fifo` (or `limit_s` passed, or it ended)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return
        if any(_at_fifo(pid, task, states, fifo) for task in tasks):
            return
        time.sleep(0.05)


def _stopped_by_one(proc: subprocess.Popen, signum: int, states: tuple[str, ...],
                    fifo: Path) -> tuple[int | None, str, list[int]]:
    """Send `signum` once the command waits at `fifo`: (its exit code, None if one signal did not end it within
    20 s; its stderr; the processes of its group still there 10 s later).  What is left is killed afterwards."""
    try:
        _waiting(proc.pid, states, fifo)
        proc.send_signal(signum)
        try:
            _, stderr = proc.communicate(timeout=20)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            return None, "", _group(proc.pid)
        deadline = time.monotonic() + 10
        while _group(proc.pid) and time.monotonic() < deadline:  # the pool's forkserver leaves on its own
            time.sleep(0.1)
        return code, stderr, _group(proc.pid)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        if proc.poll() is None:
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            stream.close()


def _line(signum: int) -> str:
    return "interrupted" if signum == signal.SIGINT else f"interrupted by {signal.Signals(signum).name}"


def _argv(kind: str, fifo: Path, out: Path) -> list:
    proof, public = out / "proof.json", out / "public.json"
    if kind == "zkey":
        return ["prove", fifo, TINY / "tiny.wtns", proof, public]
    if kind == "wtns":
        return ["prove", TINY / "tiny.zkey", fifo, proof, public]
    return ["prove", TINY / "tiny.zkey", "--wasm", TINY / "tiny.wasm", "--input", fifo, proof, public]


SOURCE = {"zkey": TINY / "tiny.zkey", "wtns": TINY / "tiny.wtns", "input": INPUT}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("kind", ["zkey", "wtns", "input"])
def test_the_engines_path_stops_on_the_first_signal_at_a_fifo_nobody_writes(tmp_path, kind, signum):
    """The Engine read a piped key in a thread whose cancel waits for it (3 signals), and a piped witness or
    input.json in an abandoned thread that the exit then joined (2 signals)."""
    fifo = tmp_path / f"in.{kind}"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()
    proc = _start(tmp_path, *_argv(kind, fifo, out), *ENGINE_PATH)
    code, stderr, left = _stopped_by_one(proc, signum, WAIT_OPEN, fifo)
    assert code == 128 + signum, (code, stderr)
    assert stderr.splitlines() == [_line(signum)], stderr
    assert left == [], f"processes left behind: {left}"
    assert os.listdir(out) == []


@pytest.mark.parametrize("kind", ["zkey", "wtns", "input"])
def test_the_engines_path_stops_on_the_first_signal_at_a_fifo_whose_writer_stalls(tmp_path, kind):
    """Half the file written, then nothing, the writer still there: a read that never ends, in a thread."""
    fifo = tmp_path / f"in.{kind}"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()
    data = SOURCE[kind].read_bytes()
    held: list[int] = []

    def stalling_writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)
        held.append(fd)
        os.write(fd, data[:len(data) // 2])

    writer = threading.Thread(target=stalling_writer, daemon=True)
    writer.start()
    proc = _start(tmp_path, *_argv(kind, fifo, out), *ENGINE_PATH)
    try:
        code, stderr, left = _stopped_by_one(proc, signal.SIGINT, WAIT_READ, fifo)
    finally:
        writer.join(5)
        for fd in held:
            os.close(fd)
    assert code == 130, (code, stderr)
    assert stderr.splitlines() == ["interrupted"], stderr
    assert left == [], f"processes left behind: {left}"
    assert os.listdir(out) == []


def _writer(fifo: Path, data: bytes) -> threading.Thread:
    """A writer that opens `fifo`, writes `data` whole and closes it (a `<(cat file)`)."""
    def write() -> None:
        fd = os.open(fifo, os.O_WRONLY)
        try:
            os.write(fd, data)  # (a pipe takes a small file's bytes at once: the reader reads meanwhile)
        except BrokenPipeError:
            pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("piped", [("zkey",), ("wasm", "input")], ids=["key", "wasm+input"])
def test_the_engines_path_reads_each_piped_input_once_with_r1cs(tmp_path, piped):
    """--r1cs read a piped key here for its check, then the Engine opened the pipe again: "is empty, not a .zkey
    file"; a piped circuit.wasm read here to compute the witness was then refused by the Engine as a pipe."""
    files = {"zkey": TINY / "tiny.zkey", "wasm": TINY / "tiny.wasm", "input": INPUT}
    for kind in piped:
        fifo = tmp_path / f"piped.{kind}"
        os.mkfifo(fifo)
        _writer(fifo, files[kind].read_bytes())
        files[kind] = fifo
    out = tmp_path / "out"
    out.mkdir()
    witness = ["--wasm", files["wasm"], "--input", files["input"]] if "wasm" in piped else [TINY / "tiny.wtns"]
    proc = _start(tmp_path, "prove", files["zkey"], *witness, out / "proof.json", out / "public.json",
                  "--r1cs", TINY / "tiny.r1cs", *ENGINE_PATH)
    try:
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, stderr
    assert sorted(os.listdir(out)) == ["proof.json", "public.json"]
    assert (out / "public.json").read_text() == (TINY / "public.json").read_text()


GUARDED = {  # the other commands' inputs and the direct path's, which one signal stopped already (kept so)
    "verify": lambda f, out: ["verify", TINY / "verification_key.json", f, TINY / "proof.json"],
    "export-vkey": lambda f, out: ["export-vkey", f, out / "verification_key.json"],
    "witness": lambda f, out: ["witness", TINY / "tiny.wasm", f, out / "w.wtns"],
    "setup": lambda f, out: ["setup", f, out / "k.zkey"],
    "prove-direct": lambda f, out: ["prove", TINY / "tiny.zkey", f, out / "proof.json", out / "public.json",
                                    "--backend", "cpu"],
    "prove-direct-r1cs": lambda f, out: ["prove", TINY / "tiny.zkey", TINY / "tiny.wtns", out / "proof.json",
                                         out / "public.json", "--r1cs", f, "--backend", "cpu"],
}


@pytest.mark.parametrize("command", sorted(GUARDED))
def test_every_command_stops_on_the_first_sigterm_at_a_fifo_nobody_writes(tmp_path, command):
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()
    proc = _start(tmp_path, *GUARDED[command](fifo, out))
    code, stderr, left = _stopped_by_one(proc, signal.SIGTERM, WAIT_OPEN, fifo)
    assert (code, stderr.splitlines(), left) == (143, ["interrupted by SIGTERM"], [])
    assert os.listdir(out) == []


@pytest.mark.parametrize("kind", ["zkey", "wtns"])
def test_a_writer_that_closes_early_is_one_truncated_line_as_on_the_direct_path(tmp_path, kind):
    data = SOURCE[kind].read_bytes()
    lines = []
    for path in ("direct", "engine"):
        fifo = tmp_path / f"{path}.{kind}"
        os.mkfifo(fifo)
        out = tmp_path / path
        out.mkdir()
        _writer(fifo, data[:len(data) // 2])
        proc = _start(tmp_path, *_argv(kind, fifo, out), *(ENGINE_PATH if path == "engine" else ["--backend", "cpu"]))
        try:
            _, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert proc.returncode == 2, stderr
        assert len(stderr.splitlines()) == 1 and stderr.startswith(f"error: {fifo}: truncated: "), stderr
        assert os.listdir(out) == []
        lines.append(stderr.replace(str(fifo), "FIFO"))
    assert lines[0] == lines[1]


def _endless_writer(fifo: Path, chunk: bytes) -> threading.Thread:
    """A writer that opens `fifo` and writes `chunk` for ever (`<(yes)`), until its reader leaves."""
    def write() -> None:
        fd = os.open(fifo, os.O_WRONLY)
        try:
            while True:
                os.write(fd, chunk)
        except OSError:  # the reader left (EPIPE)
            pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _memory_limit() -> None:
    import resource  # noqa: PLC0415

    resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))  # what a read that never ends runs into


@pytest.mark.parametrize("source", ["/dev/zero", "endless pipe"])
def test_a_circuit_wasm_that_never_ends_is_refused_at_its_first_bytes(tmp_path, source):
    """circuit.wasm was read whole before its magic was looked at: /dev/zero or `<(yes)` took every byte of
    memory there was ("out of host memory" under a limit; the machine's memory without one)."""
    wasm = source
    if source == "endless pipe":
        wasm = tmp_path / "endless.wasm"
        os.mkfifo(wasm)
        _endless_writer(wasm, b"y\n" * 32768)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-m", "engine", "witness", str(wasm), str(INPUT), str(out / "w.wtns")],
                          cwd=tmp_path, env=_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60, preexec_fn=_memory_limit)
    problem = "is not a file or a pipe (a device or a socket)" if source == "/dev/zero" else \
        "not a WebAssembly file (no \\0asm magic)"
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: {wasm}: {problem}") and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert os.listdir(out) == []


@pytest.mark.parametrize("kind", ["zkey", "wtns"])
@pytest.mark.parametrize("path", ["direct", "engine"])
def test_no_gpu_for_backend_gpu_is_said_before_waiting_at_a_fifo(tmp_path, path, kind):
    """`--backend gpu` on a machine without a device waited for the FIFO's writer before saying so: the direct
    path read its inputs before it waited for the device's start; the Engine's path, once it read piped inputs
    before the Engine (whose start had said it at once)."""
    fifo = tmp_path / f"in.{kind}"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()
    extra = ["--compute-slots", "1"] if path == "engine" else []
    proc = subprocess.Popen([sys.executable, "-m", "engine", *map(str, _argv(kind, fifo, out)), "--backend", "gpu",
                             *extra], cwd=tmp_path, env={**_env(), "CUDA_VISIBLE_DEVICES": ""},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        stderr = "(still waiting at the FIFO)"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 2, stderr
    assert stderr.splitlines() == ["error: --backend gpu: no CUDA device found on this machine"]
