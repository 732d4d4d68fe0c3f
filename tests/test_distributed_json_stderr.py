"""`prove --ray ADDRESS --json`: stderr holds JSON objects only, and a signal while ray.init blocks ends the command.

Ray's C++ core writes its log lines ("gcs_client.cc:210: Failed to get cluster ID from GCS server: ...") straight
to file descriptor 2, among the command's JSON objects; and while ray.init waited for a cluster that refuses this
process's token (20 tries, a second each), Ctrl-C and SIGTERM waited for the watchdog's grace (SIGTERM: Ray's
exit 15), and while a local instance started, for its start.  The token tests join one cluster with token
authentication, of another process, without its token.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from conftest import EXAMPLES, REPO
from test_distributed import marked, wait_for_no_marked_processes
from test_distributed_address import held_cluster


@pytest.fixture(scope="module")
def token_cluster():
    with held_cluster(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=uuid.uuid4().hex) as (address, _):
        yield address


def _start(address: str, tmp_path, *flags: str, tries: str = "3") -> subprocess.Popen:
    """`prove --ray ADDRESS` of the example, without the cluster's token; `tries`: Ray's seconds at the GCS."""
    d = EXAMPLES / "bn128"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")}
    env["RAY_gcs_server_port_wait_time_s"] = tries
    return subprocess.Popen([sys.executable, "-m", "engine", "prove", "--ray", address, "--backend", "cpu", *flags,
                             str(d / "sudoku.zkey"), str(d / "sudoku.wtns"), str(tmp_path / "proof.json"),
                             str(tmp_path / "public.json")], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def _objects(err: str) -> list[dict]:
    lines = [line for line in err.splitlines() if line.strip()]
    objects = []
    for line in lines:
        try:
            objects.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON object on stderr: {line!r}\n{err}")
    return objects


@pytest.mark.slow
def test_ray_core_log_lines_are_json_warnings_with_json(token_cluster, tmp_path):
    """Ray's C++ lines, each a warning object (the last ones too), then the error; without --json, Ray's own."""
    run = _start(token_cluster, tmp_path, "--json")
    out, err = run.communicate(timeout=60)
    assert run.returncode == 2 and out == "", (run.returncode, out, err)
    objects = _objects(err)
    assert objects[-1]["event"] == "error" and objects[-1]["error"] == "EngineStartError", objects
    ray_lines = [o["message"] for o in objects if o["event"] == "warning" and o["warning"] == "ray"]
    assert len([m for m in ray_lines if "Failed to get cluster ID from GCS server" in m]) >= 3, objects
    assert not (tmp_path / "proof.json").exists()

    run = _start(token_cluster, tmp_path, tries="1")
    out, err = run.communicate(timeout=60)
    assert run.returncode == 2 and "Failed to get cluster ID from GCS server" in err, err
    assert err.splitlines()[-1].startswith("error: could not start or join Ray at "), err


@pytest.mark.slow
@pytest.mark.parametrize("signum, code, line", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 143, "interrupted by SIGTERM")])
def test_a_signal_while_ray_init_blocks_ends_the_command_at_once(token_cluster, tmp_path, signum, code, line):
    """The signal waited for ray.init's end (or the watchdog's 3 s grace): now the command ends within 2 s with
    its line and code, stderr still JSON only, no process left."""
    with marked() as mark:
        run = _start(token_cluster, tmp_path, "--json", tries="30")
    try:
        time.sleep(4)  # the command is in ray.init's tries by now (the first comes ~1 s after the start)
        assert run.poll() is None
        run.send_signal(signum)
        sent = time.monotonic()
        out, err = run.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == code and out == "", (run.returncode, out, err)
    objects = _objects(err)
    assert objects[-1] == {"event": "error", "error": "Interrupted", "message": line, "exit_code": code}, objects
    assert took < 2, (took, err)
    assert wait_for_no_marked_processes(mark, timeout_s=5) == []


@pytest.mark.slow
def test_ctrl_c_while_a_local_instance_starts_ends_the_command_at_once(tmp_path):
    """`prove --ray local`: Ctrl-C a second in, while ray.init starts Ray's processes, waited for the start's end
    (some 5 s here, more on a busy machine); now 130 within 2 s, and none of Ray's processes left."""
    d = EXAMPLES / "bn128"
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    with marked() as mark:
        run = subprocess.Popen([sys.executable, "-m", "engine", "prove", "--ray", "local", "--backend", "cpu", "--json",
                                str(d / "sudoku.zkey"), str(d / "sudoku.wtns"), str(tmp_path / "proof.json"),
                                str(tmp_path / "public.json")], cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        time.sleep(1.0)  # in ray.init (the command's imports take a quarter of a second)
        assert run.poll() is None
        run.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = run.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 130 and out == "", (run.returncode, out, err)
    assert _objects(err)[-1] == {"event": "error", "error": "Interrupted", "message": "interrupted", "exit_code": 130}
    assert took < 2, (took, err)
    assert wait_for_no_marked_processes(mark, timeout_s=10) == []
    assert not (tmp_path / "proof.json").exists()


CORE_EXIT = r"""
import argparse, os, sys
sys.path.insert(0, sys.argv[1])
import cli
from engine.distributed import command
from engine.progress import make_progress

args = argparse.Namespace(json=True)
progress = make_progress("prove", json=True)
restore = command._ray_logs_as_warning_lines(args)  # (progress: on descriptor 2 as well)
progress.stage("cluster", 0.0)
os.write(2, b"[2026-12-05 13:12:24,366 W 1 2] gcs_client.cc:210: Failed to get cluster ID from GCS server\n")
if sys.argv[2] == "restore":
    restore()
    cli.stderr_line('{"event": "error", "error": "EngineStartError"}')
    import logging, threading  # a start that Ctrl-C abandoned, still on its thread, logs its failure after that
    late = threading.Thread(target=logging.getLogger("ray._private.services").error,
                            args=("'NoneType' object has no attribute 'internal_kv_get'",))
    late.start()
    late.join()
    logging.getLogger("engine.distributed.cluster").warning("an engine was lost")
    sys.exit(2)
os.write(2, b"[2026-12-05 13:12:24,366 E 1 2] rpc_client.h:204: Failed to connect to GCS within 24 seconds. The "
         b"program will terminate.\n")
os._exit(1)  # as Ray's core ends the process: no Python code runs after its line
"""


@pytest.mark.parametrize("end", ["restore", "exit"])
def test_the_core_last_lines_come_as_warnings_before_the_error_or_the_process_end(end):
    """The last lines Ray's core writes on descriptor 2, each a warning object: before the command's error line
    (restore), and where Ray's core ends the process itself (_exit after "The program will terminate.").  After
    the error line, a log record of Ray's (ray.init's thread, abandoned by Ctrl-C) was Ray's own line on stderr,
    after the error object: now dropped."""
    run = subprocess.run([sys.executable, "-c", CORE_EXIT, str(REPO), end], cwd=REPO, capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert run.returncode == (2 if end == "restore" else 1), run.stderr
    objects = _objects(run.stderr)
    assert objects[0]["event"] == "stage", objects
    assert objects[1] == {"event": "warning", "warning": "ray",
                          "message": "gcs_client.cc:210: Failed to get cluster ID from GCS server"}, objects
    if end == "restore":
        assert objects[2:] == [{"event": "error", "error": "EngineStartError"}], objects
    else:
        assert objects[2:] == [{"event": "warning", "warning": "ray", "message": "rpc_client.h:204: Failed to "
                                "connect to GCS within 24 seconds. The program will terminate."}], objects


START_DRIVER = """
import asyncio, json, os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from test_distributed import sim_config
from engine.distributed import RayCluster
from engine.errors import EngineError

async def main():
    async with RayCluster(sys.argv[2], engines=1, config=sim_config(), cpus_per_engine=1):  # the cluster's CPU
        started = None
        async def kill():
            nonlocal started
            await asyncio.sleep(1)
            os.kill(int(sys.argv[3]), signal.SIGKILL)  # the cluster's GCS, while the second engine waits for a CPU
            started = time.monotonic()
        killer = asyncio.ensure_future(kill())
        try:
            async with RayCluster(sys.argv[2], engines=1, config=sim_config(), cpus_per_engine=1):
                pass
        except EngineError as exc:
            print(json.dumps({"error": type(exc).__name__, "message": str(exc), "after": time.monotonic() - started}))
        await killer

asyncio.run(main())
"""


@pytest.mark.slow
def test_a_cluster_whose_gcs_dies_while_its_engines_start_fails_its_start_before_ray_ends_the_process():
    """`prove --ray HOST:PORT --json` with the GCS gone while the engine actors started: the watch said "its jobs
    fail" but the start waited on, and Ray's core ended the process with status 1 (no error line) once it gave up
    on the GCS."""
    with held_cluster(RAY_AUTH_MODE="disabled") as (address, gcs):
        env = {**os.environ, "RAY_gcs_rpc_server_reconnect_timeout_s": "24", "RAY_AUTH_MODE": "disabled"}
        res = subprocess.run([sys.executable, "-c", START_DRIVER, str(REPO / "tests"), address, gcs], cwd=REPO,
                             env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert res.returncode == 0 and res.stdout, (res.returncode, res.stdout, res.stderr[-2000:])
    error = json.loads(res.stdout.splitlines()[0])
    assert error["error"] == "EngineLostError" and error["after"] < 20, error
    assert error["message"].endswith(" s: the cluster is gone") and "GCS at " in error["message"], error


def test_a_stderr_that_refuses_writes_leaves_the_exit_code_as_it_was(tmp_path):
    """stderr on a full device (2>/dev/full): its lines are dropped and the command's exit code stands, as for
    every command (engine/__main__'s stderr), not an OSError's exit 1 once stderr is the original one's copy."""
    d = EXAMPLES / "bn128"
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "engine", "prove", "--ray", "127.0.0.1:1", "--backend", "cpu",
                              "--json", str(d / "sudoku.zkey"), str(d / "sudoku.wtns"), str(tmp_path / "proof.json"),
                              str(tmp_path / "public.json")], cwd=REPO, stdout=subprocess.PIPE, stderr=full,
                             stdin=subprocess.DEVNULL, timeout=60)
    assert res.returncode == 2 and res.stdout == b""
