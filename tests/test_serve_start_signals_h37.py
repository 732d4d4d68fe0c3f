"""A stop signal or Ctrl-C while `python -m engine serve` starts: where the main thread is when it comes.

Python's handler raised KeyboardInterrupt wherever that thread was.  Inside anyio's hand-off to a worker thread
(started, not yet tied to the loop's main task) the thread was left waiting forever, the exit waited for it and
every later signal was ignored; inside an import the module was cut short (a C extension's: -11 once); where code
swallowed it, serve went on to listen with its SIGTERM lost.  Each window is made certain here by sending the
signal from inside it (the process signals itself from a patched step), and serve must end with its line and
128 + the signal within seconds, nothing of its group left (engine/service/start_signals.py).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import REPO
from test_cli_fifo_inputs import _group, _line

SERVE = 'sys.argv = ["engine", "serve", "--port", "0", "--backend", "cpu"]\n' \
        'runpy.run_module("engine", run_name="__main__", alter_sys=True)\n'

# Right after anyio started a worker thread for the engine's start, before anyio ties its stop to the main task;
# compiled as anyio's own code, where it runs.
IN_ANYIO_THREAD_START = """
import os, runpy, signal, sys
import anyio._backends._asyncio as aio

code = '''
def start(self):
    real_start(self)
    if not sent:
        sent.append(1)
        os.kill(os.getpid(), SIGNUM)
        sum(range(100))
'''
ns = {"__name__": aio.__name__, "real_start": aio.WorkerThread.start, "os": os, "sent": [], "SIGNUM": SIGNUM}
exec(compile(code, aio.__file__, "exec"), ns)
aio.WorkerThread.start = ns["start"]
"""

# While MODULE is being imported (serve's start imports uvloop and the engine's pools after the signals became
# interrupts; aiohttp, numpy and asyncio come before, in its preload: tests/test_cli_ends_h47.py);
# the exit hooks (run by engine/__main__'s _leave) say whether that import finished.
IN_AN_IMPORT = """
import atexit, os, runpy, signal, sys

class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE and not sent:
            sent.append(1)
            for _ in range(SIGNALS):
                os.kill(os.getpid(), SIGNUM)
                sum(range(100))
        return None

sent = []
sys.meta_path.insert(0, Finder())
atexit.register(lambda: os.write(2, b"imported: %d\\n" % (MODULE in sys.modules)))
"""

# Where our own code swallows it (as importlib's lock callback did), here in the engine's start: compiled as the
# synthesis pool's own code, which this replaces.
SWALLOWED = """
import os, runpy, signal, sys
import scheduler.synth_pool as synth_pool

code = '''
def check_open_files(*args):
    try:
        os.kill(os.getpid(), SIGNUM)
        sum(range(100))
    except BaseException:
        pass
    return real_check(*args)
'''
ns = {"__name__": synth_pool.__name__, "real_check": synth_pool.check_open_files, "os": os, "SIGNUM": SIGNUM}
exec(compile(code, synth_pool.__file__, "exec"), ns)
synth_pool.check_open_files = ns["check_open_files"]
"""

# Between the CLI's own_process() and serve's stop_until_serving(): the stop signals were at their default action.
BEFORE_SERVE_RUNS = """
import os, runpy, signal, sys
import cli

real_route = cli._route_log_warnings

def route(*args):
    os.kill(os.getpid(), SIGNUM)
    sum(range(100))
    return real_route(*args)

cli._route_log_warnings = route
"""

# Blocked in a library's frame (here one compiled as tomllib's) before the loop runs: a FIFO nobody writes.
STUCK_IN_A_LIBRARY = """
import atexit, os, runpy, signal, sys, tomllib
import engine.service.settings as settings

atexit.register(lambda: os.write(2, b"left through the exit hooks\\n"))

code = '''
def read_tokens(*args):
    os.kill(os.getpid(), SIGNUM)
    with open(FIFO) as f:
        f.read()
'''
ns = {"__name__": tomllib.__name__, "os": os, "SIGNUM": SIGNUM, "FIFO": FIFO}
exec(compile(code, tomllib.__file__, "exec"), ns)
settings.read_tokens = ns["read_tokens"]
"""


def _serve(tmp_path, harness: str, timeout: float = 20, **values) -> tuple[int | None, list[str], list[int]]:
    """Run serve under `harness` (its names filled from `values`): (exit code, None if it did not end within
    `timeout`; stderr's lines; the processes of its group still there 10 s after it ended)."""
    constants = "".join(f"{name} = {value!r}\n" for name, value in values.items())
    (tmp_path / "harness.py").write_text(constants + textwrap.dedent(harness) + SERVE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "harness"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, [], _group(proc.pid)
        deadline = time.monotonic() + 10
        while _group(proc.pid) and time.monotonic() < deadline:  # the pool's forkserver leaves on its own
            time.sleep(0.1)
        return proc.returncode, stderr.splitlines(), _group(proc.pid)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_inside_anyios_thread_hand_off_ends_serve(tmp_path, signum):
    """It hung forever in threading._shutdown, on an AnyIO worker thread nobody would stop, signals ignored."""
    assert _serve(tmp_path, IN_ANYIO_THREAD_START, SIGNUM=int(signum)) == (128 + signum, [_line(signum)], [])


@pytest.mark.parametrize(("module", "signum"), [("uvloop", signal.SIGTERM), ("scheduler.cpu_pool", signal.SIGINT)],
                         ids=["uvloop-SIGTERM", "cpu_pool-SIGINT"])
def test_a_signal_inside_an_import_waits_for_its_end(tmp_path, module, signum):
    """The import was cut short by the KeyboardInterrupt (a C extension's init could crash: -11)."""
    code, lines, left = _serve(tmp_path, IN_AN_IMPORT, MODULE=module, SIGNUM=int(signum), SIGNALS=1)
    assert (code, lines, left) == (128 + signum, [_line(signum), "imported: 1"], [])


def test_a_second_signal_while_the_first_waits_for_an_import_leaves_at_once(tmp_path):
    """The first waits for the import's end; the second does not wait (the first one's line, no exit hooks)."""
    code, lines, left = _serve(tmp_path, IN_AN_IMPORT, MODULE="uvloop", SIGNUM=int(signal.SIGTERM), SIGNALS=2)
    assert (code, lines, left) == (143, ["interrupted by SIGTERM"], [])


def test_an_interrupt_that_code_swallowed_still_ends_the_start(tmp_path):
    """serve went on to listen, its SIGTERM lost: only SIGKILL ended it."""
    assert _serve(tmp_path, SWALLOWED, SIGNUM=int(signal.SIGTERM)) == (143, ["interrupted by SIGTERM"], [])


def test_a_stop_signal_before_serve_takes_the_signals_says_its_line(tmp_path):
    """own_process() had left SIGTERM at its default action for serve: killed, -15, no line."""
    assert _serve(tmp_path, BEFORE_SERVE_RUNS, SIGNUM=int(signal.SIGTERM)) == (143, ["interrupted by SIGTERM"], [])


def test_a_signal_while_stuck_in_a_librarys_blocking_call_ends_serve_soon(tmp_path):
    """Not raised in a library's frame at once; once the main thread has not moved for STUCK_S, it is, and the
    wait ends through the exit's hooks (not the watchdog's forced exit after WATCH_GRACE_S, which skips them)."""
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    result = _serve(tmp_path, STUCK_IN_A_LIBRARY, SIGNUM=int(signal.SIGTERM), FIFO=str(fifo))
    assert result == (143, ["interrupted by SIGTERM", "left through the exit hooks"], [])
