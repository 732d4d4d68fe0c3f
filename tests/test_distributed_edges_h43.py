"""What `prove --ray` and RayCluster say at their edges: Ray's GCS wait read as Ray reads it, a broken Ray install
named as such, and with --json Python's own tracebacks (a thread's, an unraisable exception's) as warning objects
before the command's end and never after its error object."""
from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import types

import pytest

from conftest import EXAMPLES, REPO
from engine.distributed import connection

GCS_WAIT = "RAY_gcs_rpc_server_reconnect_timeout_s"


def _objects(err: str) -> list[dict]:
    """stderr's lines, each a JSON object (an assertion names the first line that is not one)."""
    objects = []
    for line in err.splitlines():
        try:
            objects.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON object: {line!r} in {err!r}") from None
    return objects


# ------------------------------------------------------------------ RAY_gcs_rpc_server_reconnect_timeout_s

# whether Ray 2.60's `import ray` takes each value, checked by hand (None: a segmentation fault, exit -11); the
# numbers are ray_config.h's reading of those it takes (an istringstream's >> into an int32_t)
RAY_READS = [("60", 60), (" 60", 60), ("\t60", 60), ("+7", 7), ("-5", -5), ("-", 0), ("0000000000000060", 60),
             ("99999999999", 2**31 - 1), ("-99999999999", -2**31), ("9" * 5000, 2**31 - 1), ("   ", 60),
             ("nan", None), ("inf", None), ("1.5", None), ("60 ", None), ("", None), ("0x10", None),
             ("6e1", None), ("1_0", None), ("٦٠", None)]


@pytest.mark.parametrize("text, seconds", RAY_READS)
def test_the_gcs_wait_is_read_as_ray_reads_it(monkeypatch, text, seconds):
    monkeypatch.setenv(GCS_WAIT, text)
    if seconds is None:  # before Ray's import: one line naming the variable, where Ray would crash without one
        with pytest.raises(connection.ConfigError, match=f"^{GCS_WAIT}: .* is not a whole number of seconds"):
            connection.gcs_wait_s(strict=True)
        assert connection.gcs_wait_s() == 60  # after it (changed since Ray read it): Ray's default
    else:
        assert connection.gcs_wait_s(strict=True) == connection.gcs_wait_s() == seconds


@pytest.fixture
def refusing_port():
    """A local port where nothing listens: every connection is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("text, own, said", [("nan", None, 45), ("inf", None, 45), ("-5", None, 10),
                                             ("60", 30, 15), ("nan", 30, 15)])
def test_the_watch_says_the_cluster_is_gone_for_any_value(monkeypatch, refusing_port, text, own, said):
    """float("nan") as the wait: no comparison with it is true, and the watch never said the cluster was gone
    ("inf" neither); Ray's import crashes on both, so a value the variable took after it is Ray's default (60 s:
    the watch's 40 s).  A negative one is Ray's too: its process exits at the GCS's first silence, and so the
    watch says it at once.  Where Ray's build says its own value (ray._config), that one (30 s: the watch's 10 s).
    A clock that runs 5 s a call, no second between two tries: the number said is the call after the first past
    the watch's wait."""
    monkeypatch.setenv(GCS_WAIT, text)
    monkeypatch.setattr(connection, "_gcs_address", lambda ray: f"127.0.0.1:{refusing_port}")
    monkeypatch.setattr(connection, "_client_mode", lambda: False)
    ticks = iter(range(1000, 10**6, 5))
    monkeypatch.setattr(connection, "time", types.SimpleNamespace(monotonic=lambda: next(ticks)))
    fast = types.ModuleType("asyncio")  # its second between two tries: none
    fast.__dict__.update(vars(asyncio))
    fast.sleep = lambda seconds: asyncio.sleep(0)
    monkeypatch.setattr(connection, "asyncio", fast)
    ray = types.SimpleNamespace(_config=types.SimpleNamespace(gcs_rpc_server_reconnect_timeout_s=lambda: own))

    async def main() -> str:
        gone = asyncio.get_running_loop().create_future()
        task = connection.watch_gcs(ray if own is not None else None, gone.set_result)
        try:
            return await asyncio.wait_for(gone, 20)
        finally:
            task.cancel()

    assert asyncio.run(main()) == (f"the Ray cluster's GCS at 127.0.0.1:{refusing_port} has not answered for "
                                   f"{said} s: the cluster is gone")


def _prove_on_ray(tmp_path, *flags: str, env: dict | None = None, before: str = "") -> subprocess.CompletedProcess:
    """`prove --ray local --json` of the example, `before` run first in its process (a broken import set up)."""
    script = (f"import sys\nsys.path.insert(0, {str(REPO)!r})\n{before}\nimport cli\n"
              "sys.exit(cli.main(sys.argv[1:]))\n")
    key, witness = EXAMPLES / "bn128" / "sudoku.zkey", EXAMPLES / "bn128" / "sudoku.wtns"
    return subprocess.run([sys.executable, "-c", script, "prove", str(key), str(witness), str(tmp_path / "proof.json"),
                           str(tmp_path / "public.json"), "--ray", "local", "--json", *flags], cwd=tmp_path,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
                          env={**os.environ, **(env or {})})

def test_a_gcs_wait_ray_would_crash_on_is_one_error_line_before_its_import(tmp_path):
    """Ray's `import ray` with RAY_gcs_rpc_server_reconnect_timeout_s=nan is a segmentation fault without a word
    (exit -11): the command said nothing at all."""
    run = _prove_on_ray(tmp_path, env={GCS_WAIT: "nan"})
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert _objects(run.stderr)[-1] == {
        "event": "error", "error": "ConfigError", "exit_code": 2,
        "message": f"{GCS_WAIT}: 'nan' is not a whole number of seconds, and Ray's import would crash on it (leave "
                   "it unset for Ray's 60 s)"}
    assert not (tmp_path / "proof.json").exists()


# ------------------------------------------------------------------ a broken Ray install

BROKEN = """
import importlib.abc, sys

class Broken(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == {name!r}:
            raise {error}
        return None

sys.meta_path.insert(0, Broken())
"""


@pytest.mark.parametrize("name, error, message", [
    ("ray", "ModuleNotFoundError(\"No module named 'ray'\", name='ray')",
     "Ray is not installed: pip install 'groth16-engine[ray]' (or pip install ray)"),
    ("ray._raylet", "ModuleNotFoundError(\"No module named 'ray._raylet'\", name='ray._raylet')",
     "Ray is installed but its import failed: no module named 'ray._raylet' (a broken install? pip install "
     "--force-reinstall ray)"),
    ("ray._raylet", "ImportError('libray.so: cannot open shared object file: No such file or directory', "
                    "name='ray._raylet')",
     "Ray is installed but its import failed: ray._raylet: libray.so: cannot open shared object file: No such file "
     "or directory (a broken install? pip install --force-reinstall ray)"),
])
def test_an_import_of_ray_that_fails_partway_names_what_failed(tmp_path, name, error, message):
    """A missing submodule or shared library was "Ray is not installed"."""
    run = _prove_on_ray(tmp_path, before=BROKEN.format(name=name, error=error))
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert _objects(run.stderr)[-1] == {"event": "error", "error": "BackendUnavailableError", "exit_code": 2,
                                        "message": message}


def test_an_error_of_another_kind_in_rays_import_names_the_module_it_ended(tmp_path):
    """A file named cmd.py in the working directory (the script's first path) hides the standard library's, which
    pdb needs as Ray's import loads it: that AttributeError was a traceback."""
    (tmp_path / "cmd.py").write_text("")
    run = _prove_on_ray(tmp_path)
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert _objects(run.stderr)[-1] == {
        "event": "error", "error": "BackendUnavailableError", "exit_code": 2,
        "message": "Ray is installed but its import failed: importing pdb: AttributeError: module 'cmd' has no "
                   "attribute 'Cmd' (a broken install? pip install --force-reinstall ray)"}


# ------------------------------------------------------------------ Python's tracebacks with --json

LATE = r"""
import argparse, gc, sys, threading
sys.path.insert(0, sys.argv[1])
import cli
from engine.distributed import command

args = argparse.Namespace(json=sys.argv[2] == "json")


class Dropped:
    def __del__(self):
        raise RuntimeError("a __del__ that fails")


def fail(what):
    raise ValueError(f"{what}\nits second line")


def both(when):
    thread = threading.Thread(target=fail, args=(f"a thread's exception {when}",), name=f"ray-{when}")
    thread.start()
    thread.join()
    Dropped()
    gc.collect()


restore = command._ray_logs_as_warning_lines(args)
both("before")
threading.Thread(target=sys.exit, name="quiet").start()  # a thread's SystemExit: nothing, as Python's hook says
restore()
cli.stderr_line('{"event": "error", "error": "EngineStartError"}')
both("after")
sys.exit(2)
"""


def test_python_tracebacks_with_json_are_warnings_before_the_end_and_dropped_after():
    run = subprocess.run([sys.executable, "-c", LATE, str(REPO), "json"], cwd=REPO, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    objects = _objects(run.stderr)
    assert objects[0] == {"event": "warning", "warning": "ValueError",
                          "message": "in thread ray-before: ValueError: a thread's exception before"}, objects
    assert objects[1]["event"] == "warning" and objects[1]["warning"] == "RuntimeError", objects
    assert re.fullmatch(r"Exception ignored in: <function Dropped.__del__ at 0x[0-9a-f]+>: RuntimeError: a __del__ "
                        "that fails", objects[1]["message"]), objects
    assert objects[2:] == [{"event": "error", "error": "EngineStartError"}], objects


def test_python_tracebacks_without_json_are_left_as_python_prints_them():
    run = subprocess.run([sys.executable, "-c", LATE, str(REPO), "text"], cwd=REPO, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    for what in ("before", "after"):
        assert f"Exception in thread ray-{what}" in run.stderr and f"a thread's exception {what}" in run.stderr
    assert run.stderr.count("Exception ignored in: <function Dropped.__del__") == 2, run.stderr


def test_ray_missing_is_said_before_a_gcs_wait_that_its_import_would_crash_on(tmp_path):
    broken = BROKEN.format(name="ray", error="ModuleNotFoundError(\"No module named 'ray'\", name='ray')")
    run = _prove_on_ray(tmp_path, env={GCS_WAIT: "nan"}, before=broken)
    assert _objects(run.stderr)[-1]["message"] == ("Ray is not installed: pip install 'groth16-engine[ray]' (or pip "
                                                   "install ray)"), run.stderr


@pytest.mark.parametrize("value, shown", [("٣", "'٣'"), ("1_000", "'1_000'"), ("0", "'0'"),
                                          ("9" * 5000, "'" + "9" * 36 + "...")])
def test_engines_takes_ascii_counts_only_and_cuts_a_long_value(value, shown):
    """--engines took '٣' as 3 and '1_000' as a thousand engine actors (int()), and repeated 5000 digits in full."""
    from engine.distributed.command import _engines
    from engine.errors import EngineError

    with pytest.raises(EngineError) as info:
        _engines(value)
    assert str(info.value) == f"--engines: {shown} is not a count >= 1 or per-gpu"


@pytest.mark.parametrize("value, count", [("3", 3), (" 2 ", 2), ("per-gpu", "per-gpu"), (" per-gpu", "per-gpu")])
def test_engines_keeps_its_counts(value, count):
    from engine.distributed.command import _engines

    assert _engines(value) == count
