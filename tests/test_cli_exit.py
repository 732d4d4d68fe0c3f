"""How the CLI's process ends: a `prove` made in this process leaves without the interpreter's teardown (the
finalisation of every module and object, 30-60 ms after a proof), but only after what the interpreter's exit
does first: the threads that are not daemons joined (a key cache's write), the executors' exit hooks and the
atexit hooks run, stdout and stderr flushed; the exit code kept.  Lines that do not prove here keep Python's
ordinary exit.  And a line that names its command builds that command's parser alone."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from test_cli_interrupt_edges import _run_module

TINY = FIXTURES / "tiny" / "bn128"

# Installed before `python -m engine` runs: a probe whose finaliser runs only in the interpreter's teardown
# (through sys, which is torn down last), an atexit hook, a thread that is not a daemon and a thread pool's
# worker (threading's own exit hooks stop it), each leaving a mark in a file.
PROBES = """
    import atexit, concurrent.futures, os, sys, threading, time

    _fd = os.open("marks", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    class TeardownProbe:
        def __del__(self, _write=os.write, _fd=_fd):
            _write(_fd, b"teardown\\n")

    sys.teardown_probe = TeardownProbe()
    atexit.register(lambda: os.write(_fd, b"atexit\\n"))

    def _late_writer():
        time.sleep(0.3)
        os.write(_fd, b"thread\\n")

    threading.Thread(target=_late_writer).start()
    _pool = concurrent.futures.ThreadPoolExecutor(1)
    _pool.submit(lambda: None).result()  # an idle worker, stopped by the executor's exit hook
    print("stdout before the command", end="")  # unflushed: the exit must flush it
"""


def _marks(tmp_path) -> list[str]:
    return (tmp_path / "marks").read_text().split()


def test_a_proof_made_here_leaves_without_the_teardown_after_threads_hooks_and_flush(tmp_path):
    proc = _run_module(tmp_path, "leave_after_proof", PROBES, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns",
                       tmp_path / "proof.json", tmp_path / "public.json", "--backend", "cpu", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("stdout before the command")
    assert json.loads((tmp_path / "proof.json").read_text())["protocol"] == "groth16"
    assert sorted(_marks(tmp_path)) == ["atexit", "thread"]  # no teardown


def test_a_failed_proof_keeps_its_exit_code_and_leaves_the_same_way(tmp_path):
    proc = _run_module(tmp_path, "leave_after_failure", PROBES, "prove", TINY / "tiny.zkey", tmp_path / "no.wtns",
                       tmp_path / "proof.json", tmp_path / "public.json", "--backend", "cpu")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().endswith("no such file")
    assert sorted(_marks(tmp_path)) == ["atexit", "thread"]
    assert not (tmp_path / "proof.json").exists()


def test_a_line_that_does_not_prove_here_keeps_pythons_exit(tmp_path):
    proc = _run_module(tmp_path, "ordinary_exit", PROBES, "info", TINY / "tiny.zkey")
    assert proc.returncode == 0, proc.stderr
    assert sorted(_marks(tmp_path)) == ["atexit", "teardown", "thread"]


@pytest.mark.parametrize("argv, only", [
    (["prove", "k", "w", "p", "q"], "prove"),
    (["verify", "v", "p", "q"], "verify"),
    (["--help"], None),
    ([], None),
    (["provee", "k"], None),  # argparse names the mistake from the whole parser
])
def test_a_line_naming_its_command_builds_that_parser_alone(argv, only):
    from cli import named_command  # noqa: PLC0415

    assert named_command(argv) == only


def test_a_misspelt_command_still_lists_the_commands(capsys):
    from cli import main  # noqa: PLC0415

    with pytest.raises(SystemExit):
        main(["provee", "k"])
    err = capsys.readouterr().err
    assert "invalid choice" in err and "prove" in err and "verify" in err


def test_ctrl_c_leaves_130_after_stopping_an_idle_thread_pool(tmp_path):
    """The 130 exit used to join every thread that is not a daemon itself, and an idle executor's worker (not a
    daemon since Python 3.9, stopped by threading's exit hook) never ends: the process hung after `interrupted`."""
    proc = _run_module(tmp_path, "interrupt_beside_a_pool", PROBES + """
    import engine.commands.prove as prove

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    prove._run_direct = interrupted
    """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", tmp_path / "proof.json", tmp_path / "public.json",
                       "--backend", "cpu", timeout=60)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip() == "interrupted"
    assert sorted(_marks(tmp_path)) == ["atexit", "thread"]


@pytest.mark.parametrize("setting, seen", [(None, "1"), ("4", "4")])
def test_commands_start_openblas_with_one_thread_unless_the_user_says(setting, seen):
    """engine/__main__ sets OPENBLAS_NUM_THREADS=1 before numpy's import (its thread pool costs a cold command
    30-95 ms on a 16-core host; the engine does no BLAS work); a value the user set is left alone."""
    import os  # noqa: PLC0415

    code = ("import os, runpy, sys\nsys.argv = ['engine', '--help']\ntry:\n    runpy.run_module('engine', "
            "run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('BLAS=' + os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if setting is not None:
        env["OPENBLAS_NUM_THREADS"] = setting
    p = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.stdout.strip().splitlines()[-1] == f"BLAS={seen}", p.stdout + p.stderr
