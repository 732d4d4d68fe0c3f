"""The last moments of an interrupted command: the exit code must agree with the files it leaves.

The watchdog (engine/interrupts.py) ends a main thread stuck in C code after a signal.  It checked that the
proof was not finished, then lost the CPU to the main thread, which wrote both files, and still exited 130
(seen once in ~46 Ctrl-C's near the end of `prove`).  The interleaving is injected here, not hoped for: the
main thread waits in C (an Event) when the signal's byte reaches the watchdog through Python's wakeup
descriptor (written directly, as the C-level handler does), and the watchdog's exit lets it go on mid-way.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import EXAMPLES, REPO

SUDOKU = EXAMPLES / "bn128"

# A main thread stuck in C when a signal comes (its byte written to the wakeup descriptor); `interrupted()`,
# which the forced exit calls for its line, is where the main thread is let go on
STUCK = """
import os, signal, sys, threading, time
from engine import interrupts
from engine.file_writes import write_files

out = sys.argv[1]
interrupts.WATCH_GRACE_S = 0.2
interrupts.own_process()
release, wrote = threading.Event(), threading.Event()

def signal_comes(signum):
    # the signal's byte, once the main thread waits in C (Condition.wait's lock)
    fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(fd)

    def when_stuck():
        while sys._current_frames()[threading.main_thread().ident].f_code is not threading.Condition.wait.__code__:
            time.sleep(0.01)
        time.sleep(0.05)  # (past Condition.wait's own lines, into its lock's acquire)
        os.write(fd, bytes([signum]))

    threading.Thread(target=when_stuck, daemon=True).start()
"""


def _run(tmp_path: Path, body: str, signum: int = signal.SIGINT) -> subprocess.CompletedProcess:
    script = tmp_path / "stuck.py"
    script.write_text(textwrap.dedent(STUCK) + textwrap.dedent(body).replace("SIGNUM", str(int(signum))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    (tmp_path / "out").mkdir()
    return subprocess.run([sys.executable, str(script), str(tmp_path / "out")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)


def test_the_watchdogs_exit_and_a_finished_proof_never_both_happen(tmp_path):
    """The main thread finishing while the watchdog exits: 130 with proof.json and public.json written."""
    proc = _run(tmp_path, """
        real_interrupted = interrupts.interrupted

        def interrupted_while_main_goes_on():
            release.set()  # the main thread's C call returns now, after the watchdog's check
            wrote.wait(2)
            return real_interrupted()

        interrupts.interrupted = interrupted_while_main_goes_on
        signal_comes(SIGNUM)
        release.wait()
        interrupts.finished()
        write_files([(os.path.join(out, "proof.json"), "{}"), (os.path.join(out, "public.json"), "[]")])
        wrote.set()
        time.sleep(3)
        os._exit(0)
        """)
    files = sorted(os.listdir(tmp_path / "out"))
    assert (proc.returncode, files) in ((130, []), (0, ["proof.json", "public.json"])), (proc.returncode, files)
    assert proc.stderr.splitlines() == (["interrupted"] if proc.returncode else []), proc.stderr


def test_the_forced_exit_removes_this_processs_shared_memory(tmp_path):
    """os._exit skipped scheduler/shm.py's at-exit removal: the witness blocks stayed in /dev/shm (RAM)."""
    proc = _run(tmp_path, """
        from scheduler import shm
        block = shm.ShmBlock.create(4096)
        print(os.getpid(), os.path.dirname(block.path), flush=True)
        signal_comes(SIGNUM)
        threading.Event().wait(10)
        """, signal.SIGTERM)
    pid, directory = proc.stdout.split()
    left = [n for n in os.listdir(directory) if n.startswith(("g16w-", "g16w.owner-")) and f"-{pid}-" in n]
    for name in left:  # (a failure here must not leave them either)
        os.unlink(os.path.join(directory, name))
    assert proc.returncode == 143, (proc.returncode, proc.stderr)
    assert proc.stderr.splitlines() == ["interrupted by SIGTERM"]
    assert left == []


def test_the_forced_exit_removes_the_timeline_it_began(tmp_path):
    """Ctrl-C's way out removed a --timeline the run had begun; the watchdog's exit left it, partial."""
    proc = _run(tmp_path, """
        from scheduler.timeline import Timeline
        Timeline.to_file(os.path.join(out, "t.jsonl")).emit("SUBMIT")
        signal_comes(SIGNUM)
        threading.Event().wait(10)
        """, signal.SIGHUP)
    assert proc.returncode == 129, (proc.returncode, proc.stderr)
    assert proc.stderr.splitlines() == ["interrupted by SIGHUP"]
    assert os.listdir(tmp_path / "out") == []


LATE = """
import os, signal, sys, runpy
import engine.file_writes as file_writes

real_replace = file_writes.os.replace

def replace_then_signal(*args):
    real_replace(*args)
    os.kill(os.getpid(), signal.{signame})
    sum(range(10))

file_writes.os.replace = replace_then_signal
sys.argv = ["engine", *sys.argv[1:]]
runpy.run_module("engine", run_name="__main__", alter_sys=True)
"""


def _late_signal(tmp_path: Path, signame: str, *argv) -> subprocess.CompletedProcess:
    (tmp_path / "late.py").write_text(LATE.format(signame=signame))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "late", *map(str, argv)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def test_a_signal_after_the_witness_is_written_is_too_late_to_stop_it(tmp_path):
    """`witness` exited 130 "interrupted" with w.wtns written (a Ctrl-C just after its rename)."""
    proc = _late_signal(tmp_path, "SIGINT", "witness", SUDOKU / "sudoku.wasm", SUDOKU / "input.json", "w.wtns",
                        "--quiet")
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert (tmp_path / "w.wtns").read_bytes() == (SUDOKU / "sudoku.wtns").read_bytes()


def test_a_stop_signal_after_the_key_is_written_is_too_late_to_stop_it(tmp_path):
    """`setup` exited 143 "interrupted by SIGTERM" with its .zkey written."""
    proc = _late_signal(tmp_path, "SIGTERM", "setup", SUDOKU / "sudoku.r1cs", "k.zkey", "--quiet")
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert (tmp_path / "k.zkey").stat().st_size > 0
