"""RayCluster at its edges: who stops Ray, actors that cannot be placed, shutting down under running jobs,
interrupted starts, witnesses made by failing Ray tasks, keys missing, changed or unloaded, and what
`prove --ray --json` prints.

The first test needs a process with no Ray connected (it checks who starts and stops Ray) and runs before
the module's fixture starts the shared instance; the rest share that instance, as test_distributed.py does.
"""
from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import ray

from engine.distributed import RayCluster
from engine.errors import EngineClosedError, EngineError, EngineStartError, InputFileError, MismatchError
from engine.groth16.verifier import verify

from conftest import EXAMPLES, REPO, run_engine
from test_distributed import (cpu_config, local_ray, marked, marked_processes, sim_config,  # noqa: F401
                              wait_for_no_marked_processes)  # local_ray: the module's own instance of that fixture


async def test_two_clusters_that_start_ray_share_it_and_the_last_one_out_stops_it():
    """The first cluster to start Ray shut it down on its exit under a second cluster still using it: the
    second's next job raised Ray's bare `Exception: Failed to submit task to actor`, and its exit started a
    new local Ray instance (through ray.put) that it then left running."""
    assert not ray.is_initialized(), "this test runs before the module's Ray instance starts"
    with marked() as mark:
        first = RayCluster(None, engines=1, config=sim_config(), cpus_per_engine=0.5)
        second = RayCluster(None, engines=1, config=sim_config(), cpus_per_engine=0.5)
        await first.__aenter__()
        await second.__aenter__()
    try:
        key = await second.load_key("k")
        await first.__aexit__(None, None, None)
        assert ray.is_initialized()  # the second still uses it
        assert (await second.prove(key, {"seed": 1})).key == "k"
    finally:
        await second.__aexit__(None, None, None)
    assert not ray.is_initialized()
    assert wait_for_no_marked_processes(mark) == []


def _unretrieved(loop: asyncio.AbstractEventLoop) -> list[str]:
    """Collects what the loop reports of futures dropped with an exception nobody retrieved."""
    seen: list[str] = []
    loop.set_exception_handler(lambda _, context: seen.append(context.get("message", "")))
    return seen


async def test_engines_that_cannot_be_placed_time_out_with_a_clear_error(local_ray):
    """An actor Ray could not place yet (the CPUs held by others) made the start time out; the cleanup then
    awaited that actor's `close` forever: `start_timeout_s` never ended in an error."""

    @ray.remote(num_cpus=2)
    class Hog:
        def ready(self) -> bool:
            return True

    hog = Hog.remote()
    await hog.ready.remote()
    seen = _unretrieved(asyncio.get_running_loop())
    started = time.monotonic()
    try:
        with pytest.raises(EngineStartError, match=r"did not start within 2 s; the cluster has 2 CPU"):
            async with asyncio.timeout(30):
                async with RayCluster(None, engines=1, config=sim_config(), start_timeout_s=2):
                    pass
    finally:
        ray.kill(hog)
    assert time.monotonic() - started < 15 and ray.is_initialized()  # the user's Ray stays up
    gc.collect()
    assert seen == []
    async with RayCluster(None, engines=1, config=sim_config()) as cluster:  # the CPUs it waited for are free
        assert (await cluster.prove(await cluster.load_key("k"), {"seed": 1})).key == "k"


async def test_more_engines_than_the_cluster_has_cpus_fail_at_once(local_ray):
    """`--engines 3` on a 2-CPU machine waited start_timeout_s (120 s) and then hung in the cleanup."""
    started = time.monotonic()
    need = r"3 engine\(s\) of 1 CPU each need 3 CPU\(s\); the Ray cluster has 2 CPU"
    with pytest.raises(EngineStartError, match=need):
        async with asyncio.timeout(30):
            async with RayCluster(None, engines=3, config=sim_config()):
                pass
    assert time.monotonic() - started < 5 and ray.is_initialized()


async def test_an_interrupted_start_leaves_no_unretrieved_error(local_ray):
    """Cancelling the block's entry while the actors start (Ctrl-C in `prove --ray`) printed
    "_GatheringFuture exception was never retrieved" and a traceback after the `interrupted` line."""
    seen = _unretrieved(asyncio.get_running_loop())
    cluster = RayCluster(None, engines=2, config=sim_config(), cpus_per_engine=0.5)
    entering = asyncio.create_task(cluster.__aenter__())
    await asyncio.sleep(0.5)  # the actors are starting: their processes take seconds
    entering.cancel()
    with pytest.raises(asyncio.CancelledError):
        await entering
    gc.collect()
    await asyncio.sleep(0.1)
    assert seen == []
    with pytest.raises(EngineClosedError):
        await cluster.load_key("k")


@pytest.mark.parametrize("body", ["raises", "is cancelled"])
async def test_jobs_of_a_cluster_that_shuts_down_fail_with_engine_closed(local_ray, body):
    """Jobs other tasks were awaiting when the block ended by an error got a bare CancelledError, though
    nobody cancelled those tasks (a local Engine raises EngineClosedError), and a stream read by another
    task waited forever for results that never came."""
    outcomes: dict[str, str] = {}
    stream_results: list = []
    helpers: list[asyncio.Task] = []

    async def run() -> None:
        async with RayCluster(None, engines=1, config=sim_config(gpu_ms=3000), cpus_per_engine=0.5) as cluster:
            key = await cluster.load_key("k")

            async def job(name: str) -> None:
                try:
                    await cluster.prove(key, {"seed": len(outcomes)})
                    outcomes[name] = "proved"
                except BaseException as exc:  # noqa: BLE001 - what the job's awaiter sees is the point
                    outcomes[name] = type(exc).__name__
                    raise

            async def read_stream() -> None:
                async for result in cluster.prove_stream(key, [{"seed": 10}, {"seed": 11}]):
                    stream_results.append(result)

            helpers.extend(asyncio.create_task(job(f"job{i}")) for i in range(3))
            helpers.append(asyncio.create_task(read_stream()))
            await asyncio.sleep(0.5)
            if body == "raises":
                raise RuntimeError("the body failed")
            asyncio.current_task().cancel()
            await asyncio.sleep(1)

    with pytest.raises(RuntimeError if body == "raises" else asyncio.CancelledError):
        await asyncio.create_task(run())
    done = await asyncio.wait_for(asyncio.gather(*helpers, return_exceptions=True), 10)
    assert outcomes == {f"job{i}": "EngineClosedError" for i in range(3)}
    assert all(isinstance(d, EngineClosedError) for d in done[:3])
    assert "cancelled because the cluster shut down" in str(done[0]) and str(done[0]).startswith("k: ")
    assert len(stream_results) == 2 and all(isinstance(r.error, EngineClosedError) for r in stream_results)


async def test_a_witness_whose_ray_task_failed_raises_that_tasks_error(local_ray):
    """A witness given as the ObjectRef of a Ray task that failed came back as
    "EngineError: sudoku.zkey: Ray could not run the job: RayTaskError(...): \\x1b[36mray::EngineActor.prove()...",
    the actor's name in terminal colours, and nothing of what had failed."""

    @ray.remote(num_cpus=0)
    def witness(kind: str):
        if kind == "mismatch":
            raise MismatchError("witness task: inputs of another circuit")
        if kind == "missing":
            raise InputFileError("/inputs/x.json", "no such file")  # plain pickling cannot rebuild it
        raise ValueError("the witness task broke")

    d = EXAMPLES / "bn128"
    async with RayCluster(None, engines=1, config=sim_config(), cpus_per_engine=0.5) as cluster:
        key = await cluster.load_key(d / "sudoku.zkey")
        with pytest.raises(MismatchError, match=r"^witness task: inputs of another circuit$"):
            await cluster.prove(key, witness.remote("mismatch"))
        for kind, words in (("missing", "InputFileError: /inputs/x.json: no such file"),
                            ("value", "ValueError: the witness task broke")):
            with pytest.raises(EngineError) as caught:
                await cluster.prove(key, witness.remote(kind))
            text = str(caught.value)
            assert type(caught.value) is EngineError and "\x1b" not in text and "\n" not in text, text
            assert text.startswith("sudoku.zkey: a witness given as a Ray object reference failed: ") and \
                text.endswith(words), text
        assert cluster.stats()["engines"] == 1


@pytest.mark.slow
def test_cli_prove_on_ray_with_json_writes_only_json_lines(tmp_path):
    """Ray's own warning at the start of a local instance (token authentication) was a plain, timestamped line
    among the JSON objects on stderr."""
    d = EXAMPLES / "bn128"
    # as a user's shell has it: a Ray started in this process (the fixture's) sets RAY_AUTH_MODE, and with it
    # set Ray does not warn
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    res = subprocess.run([sys.executable, "-m", "engine", "prove", "--ray", "local", "--backend", "cpu", "--json",
                          str(tmp_path / "missing.zkey"), str(d / "sudoku.wtns"), str(tmp_path / "proof.json"),
                          str(tmp_path / "public.json")], cwd=REPO, env=env, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=300)
    assert res.returncode == 2
    lines = [json.loads(line) for line in res.stderr.splitlines() if line.strip()]  # each one a JSON object
    assert lines[-1] == {"event": "error", "error": "InputFileError", "exit_code": 2,
                         "message": f"{tmp_path / 'missing.zkey'}: no such file"}
    assert not (tmp_path / "proof.json").exists()


async def test_an_engine_that_cannot_read_a_loaded_key_leaves_its_jobs_to_those_that_can(local_ray, tmp_path):
    """A key loaded on one engine and then missing where another runs (a node without the shared filesystem,
    simulated by removing the file): every job sent to that engine failed with "no such file", and the driver
    went on counting the key as resident there and sending it more."""
    zkey = tmp_path / "sudoku.zkey"
    zkey.write_bytes((EXAMPLES / "bn128" / "sudoku.zkey").read_bytes())
    wtns = EXAMPLES / "bn128" / "sudoku.wtns"
    async with RayCluster(None, engines=2, config=cpu_config(), cpus_per_engine=0.5, window=1) as cluster:
        key = await cluster.load_key(zkey)
        zkey.unlink()
        proofs = await asyncio.gather(*(cluster.prove(key, wtns) for _ in range(4)))
        assert all(verify(EXAMPLES / "bn128" / "verification_key.json", p.public, p) for p in proofs)
        assert len(key.engines) == 1  # where it loaded
        assert cluster.stats()["engines"] == 2
        other = await cluster.load_key(EXAMPLES / "bn128" / "sudoku.zkey")  # the engine still serves other keys
        assert len(await cluster.prove(other, partitions=[wtns, wtns])) == 2


async def test_a_key_file_replaced_after_loading_never_proves_for_that_key(local_ray, tmp_path):
    """The file of a loaded key replaced by another key of the same circuit (a new phase-2 contribution): an
    engine that loaded it on first use proved with the new key, proofs that fail against the verification key
    of the key the caller loaded."""
    zkey = tmp_path / "sudoku.zkey"
    zkey.write_bytes((EXAMPLES / "bn128" / "sudoku.zkey").read_bytes())
    other = tmp_path / "other.zkey"
    assert run_engine("setup", EXAMPLES / "bn128" / "sudoku.r1cs", other).returncode == 0
    wtns = EXAMPLES / "bn128" / "sudoku.wtns"
    async with RayCluster(None, engines=2, config=cpu_config(), cpus_per_engine=0.5, window=1) as cluster:
        key = await cluster.load_key(zkey)
        other.replace(zkey)
        proofs = await asyncio.gather(*(cluster.prove(key, wtns) for _ in range(4)))
        assert all(verify(EXAMPLES / "bn128" / "verification_key.json", p.public, p) for p in proofs)
        assert len(key.engines) == 1


async def test_unloading_a_key_waits_for_its_jobs_and_frees_it_on_every_engine(local_ray):
    """RayCluster had no unload_key (an AttributeError): a cluster serving one key after another held every
    key it had ever used until it closed.  It now does what Engine.unload_key does."""
    async with RayCluster(None, engines=2, config=sim_config(gpu_ms=200), cpus_per_engine=0.5, window=2) as cluster:
        key, kept = await cluster.load_key("k"), await cluster.load_key("kept")
        jobs = [asyncio.create_task(cluster.prove(key, {"seed": s})) for s in range(6)]
        await asyncio.sleep(0.1)
        await cluster.unload_key(key)  # queued and running jobs of the key finish first
        assert all(job.done() and job.exception() is None for job in jobs)
        assert key.engines == () and sorted(s["keys"] for s in await cluster.engine_stats()) == [0, 1]  # kept's
        with pytest.raises(EngineError, match=r"^k: this key is not loaded in this cluster \(use cluster.load_key\)$"):
            await cluster.prove(key, {"seed": 1})
        await cluster.unload_key(key)  # twice: nothing left to do, as an Engine's second unload
        assert (await cluster.prove(kept, {"seed": 1})).key == "kept"
        again = await cluster.load_key("k")
        assert (await cluster.prove(again, {"seed": 1})).key == "k"


async def test_a_key_that_is_not_a_cluster_key_is_a_type_error_as_on_an_engine(local_ray):
    """`cluster.prove("k", ...)` raised EngineError("k: this key is not loaded in this cluster"), where an Engine
    raises TypeError for what is not a key at all (a caller's bug, not an input's fault)."""
    async with RayCluster(None, engines=1, config=sim_config(), cpus_per_engine=0.5) as cluster:
        with pytest.raises(TypeError, match=r"^prove: the key is what cluster.load_key returned, not str 'k'$"):
            await cluster.prove("k", {"seed": 1})


def _kill_after(pid: int, pause: float) -> None:
    """SIGKILL, `pause` s from now, to the process that has `pid` now: nothing where it has ended by then, never
    another process given that pid meanwhile (a pidfd holds on to this one)."""
    try:
        process = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        time.sleep(pause)
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(process, signal.SIGKILL)
    finally:
        os.close(process)


@pytest.mark.slow
def test_cli_prove_on_ray_with_json_stays_json_when_its_engine_dies(tmp_path):
    """An engine killed under `prove --ray local --json`: the raylet's paragraph on the dead worker, forwarded to
    this process in terminal colours, came on stdout, where a script reads the result's JSON."""
    d = EXAMPLES / "bn128"
    # the actor lives some 0.7 s from its __init__ here (start, load, prove, close): on a faster machine the kill came
    # after the proof, or after the actor's end (os.kill's ProcessLookupError failed the test): again, sooner
    for pause in (0.5, 0.1, 0.0):
        with marked() as mark:
            env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
            run = subprocess.Popen([sys.executable, "-m", "engine", "prove", "--ray", "local", "--backend", "cpu",
                                    "--json", str(d / "sudoku.zkey"), str(d / "sudoku.wtns"),
                                    str(tmp_path / "proof.json"), str(tmp_path / "public.json")], cwd=REPO, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            deadline = time.monotonic() + 120
            while not (actors := [p for p in marked_processes(mark) if "ray::EngineActor" in p]):
                assert time.monotonic() < deadline and run.poll() is None, "no engine actor started"
                time.sleep(0.05)
            _kill_after(int(actors[0].split()[0]), pause)
            out, err = run.communicate(timeout=120)
        finally:
            if run.poll() is None:
                run.kill()
        assert all(isinstance(json.loads(line), dict) for line in (out + err).splitlines() if line.strip()), (out, err)
        assert wait_for_no_marked_processes(mark) == []
        if run.returncode != 0:
            break
        (tmp_path / "proof.json").unlink()
        (tmp_path / "public.json").unlink()
    assert run.returncode == 2, err
    assert [json.loads(line) for line in out.splitlines() if line.strip()] == []  # nothing on stdout but JSON
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]  # each one a JSON object
    assert lines[-1]["event"] == "error" and lines[-1]["error"] in ("EngineLostError", "EngineStartError"), lines
    assert not (tmp_path / "proof.json").exists()
