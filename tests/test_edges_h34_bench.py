"""An interrupted or failed `bench-circuit ... DIR`: it left DIR (and the parents it made) created and empty; now
it removes the directories this run made, never one that was there before, and its interrupted line says so."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO

STOP_IN_BUILD = """
    import signal
    import engine.groth16.bench_circuit as bench

    real = bench.make_bench_circuit

    def stopped(*args, **kwargs):
        signal.raise_signal(signal.{name})
        sum(range(10))  # (the handler runs here)
        return real(*args, **kwargs)

    bench.make_bench_circuit = stopped
"""


def _run_module(tmp_path: Path, body: str, *argv) -> subprocess.CompletedProcess:
    """`python -m <patch>`: `body`, then `python -m engine <argv>` as __main__ through runpy."""
    (tmp_path / "patch_h34.py").write_text(textwrap.dedent(body) + textwrap.dedent(f"""
        import runpy, sys
        sys.argv = ["engine", *{[str(a) for a in argv]!r}]
        runpy.run_module("engine", run_name="__main__", alter_sys=True)
        """))
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO), *inherited]))
    return subprocess.run([sys.executable, "-m", "patch_h34"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


def _stderr_on_a_terminal(tmp_path: Path) -> str:
    """Run tmp_path/patch_h34.py with its stderr on a pseudo-terminal (so that the bar is drawn); what it wrote
    there, once it ended by SIGTERM (143)."""
    import pty

    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO), *inherited]), COLUMNS="80")
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "patch_h34"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # (EIO: the terminal's other end closed)
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 143
    finally:
        os.close(master)
    return b"".join(chunks).decode()


def test_sigterm_while_it_builds_removes_the_directories_it_made(tmp_path):
    proc = _run_module(tmp_path, STOP_IN_BUILD.format(name="SIGTERM"),
                       "bench-circuit", "--constraints", "8", "new/deeper")
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr == "interrupted by SIGTERM; removed new/deeper and new, which this run had created\n"
    assert not (tmp_path / "new").exists()


def test_ctrl_c_keeps_a_directory_that_was_there(tmp_path):
    (tmp_path / "old").mkdir()
    proc = _run_module(tmp_path, STOP_IN_BUILD.format(name="SIGINT"),
                       "bench-circuit", "--constraints", "8", "old/made", "--json")
    assert proc.returncode == 130, proc.stderr
    assert '"message": "interrupted; removed old/made, which this run had created"' in proc.stderr, proc.stderr
    assert (tmp_path / "old").is_dir() and not (tmp_path / "old" / "made").exists()


def test_an_interrupt_in_a_directory_that_was_there_removes_nothing(tmp_path):
    out = tmp_path / "there"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = _run_module(tmp_path, STOP_IN_BUILD.format(name="SIGHUP"), "bench-circuit", "--constraints", "8", out)
    assert proc.returncode == 129, proc.stderr
    assert proc.stderr == "interrupted by SIGHUP\n"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_failed_build_removes_the_directories_it_made(tmp_path):
    proc = _run_module(tmp_path, """
        import engine.groth16.bench_circuit as bench

        def no_memory(*args, **kwargs):
            raise MemoryError

        bench.make_bench_circuit = no_memory
        """, "bench-circuit", "--constraints", "8", "a/b/c")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: out of host memory"), proc.stderr
    assert not (tmp_path / "a").exists()


def test_the_watchdogs_forced_exit_removes_them_too(tmp_path):
    """A main thread stuck in C code (the watchdog's exit, engine/interrupts._force_exit) takes them too."""
    proc = _run_module(tmp_path, """
        import signal
        import engine.groth16.bench_circuit as bench
        from engine import interrupts

        def stuck(*args, **kwargs):
            interrupts._force_exit(signal.SIGTERM, unless_finished=True)

        bench.make_bench_circuit = stuck
        """, "bench-circuit", "--constraints", "8", "x/y")
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr == "interrupted by SIGTERM; removed x/y and x, which this run had created\n"
    assert not (tmp_path / "x").exists()


def test_a_whole_run_keeps_its_directory(tmp_path):
    proc = _run_module(tmp_path, "", "bench-circuit", "--constraints", "8", "kept/here", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "kept" / "here").iterdir()) == ["bench.r1cs", "bench.wtns"]


TERMINAL_CASES = {
    "bench-circuit": ("engine.groth16.bench_circuit", "make_bench_circuit", "prog = args[-1]",
                      ["bench-circuit", "--constraints", "8", "made"], "; removed made, which this run had created"),
    "setup": ("engine.groth16.setup", "setup_file", "prog = kwargs['progress']",
              ["setup", REPO / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.r1cs", "k.zkey"], ""),
}


@pytest.mark.parametrize("command", sorted(TERMINAL_CASES))
def test_the_interrupted_line_on_a_terminal_is_not_appended_to_the_bar(tmp_path, command):
    """stderr a terminal: the bar was left drawn and `interrupted by SIGTERM` written on its end."""
    import re

    module, name, progress, argv, note = TERMINAL_CASES[command]
    (tmp_path / "patch_h34.py").write_text(textwrap.dedent(f"""
        import signal
        import {module} as mod

        def stopped(*args, **kwargs):
            {progress}
            prog.stage("inputs", 0.1)  # the bar, drawn
            signal.raise_signal(signal.SIGTERM)
            sum(range(10))

        mod.{name} = stopped
        import runpy, sys
        sys.argv = ["engine", *{[str(a) for a in argv]!r}]
        runpy.run_module("engine", run_name="__main__", alter_sys=True)
        """))
    text = _stderr_on_a_terminal(tmp_path)
    assert "inputs" in text, text
    assert re.search(r"\r +\rinterrupted by SIGTERM" + re.escape(note) + r"\r?\n$", text), repr(text)


def test_the_watchdogs_line_on_a_terminal_is_not_appended_to_the_bar(tmp_path):
    """The watchdog's exit (a main thread stuck in C code with the bar drawn) wrote its line on the bar's end."""
    import re

    (tmp_path / "patch_h34.py").write_text(textwrap.dedent("""
        import signal
        import engine.groth16.bench_circuit as bench
        from engine import interrupts

        def stuck(curve, n, n_public, seed, prog):
            prog.stage("inputs", 0.1)  # the bar, drawn
            interrupts._force_exit(signal.SIGTERM, unless_finished=True)

        bench.make_bench_circuit = stuck
        import runpy, sys
        sys.argv = ["engine", "bench-circuit", "--constraints", "8", "."]
        runpy.run_module("engine", run_name="__main__", alter_sys=True)
        """))
    text = _stderr_on_a_terminal(tmp_path)
    assert "inputs" in text, text
    assert re.search(r"\r +\rinterrupted by SIGTERM\r?\n$", text), repr(text)
