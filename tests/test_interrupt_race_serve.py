"""A second signal while `serve` leaves: after it said it stopped, or while its start is undone.

serve left through the interpreter's whole teardown (sys.exit): a Ctrl-C in its atexit hooks (the CPU pool's
shutdown, the shared-memory removal, logging's flush) printed "Exception ignored in atexit callback" and a
KeyboardInterrupt traceback, and one a moment later, once the interpreter had put its signal handlers back to
the default action, killed the process by SIGINT (-2) with no line at all (4 in 4 with a gap of 5-40 ms).
Now serve leaves as the other commands do (engine/__main__'s _leave): a Ctrl-C there exits at once, 130.
The signal is injected from an atexit hook that runs in that teardown.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import REPO

SERVE_THEN_CTRL_C = """
import atexit, os, runpy, signal, sys

def ctrl_c_in_teardown():
    os.kill(os.getpid(), signal.SIGINT)
    sum(range(10))

atexit.register(ctrl_c_in_teardown)
import engine.service.server as server

real_say = server._say

def say(line):
    real_say(line)
    if "listening" in line:
        os.kill(os.getpid(), signal.SIGINT)  # the first Ctrl-C: drain (nothing admitted), stop

server._say = say
sys.argv = ["engine", "serve", "--port", "0", "--backend", "cpu"]
runpy.run_module("engine", run_name="__main__", alter_sys=True)
"""


def test_a_ctrl_c_in_serves_exit_leaves_at_once_without_a_traceback(tmp_path):
    (tmp_path / "serve_then_ctrl_c.py").write_text(textwrap.dedent(SERVE_THEN_CTRL_C))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "serve_then_ctrl_c"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1] == "engine serve: stopped", proc.stderr
    assert proc.returncode == 130, (proc.returncode, proc.stderr)


TWO_SIGTERMS_AT_START = """
import os, runpy, signal, sys
import engine.service.server as server

real_listen = server.listen

def listen(*args):
    os.kill(os.getpid(), signal.SIGTERM)  # a stop signal while serve starts: its start is undone ...
    sum(range(10))
    # ... and another one comes inside code run by exec() (a dataclass or namedtuple made by an import)
    exec("import os, signal\\nos.kill(os.getpid(), signal.SIGTERM)\\nsum(range(10))")
    return real_listen(*args)

server.listen = listen
sys.argv = ["engine", "serve", "--port", "0", "--backend", "cpu"]
runpy.run_module("engine", run_name="__main__", alter_sys=True)
"""


def test_two_sigterms_while_serve_starts_exit_143_not_by_sigint(tmp_path):
    """It said `interrupted by SIGTERM`, then the interpreter's exit, marked by the KeyboardInterrupt that passed
    through exec'd code, killed the process by SIGINT (-2)."""
    (tmp_path / "two_sigterms.py").write_text(textwrap.dedent(TWO_SIGTERMS_AT_START))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "two_sigterms"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert proc.stderr.splitlines() == ["interrupted by SIGTERM"], proc.stderr
    assert proc.returncode == 143, (proc.returncode, proc.stderr)
