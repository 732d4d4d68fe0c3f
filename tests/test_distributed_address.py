"""`--ray ADDRESS` / RayCluster(address) where no Ray cluster is: one line, in seconds, nothing left running.

A TCP listener that is not Ray (one that accepts and says nothing, a web server such as the prover service)
made ray.init retry for minutes: `prove --ray 127.0.0.1:PORT` never ended.  A port out of range, a negative one,
a host that does not resolve or a scheme other than ray:// each get their own line before Ray is asked.
No test here starts Ray: every address is refused before ray.init.
"""
from __future__ import annotations

import asyncio
import http.server
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

from engine.distributed import RayCluster
from engine.errors import EngineError, EngineStartError

from conftest import EXAMPLES, REPO
from test_distributed import cpu_config, marked, wait_for_no_marked_processes

TIMEOUT_ENV = "GROTH16_RAY_CHECK_TIMEOUT_S"  # seconds the address check waits for an answer (default 5)


class Listener:
    """A TCP service on every interface (Ray turns 127.0.0.1 into this node's address): `kind` says what it does
    with a connection: "silent" holds it and says nothing, "closes" closes it, "http" is a web server."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.held: list[socket.socket] = []
        if kind == "http":
            self.server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), http.server.BaseHTTPRequestHandler)
            self.server.RequestHandlerClass.log_message = lambda *args: None
            self.port = self.server.server_address[1]
            target = self.server.serve_forever
        else:
            self.sock = socket.create_server(("0.0.0.0", 0))
            self.port = self.sock.getsockname()[1]
            target = self._accept
        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the test is over
                return
            if self.kind == "closes":
                conn.close()
            else:
                self.held.append(conn)

    def close(self) -> None:
        if self.kind == "http":
            self.server.shutdown()
            self.server.server_close()
        else:
            self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def listener(request):
    served = Listener(request.param)
    yield served
    served.close()


def _free_port() -> int:
    """A port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


async def _start_error(address: str) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(EngineStartError) as caught:
        async with RayCluster(address, engines=1, config=cpu_config()):
            pass
    return str(caught.value), time.monotonic() - started


@pytest.mark.parametrize("listener, why", [
    ("silent", "accepted the connection but did not answer within 1 s"),
    ("closes", "closed the connection without answering"),
    ("http", "answers HTTP (a web server), not Ray's gRPC"),
], indirect=["listener"])
async def test_a_service_that_is_not_ray_is_refused_within_the_check_timeout(listener, why, monkeypatch):
    monkeypatch.setenv(TIMEOUT_ENV, "1")
    address = f"127.0.0.1:{listener.port}"
    text, took = await _start_error(address)
    assert took < 5, took
    assert text.startswith(f"could not start or join Ray at '{address}': ") and "not a Ray cluster" in text, text
    assert why in text and "\n" not in text, text


@pytest.mark.parametrize("address, words", [
    ("127.0.0.1:70000", "port 70000 is not a port number (1-65535)"),
    ("127.0.0.1:-5", "port -5 is not a port number (1-65535)"),
    ("127.0.0.1:0", "port 0 is not a port number (1-65535)"),
    ("ray://127.0.0.1:99999", "port 99999 is not a port number (1-65535)"),
    ("127.0.0.1:", "no port (expected HOST:PORT)"),
    (":6379", "no host (expected HOST:PORT)"),
    ("nosuchhost.invalid:6379", "host nosuchhost.invalid does not resolve"),
    ("ray://nosuchhost.invalid:10001", "host nosuchhost.invalid does not resolve"),
    ("http://127.0.0.1:8080", "http:// is not a Ray address (expected HOST:PORT or ray://HOST:PORT)"),
])
async def test_an_address_that_cannot_be_a_ray_cluster_is_one_line_at_once(address, words, caplog):
    caplog.set_level(logging.WARNING)
    text, took = await _start_error(address)
    assert took < 5, took
    assert text == f"could not start or join Ray at {address!r}: {words}", text
    assert [r.getMessage() for r in caplog.records if r.name.startswith("ray")] == []  # no "Failed to convert"


async def test_auto_with_an_http_ray_address_says_which_variable(monkeypatch):
    """Ray's words for it ended mid-sentence on their first line: "... To fix this, either"."""
    monkeypatch.setenv("RAY_ADDRESS", "http://127.0.0.1:8265")
    text, _ = await _start_error("auto")
    assert text == ("could not start or join Ray at 'auto': RAY_ADDRESS='http://127.0.0.1:8265' is an HTTP "
                    "address (a dashboard's?), not a Ray cluster's: set it to HOST:PORT (the head's GCS) or "
                    "ray://HOST:PORT"), text


@pytest.mark.parametrize("address", [123, b"127.0.0.1:6379", "", "  "])
def test_an_address_that_is_not_a_string_or_is_empty_is_refused_as_the_other_arguments_are(address):
    """A number was "could not start or join Ray at 123: AttributeError: 'int' object has no attribute ...", bytes
    a TypeError, an empty address "no port"; the other arguments are each checked as the cluster is made."""
    with pytest.raises(EngineError) as caught:
        RayCluster(address, engines=1, config=cpu_config())
    assert type(caught.value) is EngineError and str(caught.value) == (
        f"address: {address!r} is not an address (None, 'local', 'auto', 'HOST:PORT' or 'ray://HOST:PORT')")


async def test_auto_with_a_ray_client_address_is_checked_as_that_address(monkeypatch):
    """RAY_ADDRESS=ray://HOST:PORT with "auto" went to Ray Client unchecked (its retries, where ray[client] is
    installed)."""
    port = _free_port()
    monkeypatch.setenv("RAY_ADDRESS", f"ray://127.0.0.1:{port}")
    text, _ = await _start_error("auto")
    assert text == f"could not start or join Ray at 'auto': nothing answers at 127.0.0.1:{port} (Connection refused)"


async def test_a_port_nothing_listens_on_is_refused_at_once():
    port = _free_port()
    text, took = await _start_error(f"ray://127.0.0.1:{port}")
    assert took < 5, took
    assert text == f"could not start or join Ray at 'ray://127.0.0.1:{port}': nothing answers at 127.0.0.1:{port} " \
                   "(Connection refused)", text


async def test_a_loopback_address_says_where_ray_goes_for_it():
    """Ray connects to this node's address for localhost (127.0.0.1): a service on the loopback interface only
    (the prover service's default) is not reached, and the line said only the other address."""
    from ray._private.services import resolve_ip_for_localhost

    port = _free_port()
    text, _ = await _start_error(f"localhost:{port}")
    node = resolve_ip_for_localhost("localhost")
    assert text == f"could not start or join Ray at 'localhost:{port}': nothing answers at {node}:{port} " \
                   "(Connection refused), the address Ray uses for localhost", text


@pytest.mark.parametrize("value", ["1e300"])
async def test_a_check_timeout_too_long_for_a_socket_is_taken_as_a_day(value, monkeypatch):
    """OverflowError: timestamp out of range for platform time_t."""
    monkeypatch.setenv(TIMEOUT_ENV, value)
    port = _free_port()
    text, _ = await _start_error(f"ray://127.0.0.1:{port}")
    assert text == f"could not start or join Ray at 'ray://127.0.0.1:{port}': nothing answers at 127.0.0.1:{port} " \
                   "(Connection refused)", text


@pytest.mark.parametrize("value", ["soon", "-1", "inf", "1e400", "nan"])  # (inf: env_setting's numbers are finite)
async def test_a_bad_check_timeout_names_its_variable(value, monkeypatch):
    monkeypatch.setenv(TIMEOUT_ENV, value)
    text, _ = await _start_error(f"127.0.0.1:{_free_port()}")
    assert text.startswith("could not start or join Ray at '127.0.0.1:") and f"{TIMEOUT_ENV}={value!r}" in text


@pytest.mark.parametrize("listener", ["silent"], indirect=True)
def test_cli_prove_on_ray_at_a_silent_listener_ends_with_one_json_error(listener, tmp_path):
    """The known hang: `prove --ray 127.0.0.1:PORT` where a service accepts and says nothing; the default check
    timeout, --json, exit 2, no proof file, and no process of Ray's left (none started)."""
    d = EXAMPLES / "bn128"
    with marked() as mark:
        started = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "engine", "prove", "--ray", f"127.0.0.1:{listener.port}",
                              "--backend", "cpu", "--json", str(d / "sudoku.zkey"), str(d / "sudoku.wtns"),
                              str(tmp_path / "proof.json"), str(tmp_path / "public.json")], cwd=REPO,
                             env={**os.environ, TIMEOUT_ENV: ""}, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=60)
        took = time.monotonic() - started
    assert res.returncode == 2 and took < 20, (res.returncode, took, res.stderr)
    assert res.stdout == ""
    lines = [json.loads(line) for line in res.stderr.splitlines() if line.strip()]  # each one a JSON object
    assert lines[-1]["event"] == "error" and lines[-1]["error"] == "EngineStartError" and \
        lines[-1]["exit_code"] == 2, lines
    assert re.fullmatch(rf"could not start or join Ray at '127.0.0.1:{listener.port}': not a Ray cluster: the "
                        rf"service at \S+:{listener.port} accepted the connection but did not answer within 5 s",
                        lines[-1]["message"]), lines
    assert not (tmp_path / "proof.json").exists()
    assert wait_for_no_marked_processes(mark, timeout_s=2) == []


HOLDER = """
import sys, ray
from engine.distributed.connection import start_local_ray
start_local_ray(num_cpus=1, object_store_memory=80 << 20)
gcs = ray._private.worker._global_node.all_processes["gcs_server"][0].process.pid
print(ray.get_runtime_context().gcs_address, gcs, flush=True)
sys.stdin.read()  # until the test ends
"""


class held_cluster:
    """A Ray cluster of another process (its own session: ended, with whatever its GCS's death left, on exit):
    (GCS address, GCS pid)."""

    def __init__(self, **env: str) -> None:
        self.env = env

    def __enter__(self) -> tuple[str, str]:
        self.marked = marked()
        self.mark = self.marked.__enter__()
        try:
            self.holder = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=REPO, env={**os.environ, **self.env},
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                           text=True, start_new_session=True)
        finally:
            self.marked.__exit__()
        address, gcs = self.holder.stdout.readline().split()
        return address, gcs

    def __exit__(self, *exc) -> None:
        os.killpg(self.holder.pid, signal.SIGKILL)
        self.holder.wait()
        for line in wait_for_no_marked_processes(self.mark, timeout_s=5):
            os.kill(int(line.split()[0]), signal.SIGKILL)


def _prove_on(address: str, tmp_path, **env: str) -> subprocess.CompletedProcess:
    """`prove --ray ADDRESS --json` of the example; env: Ray's settings for it (RAY_AUTH_* left out otherwise)."""
    d = EXAMPLES / "bn128"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")}, **env}
    return subprocess.run([sys.executable, "-m", "engine", "prove", "--ray", address, "--backend", "cpu", "--json",
                           str(d / "sudoku.zkey"), str(d / "sudoku.wtns"), str(tmp_path / "proof.json"),
                           str(tmp_path / "public.json")], cwd=REPO, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


DRIVER = """
import asyncio, json, os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from test_distributed import cpu_config, sim_config
from engine.distributed import RayCluster
from engine.errors import EngineError

async def main():
    fifo = os.path.join(sys.argv[4], "key.zkey")
    os.mkfifo(fifo)  # a key whose load never ends: the engine waits for a writer
    async with RayCluster(sys.argv[2], engines=1, config=sim_config(), cpus_per_engine=0.25) as cluster, \\
            RayCluster(sys.argv[2], engines=1, config=cpu_config(), cpus_per_engine=0.25) as other:
        key = await cluster.load_key("k")
        job = asyncio.ensure_future(cluster.prove(key, {"seed": 1, "synth_ms": 120000}))
        load = asyncio.ensure_future(other.load_key(fifo))
        await asyncio.sleep(1)
        os.kill(int(sys.argv[3]), signal.SIGKILL)  # the cluster's GCS
        started = time.monotonic()
        for waited in (job, load):
            try:
                await waited
            except EngineError as exc:
                print(json.dumps({"error": type(exc).__name__, "message": str(exc),
                                  "after": time.monotonic() - started}))
    print(json.dumps({"closed": time.monotonic() - started}))

asyncio.run(main())
"""


@pytest.mark.slow
def test_a_cluster_whose_gcs_dies_mid_proof_fails_its_job_before_ray_ends_the_process(tmp_path):
    """The GCS killed under a job (and a key's load, on another cluster of the process): the cluster never said a
    word, and Ray's core worker ended the process with status 1 and its own line once it gave up on the GCS
    (RAY_gcs_rpc_server_reconnect_timeout_s, 60 s by default), whatever the engine was doing (the CLI: no error
    line, no JSON).  Both fail with EngineLostError before that, and the clusters close."""
    with held_cluster(RAY_AUTH_MODE="disabled") as (address, gcs):
        env = {**os.environ, "RAY_gcs_rpc_server_reconnect_timeout_s": "24", "RAY_AUTH_MODE": "disabled"}
        res = subprocess.run([sys.executable, "-c", DRIVER, str(REPO / "tests"), address, gcs, str(tmp_path)],
                             cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert res.returncode == 0, (res.returncode, res.stdout, res.stderr[-2000:])
    job, load, closed = [json.loads(line) for line in res.stdout.splitlines()]
    for error, name in ((job, "k"), (load, "key.zkey")):
        assert error["error"] == "EngineLostError" and error["after"] < 24, error
        assert re.fullmatch(rf"{name}: the Ray cluster's GCS at \S+ has not answered for \d+ s: the cluster is gone",
                            error["message"]), error
    assert closed["closed"] < 24, closed


@pytest.mark.slow
def test_cli_prove_on_a_cluster_that_wants_a_token_says_so(tmp_path):
    """A cluster with token authentication (Ray's default for a new one) joined without its token: "Failed to
    connect to Ray cluster at HOST:PORT", the reason (Ray's AuthenticationError) lost in the exception's cause."""
    with held_cluster(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=uuid.uuid4().hex) as (address, _):
        # Ray's tries at a GCS: 20 by default, a second each
        res = _prove_on(address, tmp_path, RAY_gcs_server_port_wait_time_s="2")
    assert res.returncode == 2, res.stderr
    assert json.loads(res.stderr.splitlines()[-1]) == {
        "event": "error", "error": "EngineStartError", "exit_code": 2,
        "message": f"could not start or join Ray at '{address}': the cluster refused this process's authentication "
                   "token: set RAY_AUTH_MODE=token, with the cluster's token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
                   "~/.ray/auth_token"}, res.stderr
    assert not (tmp_path / "proof.json").exists()


def test_prove_help_names_every_form_of_address():
    """--ray's help said "local (start one here), auto, or ray://host:port": not HOST:PORT, the head's GCS address
    that `ray start --head` prints and the form most clusters are joined by."""
    res = subprocess.run([sys.executable, "-m", "engine", "prove", "--help"], cwd=REPO, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    line = next(line for line in res.stdout.splitlines() if "--ray ADDRESS " in line)
    assert line.split("--ray ADDRESS", 1)[1].strip() == (
        "prove on a Ray cluster: local (start one here), auto (this node's), HOST:PORT (its head's GCS) or "
        "ray://HOST:PORT (a Ray client)"), line


async def test_a_ray_client_connection_is_not_watched_for_its_gcs(monkeypatch):
    """A Ray client (ray://) has no GCS connection of its own to lose, and the GCS address its runtime context
    names is the cluster's inside, often not reachable from the client: watched, its jobs failed as "gone"."""
    import types

    from ray.util.client import ray as client_ray

    from engine.distributed import connection

    context = types.SimpleNamespace(gcs_address=f"10.255.255.1:{_free_port()}")
    fake_ray = types.SimpleNamespace(get_runtime_context=lambda: context)
    monkeypatch.setattr(client_ray, "is_connected", lambda: True)
    assert connection.watch_gcs(fake_ray, lambda why: None) is None
    monkeypatch.setattr(client_ray, "is_connected", lambda: False)
    task = connection.watch_gcs(fake_ray, lambda why: None)  # a driver's own connection is watched
    assert isinstance(task, asyncio.Task)
    task.cancel()


@pytest.mark.parametrize("listener", ["silent"], indirect=True)
def test_ctrl_c_during_the_address_check_ends_the_command_at_once(listener, tmp_path):
    """The check waited in a blocking read, where asyncio's Ctrl-C (a cancellation of the main task) cannot reach:
    `interrupted` came when the check's 5 s were over."""
    d = EXAMPLES / "bn128"
    run = subprocess.Popen([sys.executable, "-m", "engine", "prove", "--ray", f"127.0.0.1:{listener.port}",
                            "--backend", "cpu", str(d / "sudoku.zkey"), str(d / "sudoku.wtns"),
                            str(tmp_path / "proof.json"), str(tmp_path / "public.json")], cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                           env={**os.environ, TIMEOUT_ENV: "30"})
    try:
        deadline = time.monotonic() + 30
        while not listener.held:  # the command is in the check
            assert time.monotonic() < deadline and run.poll() is None, run.communicate()
            time.sleep(0.02)
        time.sleep(0.2)
        run.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = run.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130 and err.strip().splitlines()[-1] == "interrupted", (run.returncode, err)
    assert took < 5, took
