"""`python -m engine serve` stopped while it starts: a stop signal (SIGTERM, SIGHUP, SIGQUIT) or Ctrl-C that
comes while serve reads its --config or --token-file from a FIFO nobody writes (or whose writer stalls) ends it
with the one line and exit 128 + the signal, no process left.  It used to die of SIGTERM/SIGHUP where it stood
(exit -15 / -1, no line) and dump core on SIGQUIT; only Ctrl-C said "interrupted"."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from test_cli_fifo_inputs import WAIT_OPEN, WAIT_READ, _group, _line, _start, _stopped_by_one

SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT]
TOKEN = "test-token-0123456789abcdef"


def _serve(tmp_path, **files) -> list:
    argv = ["serve", "--backend", "cpu", "--host", "127.0.0.1", "--port", "0"]
    for flag, path in files.items():
        argv += [f"--{flag.replace('_', '-')}", path]
    return argv


@pytest.mark.parametrize("signum", SIGNALS, ids=[s.name for s in SIGNALS])
@pytest.mark.parametrize("flag", ["config", "token_file"])
def test_a_signal_while_serve_waits_for_a_startup_fifo_nobody_writes(tmp_path, flag, signum):
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    proc = _start(tmp_path, *_serve(tmp_path, **{flag: fifo}))
    code, stderr, left = _stopped_by_one(proc, signum, WAIT_OPEN, fifo)
    assert (code, stderr.splitlines(), left) == (128 + signum, [_line(signum)], [])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_while_serve_reads_a_config_whose_writer_stalls(tmp_path, signum):
    fifo = tmp_path / "stalls"
    os.mkfifo(fifo)
    done = threading.Event()

    def stalling_writer() -> None:
        with open(fifo, "w") as f:
            f.write("[service]\n")
            f.flush()
            done.wait(40)

    writer = threading.Thread(target=stalling_writer, daemon=True)
    writer.start()
    proc = _start(tmp_path, *_serve(tmp_path, config=fifo))
    try:
        code, stderr, left = _stopped_by_one(proc, signum, WAIT_READ, fifo)
    finally:
        done.set()
    assert (code, stderr.splitlines(), left) == (128 + signum, [_line(signum)], [])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_two_signals_in_a_row_at_a_startup_fifo_are_still_one_line_and_code(tmp_path, signum):
    """The second used to kill it in the interpreter's teardown, after the line: exit -15 (-2)."""
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    proc = _start(tmp_path, *_serve(tmp_path, token_file=fifo))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "wait_for_partner" not in open(f"/proc/{proc.pid}/wchan").read():
            time.sleep(0.05)
        proc.send_signal(signum)
        time.sleep(0.01)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert (proc.returncode, stderr.splitlines()) == (128 + signum, [_line(signum)])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_engine_starts_at_a_timeline_fifo_nobody_reads(tmp_path, signum):
    """The engine opens --timeline as it starts, after serve's event loop had taken the signals: their handler
    could not run while the open waited, and no signal ended serve (SIGKILL only)."""
    fifo = tmp_path / "timeline"
    os.mkfifo(fifo)
    proc = _start(tmp_path, *_serve(tmp_path, timeline=fifo))
    code, stderr, left = _stopped_by_one(proc, signum, WAIT_OPEN, fifo)
    assert (code, stderr.splitlines(), left) == (128 + signum, [_line(signum)], [])


def test_a_second_sigterm_while_a_stopped_engine_start_is_undone_still_ends_serve(tmp_path):
    """The first SIGTERM came once the engine's threads ran (its start not done), the second as that start was
    undone: the second cut the clean-up short, the engine's threads were never stopped, and serve (its line
    said) waited for them forever at its exit, every further signal ignored."""
    proc = _start(tmp_path, *_serve(tmp_path))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(os.listdir(f"/proc/{proc.pid}/task")) < 5:
            time.sleep(0.002)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=20)
        deadline = time.monotonic() + 10
        while _group(proc.pid) and time.monotonic() < deadline:  # the pool's forkserver leaves on its own
            time.sleep(0.1)
        assert _group(proc.pid) == []
    finally:
        if proc.poll() is None or _group(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode in (0, 143), stderr
    if proc.returncode == 143:  # (0: the engine had started, and the server drained: "stopped")
        assert stderr.splitlines() == ["interrupted by SIGTERM"]
