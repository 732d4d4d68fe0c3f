"""A stop signal (SIGTERM, SIGHUP, SIGQUIT) at a command's edges: after its output was written, in the
interpreter's teardown (which puts every Python handler back to the default action: the process died of the
signal, exit -15/-1 with no word, its witness written), and before the start-up handlers were installed."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO

TINY = FIXTURES / "tiny" / "bn128"
INPUT = FIXTURES / "tiny" / "input.json"


def _run_module(tmp_path: Path, name: str, body: str, *argv) -> subprocess.CompletedProcess:
    """`python -m <name>`: `body`, then `python -m engine <argv>` as __main__ through runpy."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body) + textwrap.dedent(f"""
        import runpy, sys
        sys.argv = ["engine", *{[str(a) for a in argv]!r}]
        runpy.run_module("engine", run_name="__main__", alter_sys=True)
        """))
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO), *inherited]))
    return subprocess.run([sys.executable, "-m", name], cwd=tmp_path, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


# Runs in the interpreter's teardown after its signal handlers were reset (_PySignal_Fini comes before the
# modules' dicts are cleared): a signal sent there meets whatever disposition the process left it.
LATE_SIGNAL = """
    import os, signal

    class _Late:
        def __del__(self, os=os, signal=signal):
            os.close(os.open("sent", os.O_CREAT | os.O_WRONLY))  # (in the cwd: the test's folder)
            os.kill(os.getpid(), signal.{name})

    late = _Late()
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGQUIT"])
def test_a_stop_signal_in_the_teardown_after_the_witness_is_too_late(tmp_path, name):
    out = tmp_path / "w.wtns"
    proc = _run_module(tmp_path, "late_signal", LATE_SIGNAL.format(name=name),
                       "witness", TINY / "tiny.wasm", INPUT, out)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stderr == "", proc.stderr
    assert out.stat().st_size > 0 and (tmp_path / "sent").exists()  # (the signal was sent)


@pytest.mark.parametrize("command", ["setup", "export-vkey", "bench-circuit"])
def test_sigterm_in_the_teardown_after_the_other_commands_is_too_late(tmp_path, command):
    argv = {"setup": ["setup", TINY / "tiny.r1cs", tmp_path / "k.zkey", "--quiet"],
            "export-vkey": ["export-vkey", TINY / "tiny.zkey", tmp_path / "vk.json"],
            "bench-circuit": ["bench-circuit", "--constraints", "8", tmp_path / "bench"]}[command]
    proc = _run_module(tmp_path, "late_signal", LATE_SIGNAL.format(name="SIGTERM"), *argv)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "interrupted" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert (tmp_path / "sent").exists()


def test_the_start_up_handlers_come_before_the_bytecode_cache_is_imported(tmp_path):
    """engine/__main__ installed them after importing engine.bytecode_cache (2-3 ms of a cold start: a SIGHUP
    there killed the command with no word); now as soon as its own few lines allow."""
    proc = _run_module(tmp_path, "order_probe", """
        import signal, sys

        class _Probe:
            def find_spec(self, name, path=None, target=None):
                if name == "engine.bytecode_cache":
                    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
                    print("loading" if all(getattr(h, "loading", False) for h in handlers) else "default",
                          file=sys.stderr)
                return None

        sys.meta_path.insert(0, _Probe())
        """, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "loading", proc.stderr


NUMPY_PROBE = """
    import signal, sys

    class _Probe:
        def find_spec(self, name, path=None, target=None):
            if name == "numpy":
                handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
                print("numpy under " + ("loading" if all(getattr(h, "loading", False) for h in handlers)
                                        else "the command's handlers"), file=sys.stderr)
            return None

    sys.meta_path.insert(0, _Probe())
"""
EXAMPLE = REPO / "examples" / "bn128"


@pytest.mark.parametrize("argv", [
    ["witness", TINY / "tiny.wasm", INPUT, "{tmp}/w.wtns"],
    ["bench-circuit", "--constraints", "8", "{tmp}/bench"],
    ["setup", TINY / "tiny.r1cs", "{tmp}/k.zkey"],
    ["export-vkey", TINY / "tiny.zkey", "{tmp}/vk.json"],
    ["verify", EXAMPLE / "verification_key.json", EXAMPLE / "public.json", EXAMPLE / "proof.json"],
    ["info", EXAMPLE / "proof.json"],
], ids=lambda argv: argv[0])
def test_numpy_loads_before_a_signal_becomes_a_keyboardinterrupt(tmp_path, argv):
    """A SIGTERM (or Ctrl-C) inside numpy's C init, which a command imported in its run after cli.main had
    made signals KeyboardInterrupts: numpy swallowed it and failed, an ImportError traceback of thirty lines
    and exit 1.  Now it loads with the start-up handlers (a clean `interrupted by SIGTERM`, 143)."""
    argv = [str(a).replace("{tmp}", str(tmp_path)) for a in argv]
    quiet = [] if argv[0] in ("verify", "info") else ["--quiet"]
    proc = _run_module(tmp_path, "numpy_probe", NUMPY_PROBE, *argv, *quiet)
    assert "numpy under loading" in proc.stderr.splitlines(), proc.stderr
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("argv, code", [
    (["verify", EXAMPLE / "verification_key.json", EXAMPLE / "public.json", EXAMPLE / "proof.json"], 0),
    (["info", EXAMPLE / "proof.json"], 0),
    (["verify", EXAMPLE / "verification_key.json", EXAMPLE / "public.json", "missing.json"], 2),
], ids=["verify", "info", "an-error"])
def test_a_stop_signal_after_a_command_said_its_result_is_too_late(tmp_path, argv, code):
    """`verify` had printed OK! (or its error line) and died of a SIGTERM in the teardown: exit -15, its
    result's code lost.  A command that writes no file never reached finished(); now cli.main's end does."""
    proc = _run_module(tmp_path, "late_signal", LATE_SIGNAL.format(name="SIGTERM"), *argv)
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "interrupted" not in proc.stderr, proc.stderr
    assert (tmp_path / "sent").exists()


@pytest.mark.parametrize("where", ["engine.interrupts:_start_watch", "cli:_route_log_warnings"])
def test_a_stop_signal_while_cli_main_takes_the_handlers_over(tmp_path, where):
    """SIGTERM while cli.main installed its handlers (own_process starting the watchdog's thread, the warning
    routes after it): a KeyboardInterrupt traceback out of cli.main, exit -2."""
    module, name = where.split(":")
    proc = _run_module(tmp_path, "takeover", f"""
        import signal, importlib
        mod = importlib.import_module({module!r})
        real = mod.{name}

        def stopped(*args, **kwargs):
            signal.raise_signal(signal.SIGTERM)
            sum(range(10))  # (a handler runs here)
            return real(*args, **kwargs)

        mod.{name} = stopped
        """, "info", EXAMPLE / "proof.json")
    assert (proc.returncode, proc.stderr) == (143, "interrupted by SIGTERM\n")


CHANGED_INTERRUPT = """
    import signal
    import engine.commands.info as info

    def run(args):
        try:
            signal.raise_signal(signal.{name})
            sum(range(10))  # (the handler runs here)
        except KeyboardInterrupt as exc:
            {what}
        raise ImportError("PyCapsule_Import could not import module \\"datetime\\"")

    info.run = run
"""


@pytest.mark.parametrize("name, what, line, code", [
    ("SIGINT", 'raise RuntimeError("Error calling __set_name__ on Field") from exc', "interrupted", 130),
    ("SIGTERM", "pass  # swallowed (numpy's C init)", "interrupted by SIGTERM", 143),
], ids=["changed-into-another-error", "swallowed-then-failed"])
def test_an_interrupt_that_code_turns_into_another_error_is_still_an_interrupt(tmp_path, name, what, line, code):
    """A KeyboardInterrupt inside a dataclass made at import (its __set_name__: `RuntimeError`) or numpy's C init
    (swallowed: an ImportError) came out as a traceback, exit 1."""
    proc = _run_module(tmp_path, "changed", CHANGED_INTERRUPT.format(name=name, what=what),
                       "info", EXAMPLE / "proof.json")
    assert (proc.returncode, proc.stderr) == (code, line + "\n")


@pytest.mark.parametrize("first, second", [("SIGTERM", "SIGINT"), ("SIGTERM", "SIGTERM"), ("SIGINT", "SIGTERM")])
def test_a_second_signal_while_the_interrupted_line_is_written(tmp_path, first, second):
    """SIGTERM, then Ctrl-C 3 ms later (a user's second key, a supervisor's second signal): the second was a
    KeyboardInterrupt raised inside the write of the first one's line, a traceback and exit -2."""
    proc = _run_module(tmp_path, "second_signal", f"""
        import signal
        import cli
        import engine.commands.witness as witness

        real_line = cli.stderr_line

        def second_inside(text):
            signal.raise_signal(signal.{second})
            sum(range(10))  # (a handler runs here)
            real_line(text)

        def stopped(args):
            signal.raise_signal(signal.{first})
            sum(range(10))

        cli.stderr_line = second_inside
        witness.run = stopped
        """, "witness", TINY / "tiny.wasm", INPUT, tmp_path / "w.wtns")
    line, code = ("interrupted", 130) if first == "SIGINT" else ("interrupted by SIGTERM", 143)
    assert (proc.returncode, proc.stderr) == (code, line + "\n")  # the first one's
    assert not (tmp_path / "w.wtns").exists()
