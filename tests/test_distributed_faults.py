"""RayCluster faults, second round: streams that ran ahead of their reader, a stream's `max_in_flight` checked
otherwise than an Engine's, joining a Ray given by address, and engines killed mid-job.

One local Ray instance serves the module (test_distributed's fixture, its own instance here); each test starts
its own engines with half a CPU each, so that two engines fit the instance's two CPUs.
"""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import ray

from engine.api import Engine
from engine.distributed import EngineLostError, RayCluster
from engine.errors import EngineClosedError, EngineError, EngineStartError

from conftest import EXAMPLES, REPO
from test_distributed import (cpu_config, local_ray, marked, marked_processes, sim_config,  # noqa: F401
                              wait_for_no_marked_processes)  # local_ray: the module's own instance


async def _read_slowly(prover, key, count: int) -> list:
    """Reads `count` results of a 100-item stream (two in flight), slowly, then leaves the loop."""
    got = []
    async for result in prover.prove_stream(key, ({"seed": i} for i in range(100)), max_in_flight=2):
        got.append(result)
        await asyncio.sleep(0.1)
        if len(got) == count:
            break
    return got


async def test_a_stream_does_not_run_ahead_of_its_reader(local_ray):
    """The cluster's prove_stream gave an item's slot back when its proof came back, not when the reader took it:
    a reader that took 5 results (two in flight) and left had made the engines prove all 100 items, and an ordered
    stream held every result behind a slow first one.  An Engine's stream holds `max_in_flight` at most."""
    async with RayCluster(None, engines=1, config=sim_config(gpu_ms=5), cpus_per_engine=0.5, window=8) as cluster:
        key = await cluster.load_key("k")
        got = await _read_slowly(cluster, key, 5)
        assert [r.ok for r in got] == [True] * 5
        await asyncio.sleep(0.3)
        completed = cluster.stats()["per_engine"][0]["completed"]
        assert completed <= 5 + 2, f"{completed} proofs made for a reader that took 5 with 2 in flight"


@pytest.mark.parametrize("limit", [-1, "3", True, 2.5])
async def test_a_streams_max_in_flight_is_checked_as_an_engines_is(local_ray, limit):
    """max_in_flight=-1 raised asyncio's "Semaphore initial value must be >= 0", "3" a TypeError about '<' between
    str and int, 2.5 ran: an Engine names the argument and refuses each."""
    async def refusal(prover, key) -> tuple[type, str]:
        with pytest.raises(Exception) as caught:
            async for _ in prover.prove_stream(key, [{"seed": 1}], max_in_flight=limit):
                pass
        return type(caught.value), str(caught.value)

    async with Engine(sim_config()) as engine:
        local = await refusal(engine, await engine.load_key("k"))
    async with RayCluster(None, engines=1, config=sim_config(), cpus_per_engine=0.5) as cluster:
        assert await refusal(cluster, await cluster.load_key("k")) == local


async def test_a_cluster_given_the_address_of_the_ray_this_process_uses_joins_it_and_leaves_it_running(local_ray):
    """RayCluster(address) in a process already connected to that Ray (a notebook that ran ray.init()) failed with
    "could not start or join Ray at '...': RuntimeError: Maybe you called ray.init twice by accident?"."""
    address = ray.get_runtime_context().gcs_address
    async with RayCluster(address, engines=1, config=sim_config(), cpus_per_engine=0.5) as cluster:
        assert (await cluster.prove(await cluster.load_key("k"), {"seed": 1})).key == "k"
    assert ray.is_initialized() and ray.get_runtime_context().gcs_address == address  # the user's: still running


async def test_a_cluster_given_another_address_than_the_ray_this_process_uses_says_so(local_ray):
    with _port_where_nothing_listens() as port:
        with pytest.raises(EngineStartError) as caught:
            async with RayCluster(f"127.0.0.1:{port}", engines=1, config=sim_config()):
                pass
    text = str(caught.value)
    assert "\n" not in text and f"127.0.0.1:{port}" in text and "already connected to the Ray at" in text, text
    assert ray.is_initialized()


class _port_where_nothing_listens:
    """A port bound and not listening: a connection there is refused at once, and no other process takes it."""

    def __enter__(self) -> int:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.sock.close()


def test_prove_on_ray_at_an_address_where_nothing_answers_fails_at_once(tmp_path):
    """`prove --ray 127.0.0.1:1` (a wrong port) hung for about 13 minutes (Ray retries its GCS connection 20 times,
    about 40 s each) and printed Ray's retry lines all the while."""
    d = EXAMPLES / "bn128"
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    with _port_where_nothing_listens() as port:
        address = f"127.0.0.1:{port}"
        try:
            res = subprocess.run([sys.executable, "-m", "engine", "prove", "--ray", address, "--backend", "cpu",
                                  str(d / "sudoku.zkey"), str(d / "sudoku.wtns"), str(tmp_path / "proof.json"),
                                  str(tmp_path / "public.json")], cwd=REPO, env=env, capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"prove --ray {address} still waiting after 60 s: {exc.stderr!r:.300}") from None
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith(f"error: could not start or join Ray at '{address}': "), \
        res.stderr
    assert not (tmp_path / "proof.json").exists()


async def test_a_witness_ray_cannot_send_is_one_line_type_error_as_on_an_engine(local_ray):
    """An open file, a generator or a lock given as the witness raised Ray's serialization error: a TypeError of a
    dozen lines ("Could not serialize the put value <_io.BufferedReader ...>:", a rule of '=', a pickling trace),
    where an Engine says in one line that it cannot prove that type."""
    d = EXAMPLES / "bn128"
    with open(d / "sudoku.wtns", "rb") as handle:
        async with RayCluster(None, engines=1, config=cpu_config(), cpus_per_engine=0.5) as cluster:
            key = await cluster.load_key(d / "sudoku.zkey")
            for witness, name in ((handle, "BufferedReader"), ((x for x in range(3)), "generator"),
                                  (threading.Lock(), "lock")):
                with pytest.raises(TypeError) as caught:
                    await cluster.prove(key, witness)
                text = str(caught.value)
                assert "\n" not in text and text.startswith(f"cannot prove {name}: "), text
                assert text.endswith("give a .wtns path, an inputs dict, a Witness or values (a list of ints, or "
                                     "an (m, 4) uint64 array)"), text
                stream = [r async for r in cluster.prove_stream(key, [witness, d / "sudoku.wtns"], ordered=True)]
                assert type(stream[0].error) is TypeError and str(stream[0].error) == text and stream[1].ok
            assert cluster.stats()["jobs_in_flight"] == 0 and cluster.stats()["engines"] == 1


async def test_a_cluster_closing_under_a_key_load_that_never_ends_closes_and_says_why(local_ray, tmp_path, monkeypatch,
                                                                                     caplog):
    """A key whose load never ends (a named pipe nobody writes: the engine waits for a writer) held the cluster's
    close for ever, since the actor never answered `close`; and the load, once the actor was killed, failed with
    "EngineLostError: the cluster: no engine is left" and logged the engine as lost, where the cluster had shut
    down.  The close now gives each engine CLOSE_TIMEOUT_S, then ends it."""
    from engine.distributed import cluster as cluster_module

    monkeypatch.setattr(cluster_module, "CLOSE_TIMEOUT_S", 2.0, raising=False)
    fifo = tmp_path / "key.zkey"
    os.mkfifo(fifo)
    cluster = RayCluster(None, engines=1, config=cpu_config(), cpus_per_engine=0.5)
    await cluster.__aenter__()
    loading = asyncio.create_task(cluster.load_key(fifo))
    await asyncio.sleep(1.0)  # the engine waits in open() for a writer
    async with asyncio.timeout(30):
        await cluster.__aexit__(None, None, None)
    # the engine's close now ends its wait for the pipe (the read on a thread its cancel leaves): the engine says it
    # shut down, else the close ended the actor and the cluster says so
    with pytest.raises(EngineClosedError, match=r"(^key.zkey: the cluster shut down while the key was loading|"
                                                r"/key.zkey: not loaded: the engine shut down meanwhile)$"):
        await loading
    assert cluster.lost == [] and "is gone" not in caplog.text


@pytest.mark.parametrize("given, words", [
    (dict(window="2"), "window: '2' is not a count >= 1"),
    (dict(window=0), "window: 0 is not a count >= 1"),
    (dict(engines=True), "engines: True is not a count >= 1 or 'per-gpu'"),
    (dict(cpus_per_engine="1"), "cpus_per_engine: '1' is not a number >= 0"),
    (dict(gpus_per_engine=-1), "gpus_per_engine: -1 is not a number >= 0"),
    (dict(start_timeout_s=-1), "start_timeout_s: -1 is not a number of seconds > 0"),
])
def test_a_clusters_arguments_are_checked_where_they_are_given(given, words):
    """window="2" made every job fail with "'<=' not supported between instances of 'int' and 'str'",
    cpus_per_engine="1" and gpus_per_engine=-1 failed the start with Python's or Ray's words, start_timeout_s=-1
    "did not start within -1 s", and engines=True ran one engine: each now refused as it is given."""
    with pytest.raises(EngineError) as caught:
        RayCluster(None, **{"engines": 1, **given})
    assert str(caught.value) == words


@pytest.mark.slow
def test_prove_on_ray_stopped_by_sigterm_says_so_and_leaves_nothing(tmp_path):
    """ray.init put its own SIGTERM handler (sys.exit(15)) over the command's, and its core worker a C++ one that
    dumps "*** SIGTERM received at time=... PC: @ ... epoll_wait": `kill` of `prove --ray local` exited 15 with that
    dump, or with an "unhandled exception during asyncio.run() shutdown" traceback, not the command's
    "interrupted by SIGTERM" and 143."""
    d = EXAMPLES / "bn128"
    with marked() as mark:
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
        run = subprocess.Popen([sys.executable, "-m", "engine", "prove", "--ray", "local", "--backend", "cpu",
                                str(d / "sudoku.zkey"), str(d / "sudoku.wtns"), str(tmp_path / "proof.json"),
                                str(tmp_path / "public.json")], cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 120
        while not [p for p in marked_processes(mark) if "ray::EngineActor" in p]:
            assert time.monotonic() < deadline and run.poll() is None, "no engine actor started"
            time.sleep(0.05)
        time.sleep(0.3)
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 143, err
    assert err.strip().splitlines()[-1] == "interrupted by SIGTERM", err
    assert "Traceback" not in err and "SIGTERM received" not in err, err
    assert not (tmp_path / "proof.json").exists()
    assert wait_for_no_marked_processes(mark) == []


async def test_an_engine_killed_by_ray_kill_mid_job_fails_that_job_naming_it_and_counts_no_retry(local_ray):
    """ray.kill of the only engine under a job: the job fails with EngineLostError naming the engine, and
    stats()["retries"] said 1 though no engine was left to send the job to again."""
    async with RayCluster(None, engines=1, config=sim_config(), cpus_per_engine=0.5) as cluster:
        key = await cluster.load_key("k")
        job = asyncio.create_task(cluster.prove(key, {"seed": 1, "synth_ms": 3000}))
        while not cluster.stats()["proofs_in_flight"]:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)
        ray.kill(cluster.actor(0))
        with pytest.raises(EngineLostError, match=r"^k: no engine is left to run it \(engine 0 \(ActorDiedError: "):
            await job
        stats = cluster.stats()
        assert stats["retries"] == 0 and stats["engines_lost"] == 1 and stats["jobs_in_flight"] == 0, stats


def test_prove_with_an_empty_ray_address_is_refused_not_proved_here(tmp_path):
    """`prove --ray "$RAY"` with RAY unset read the empty address as none: the proof ran on this machine, exit 0,
    without a word (as `--server ""` once did)."""
    d = EXAMPLES / "bn128"
    res = subprocess.run([sys.executable, "-m", "engine", "prove", "--ray", "", "--backend", "cpu",
                          str(d / "sudoku.zkey"), str(d / "sudoku.wtns"), str(tmp_path / "proof.json"),
                          str(tmp_path / "public.json")], cwd=REPO, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1].endswith(
        "argument --ray: an empty address (expected local, auto, HOST:PORT or ray://HOST:PORT)"), res.stderr
    assert not (tmp_path / "proof.json").exists()


async def test_a_cancelled_load_key_leaves_no_key_resident(local_ray, tmp_path):
    """load_key cancelled (asyncio.wait_for) while the engine read the key: the engine went on, made the key
    resident and kept it until the cluster closed, with no ClusterKey anyone could unload it by (an Engine's
    cancelled load undoes itself)."""
    fifo = tmp_path / "key.zkey"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "wb") as pipe:
            pipe.write((EXAMPLES / "bn128" / "sudoku.zkey").read_bytes())

    async with RayCluster(None, engines=1, config=cpu_config(), cpus_per_engine=0.5) as cluster:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(cluster.load_key(fifo), 1.5)  # the engine waits in open() for a writer
        feeding = threading.Thread(target=writer, daemon=True)
        feeding.start()
        deadline = time.monotonic() + 10
        while (stats := await cluster.engine_stats())[0]["jobs_in_flight"] or feeding.is_alive():
            assert time.monotonic() < deadline, stats
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        assert [s["keys"] for s in await cluster.engine_stats()] == [0]
        assert cluster.stats()["per_engine"][0]["keys"] == 0
        key = await cluster.load_key(EXAMPLES / "bn128" / "sudoku.zkey")  # the engine serves on
        assert (await cluster.prove(key, EXAMPLES / "bn128" / "sudoku.wtns")).curve.name == "bn128"


async def test_unloading_a_key_after_the_block_does_what_an_engines_unload_does(local_ray):
    """`unload_key` in a `finally` that runs after the block raised EngineClosedError("the cluster has shut down")
    where an Engine's returns quietly: its close released every key."""
    async with Engine(sim_config()) as engine:
        local = await engine.load_key("k")
    await engine.unload_key(local)  # no error: the Engine's close released it
    async with RayCluster(None, engines=1, config=sim_config(), cpus_per_engine=0.5) as cluster:
        key = await cluster.load_key("k")
        await cluster.prove(key, {"seed": 1})
    await cluster.unload_key(key)
    await cluster.unload_key(key)  # twice: still nothing
    with pytest.raises(TypeError, match="^unload_key: the key is what cluster.load_key returned"):
        await cluster.unload_key(local)  # not a cluster's key at all: the caller's bug, as while open
    with pytest.raises(EngineClosedError, match="the cluster has shut down"):
        await cluster.prove(key, {"seed": 1})


async def test_a_call_from_another_event_loop_is_refused_at_once_as_on_an_engine(local_ray):
    """`cluster.prove` from another thread's event loop (asyncio.run in a worker thread) waited for an engine's
    window on a condition of the cluster's loop: it never woke (20 s and counting); an Engine refuses such a call
    at once, naming asyncio.run_coroutine_threadsafe."""
    async with RayCluster(None, engines=1, config=sim_config(gpu_ms=300), cpus_per_engine=0.5, window=1) as cluster:
        key = await cluster.load_key("k")
        outcome: dict = {}

        def elsewhere() -> None:
            try:
                outcome["result"] = asyncio.run(asyncio.wait_for(cluster.prove(key, {"seed": 2}), 10))
            except BaseException as exc:  # noqa: BLE001 - what the other loop's caller gets is the point
                outcome["result"] = exc

        running = asyncio.create_task(cluster.prove(key, {"seed": 1}))  # fills the window: the other call waits
        await asyncio.sleep(0.05)
        thread = threading.Thread(target=elsewhere)
        thread.start()
        await running
        await asyncio.to_thread(thread.join)
        assert isinstance(outcome["result"], RuntimeError), outcome
        assert "run_coroutine_threadsafe" in str(outcome["result"]), outcome
        assert cluster.stats()["jobs_in_flight"] == 0


async def test_address_local_is_what_the_command_lines_local_is(local_ray):
    """RayCluster("local") (the command line's `--ray local`) went to ray.init(address="local") as it was: in a
    process connected to Ray that failed ("Maybe you called ray.init twice"), and where it started Ray, it was
    without the per-worker process groups that end a killed engine's worker processes.  It is address=None."""
    gcs = ray.get_runtime_context().gcs_address
    async with RayCluster("local", engines=1, config=sim_config(), cpus_per_engine=0.5) as cluster:
        assert (await cluster.prove(await cluster.load_key("k"), {"seed": 1})).key == "k"
    assert ray.is_initialized() and ray.get_runtime_context().gcs_address == gcs


def test_a_witness_the_object_store_cannot_take_is_one_line_engine_error():
    """ray.put failing for want of room (ObjectStoreFullError: the store full of witnesses in flight and the spill
    disk full) reached the caller as Ray's own exception of several lines, not an EngineError."""
    from engine.distributed.cluster import _put

    class FullStore:
        exceptions = ray.exceptions

        @staticmethod
        def put(item):
            raise ray.exceptions.ObjectStoreFullError("Failed to put object 00ff in object store because it is full. "
                                                      "Object size is 33554432 bytes.\nThe local object store is full")

    with pytest.raises(EngineError) as caught:
        _put(FullStore, "witness.wtns")
    text = str(caught.value)
    assert type(caught.value) is EngineError and "\n" not in text, text
    assert text.startswith("witness.wtns: Ray could not store the witness: ObjectStoreFullError: Failed to put"), text


async def test_a_key_load_whose_only_engine_dies_names_the_key(local_ray, tmp_path):
    """The only engine killed while it loaded a key: "EngineLostError: the cluster: no engine is left to run it",
    which named no key; a job's names its key."""
    fifo = tmp_path / "big.zkey"
    os.mkfifo(fifo)
    async with RayCluster(None, engines=1, config=cpu_config(), cpus_per_engine=0.5) as cluster:
        loading = asyncio.create_task(cluster.load_key(fifo))
        await asyncio.sleep(1.0)  # the engine waits in open() for a writer
        ray.kill(cluster.actor(0))
        with pytest.raises(EngineLostError, match=r"^big.zkey: no engine is left to run it \(engine 0: ActorDiedErr"):
            await loading
