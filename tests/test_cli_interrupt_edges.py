"""Ctrl-C where Python itself gets it wrong: a KeyboardInterrupt raised inside exec'd code (every dataclass
and namedtuple made at import) used to make the interpreter leave by SIGINT (-2) after `interrupted` had been
printed and 130 returned; one that some code swallowed used to let the proof be written and exit 0; the
direct path imported its readers after Ctrl-C had become a KeyboardInterrupt (where the first case bites);
and one that came while the proof was written, or in the interpreter's teardown after it, cut the writing
short or ended the process by the signal (-2) or in a traceback (now: too late, ignored, exit 0)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import FIXTURES, REPO

TINY = FIXTURES / "tiny" / "bn128"


def _inherited_path() -> list[str]:
    """This process's PYTHONPATH entries (a machine's own packages come that way), kept after ours."""
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _run_module(tmp_path: Path, name: str, body: str, *argv, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m <name>`: a module that patches the engine, then runs `python -m engine <argv>` as __main__
    (through runpy, as the interpreter runs it: the exit path under test is the one after a module run)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body) + textwrap.dedent(f"""
        import runpy, sys
        sys.argv = ["engine", *{[str(a) for a in argv]!r}]
        runpy.run_module("engine", run_name="__main__", alter_sys=True)
        """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO), *_inherited_path()]))
    return subprocess.run([sys.executable, "-m", name], cwd=tmp_path, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)


def _prove_args(tmp_path: Path) -> list:
    return ["prove", TINY / "tiny.zkey", TINY / "tiny.wtns", tmp_path / "proof.json", tmp_path / "public.json",
            "--backend", "cpu"]


def test_ctrl_c_inside_exec_code_still_exits_130(tmp_path):
    proc = _run_module(tmp_path, "interrupt_in_exec", """
        import engine.commands.prove as prove

        def interrupted_in_exec(*args, **kwargs):
            exec("raise KeyboardInterrupt")  # as a dataclass being made when Ctrl-C lands

        prove._run_direct = interrupted_in_exec
        """, *_prove_args(tmp_path))
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert proc.stderr.strip() == "interrupted", proc.stderr


def test_ctrl_c_that_code_swallows_still_stops_the_proof_before_any_file(tmp_path):
    proc = _run_module(tmp_path, "interrupt_swallowed", """
        import signal
        import engine.groth16.prover as prover

        real_prove = prover.prove

        def prove_swallowing_ctrl_c(*args, **kwargs):
            try:
                signal.raise_signal(signal.SIGINT)
                sum(range(10))  # the handler runs here, between bytecodes
            except KeyboardInterrupt:
                pass  # as code that clears every error would
            return real_prove(*args, **kwargs)

        prover.prove = prove_swallowing_ctrl_c
        """, *_prove_args(tmp_path))
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert proc.stderr.strip() == "interrupted", proc.stderr
    assert not (tmp_path / "proof.json").exists() and not (tmp_path / "public.json").exists()


def test_the_direct_cpu_path_imports_nothing_of_ours_once_ctrl_c_is_a_keyboard_interrupt(tmp_path):
    """preload() names every engine module the direct path uses: an import after the switch is where a
    Ctrl-C lands inside a module's top level (and its dataclasses' exec)."""
    probe = tmp_path / "after_switch.py"
    probe.write_text(textwrap.dedent(f"""
        import os, signal, sys
        real_signal = signal.signal
        seen = {{}}

        def spy(signum, handler):
            if signum == signal.SIGINT and handler is signal.default_int_handler and "mods" not in seen:
                seen["mods"] = set(sys.modules)
            return real_signal(signum, handler)

        def loading(signum, frame):
            os._exit(130)

        loading.loading = True  # what engine/__main__ installs while the command loads
        real_signal(signal.SIGINT, loading)
        signal.signal = spy
        import cli
        code = cli.main({[str(a) for a in _prove_args(tmp_path)]!r})
        assert code == 0, code
        late = sorted(m for m in set(sys.modules) - seen["mods"] if m.split(".")[0] in ("engine", "scheduler"))
        print(" ".join(late))
        """))
    proc = subprocess.run([sys.executable, str(probe)], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *_inherited_path()])),
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"imported after Ctrl-C became KeyboardInterrupt: {proc.stdout.strip()}"


def test_ctrl_c_in_the_teardown_after_the_proof_is_ignored(tmp_path):
    proc = _run_module(tmp_path, "interrupt_at_exit", """
        import atexit, signal

        atexit.register(signal.raise_signal, signal.SIGINT)  # Ctrl-C while the interpreter tears down
        """, *_prove_args(tmp_path))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, proc.stderr
    assert (tmp_path / "proof.json").exists() and (tmp_path / "public.json").exists()


def test_ctrl_c_while_the_proof_is_written_is_too_late_to_stop_it(tmp_path):
    proc = _run_module(tmp_path, "interrupt_in_write", """
        import signal
        from engine.groth16.proof import Proof

        real_write = Proof.write

        def write_after_ctrl_c(self, *args, **kwargs):
            signal.raise_signal(signal.SIGINT)
            sum(range(10))  # a handler would run here
            return real_write(self, *args, **kwargs)

        Proof.write = write_after_ctrl_c
        """, *_prove_args(tmp_path))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stderr.strip() == "", proc.stderr
    assert (tmp_path / "proof.json").exists() and (tmp_path / "public.json").exists()


def test_the_130_exit_still_waits_for_a_thread_that_is_writing(tmp_path):
    """As the interpreter's own exit does (a key cache's entry is written on a thread that is not a daemon)."""
    done = tmp_path / "written"
    proc = _run_module(tmp_path, "interrupt_beside_a_writer", f"""
        import threading, time
        import engine.commands.prove as prove

        def write_later():
            time.sleep(0.3)
            open({str(done)!r}, "w").write("whole")

        def interrupted_while_a_thread_writes(*args, **kwargs):
            threading.Thread(target=write_later).start()
            exec("raise KeyboardInterrupt")

        prove._run_direct = interrupted_while_a_thread_writes
        """, *_prove_args(tmp_path))
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert done.read_text() == "whole"
