"""RayCluster on a local Ray instance: real proofs accepted by snarkjs, the Engine's errors, placement, faults.

One local Ray instance serves the module (2 CPUs, a small object store, no
dashboard); each test starts its own engines.  Every process Ray starts carries
a marker in its environment, so the teardown can check that stopping Ray left
none behind: not Ray's own, not an actor's, not an engine's worker processes.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
import uuid

import pytest

import ray  # in the test extra: a missing Ray fails here rather than skipping the module

from engine.api import Engine
from engine.config import EngineConfig, SimulationConfig
from engine.distributed import EngineLostError, RayCluster
from engine.distributed.cluster import start_local_ray
from engine.distributed.fault_signals import fault_handlers_kept
from engine.errors import EngineClosedError, EngineError, InputFileError, MismatchError
from engine.formats import read_wtns

from conftest import EXAMPLES, run_engine, run_snarkjs

MARK = "GROTH16_RAY_TEST_MARK"
RAY_INIT = dict(num_cpus=2, object_store_memory=80 << 20, include_dashboard=False)


def sim_config(**sim) -> EngineConfig:
    base = dict(devices=1, vram="4GiB", working_set="1GiB", witness_rows=64, synth_ms=1, upload_ms=1,
                stage_host_ms=0, gpu_ms=20, epilogue_ms=0, verify_ms=0)
    base.update(sim)
    return EngineConfig(backend="simulated", synthesis_workers=1, compute_slots=1, epilogue_threads=1,
                        idle_trim_s=None, simulation=SimulationConfig(**base))


def cpu_config() -> EngineConfig:
    return EngineConfig(backend="cpu", synthesis_workers=1, epilogue_threads=1, idle_trim_s=None)


def marked_processes(mark: str) -> list[str]:
    """Processes whose environment holds MARK=mark: '<pid> <command line>' for each."""
    found = []
    needle = f"{MARK}={mark}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry} {command[:160]}")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def wait_for_no_marked_processes(mark: str, timeout_s: float = 15.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while (left := marked_processes(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


class marked:
    """While inside, processes started from here carry a fresh marker (Ray's, and through them everyone's)."""

    def __enter__(self) -> str:
        self.mark = uuid.uuid4().hex
        os.environ[MARK] = self.mark
        return self.mark

    def __exit__(self, *exc) -> None:
        os.environ.pop(MARK, None)


@pytest.fixture(scope="module")
def local_ray():
    with marked() as mark:
        start_local_ray(**RAY_INIT)
    yield mark
    with fault_handlers_kept():  # Ray puts SIG_DFL back: a later test's wasm trap would kill pytest
        ray.shutdown()
    assert wait_for_no_marked_processes(mark) == [], "processes left after ray.shutdown()"


@pytest.mark.snarkjs
async def test_proofs_through_the_cluster_are_accepted_by_snarkjs(local_ray, tmp_path):
    """Both curves; a .wtns path, circuit inputs with wasm=, and a witness made by a Ray task on a worker."""

    @ray.remote(num_cpus=0)  # the two engines hold both CPUs
    def witness_on_a_worker(path: str):
        return read_wtns(path)  # stays in the object store: the driver only holds the reference

    async with RayCluster(None, engines=2, config=cpu_config()) as cluster:
        jobs = []
        for curve, how in (("bn128", "wtns"), ("bn128", "ref"), ("bls12381", "inputs")):
            d = EXAMPLES / curve
            key = await cluster.load_key(d / "sudoku.zkey", wasm=d / "sudoku.wasm")
            assert key.curve == curve and key.n_public == 16 and len(key.engines) == 1
            witness = {"wtns": d / "sudoku.wtns",
                       "ref": witness_on_a_worker.remote(str(d / "sudoku.wtns")),
                       "inputs": json.loads((d / "input.json").read_text())}[how]
            jobs.append((curve, how, cluster.prove(key, witness)))
        proofs = await asyncio.gather(*(job for _, _, job in jobs))
        per_engine = [e["completed"] for e in cluster.stats()["per_engine"]]
        assert sum(per_engine) == 3 and min(per_engine) >= 1, per_engine  # both engines proved
    for (curve, how, _), proof in zip(jobs, proofs):
        out = tmp_path / f"{curve}-{how}"
        out.mkdir()
        proof.write(out / "proof.json", out / "public.json")
        verdict = run_snarkjs("groth16", "verify", EXAMPLES / curve / "verification_key.json",
                              out / "public.json", out / "proof.json")
        assert verdict.returncode == 0 and "OK" in verdict.stdout, (curve, how, verdict.stdout, verdict.stderr)


async def _drain(stream) -> list:
    return [item async for item in stream]


async def test_bad_inputs_raise_what_a_local_engine_raises(local_ray, tmp_path):
    d = EXAMPLES / "bn128"
    bad_wtns = tmp_path / "bad.wtns"
    bad_wtns.write_bytes(b"wtns" + b"\0" * 7)
    other = read_wtns(EXAMPLES / "bls12381" / "sudoku.wtns")  # the other curve's witness

    async def errors(prover) -> list[BaseException]:
        found = []
        try:
            await prover.load_key(tmp_path / "missing.zkey")
        except EngineError as exc:
            found.append(exc)
        key = await prover.load_key(d / "sudoku.zkey")
        for witness in (tmp_path / "missing.wtns", bad_wtns, other, {"a": 1}):
            try:
                await prover.prove(key, witness)
            except EngineError as exc:
                found.append(exc)
        # one path where a list belongs: each of its characters was proved as a file name
        for call in (lambda: prover.prove(key, partitions=str(d / "sudoku.wtns")),
                     lambda: _drain(prover.prove_stream(key, str(d / "sudoku.wtns")))):
            with pytest.raises(TypeError, match=r"a list \(or another iterable\) of witnesses.*got a str"):
                await call()
        return found

    async with Engine(cpu_config()) as engine:
        local = await errors(engine)
    async with RayCluster(None, engines=1, config=cpu_config()) as cluster:
        remote = await errors(cluster)
        assert cluster.stats()["engines"] == 1  # bad inputs do not cost an engine
    assert len(local) == 5
    assert [(type(e), str(e)) for e in remote] == [(type(e), str(e)) for e in local]
    assert isinstance(remote[0], InputFileError) and isinstance(remote[4], MismatchError)


async def test_an_actor_killed_mid_stream_loses_no_job_and_duplicates_none(local_ray):
    items = [{"seed": i} for i in range(24)]
    async with RayCluster(None, engines=2, config=sim_config(gpu_ms=40), window=4) as cluster:
        key = await cluster.load_key("k")
        victim = cluster.stats()["per_engine"][0]["pid"]
        seen = []
        async for result in cluster.prove_stream(key, items):
            seen.append(result)
            if len(seen) == 4:
                os.kill(victim, signal.SIGKILL)
        stats = cluster.stats()
        assert sorted(r.index for r in seen) == list(range(24))  # every job once
        assert all(r.ok for r in seen), [r.error for r in seen if not r.ok]
        assert stats["engines"] == 1 and stats["engines_lost"] == 1 and stats["retries"] >= 1
        assert cluster.lost[0]["pid"] == victim
        # the proofs are those of the items (a retried job is the same witness again, proved once)
        again = [r async for r in cluster.prove_stream(key, items, ordered=True)]
        assert [r.proof.digest for r in again] == [r.proof.digest for r in sorted(seen, key=lambda r: r.index)]
        assert (await cluster.engine_stats())[0]["jobs_in_flight"] == 0


async def test_a_job_whose_engine_dies_twice_fails_clearly_and_the_rest_keep_serving(local_ray):
    async with RayCluster(None, engines=3, config=sim_config(), cpus_per_engine=0.5) as cluster:
        key = await cluster.load_key("k")
        job = asyncio.create_task(cluster.prove(key, {"seed": 1, "synth_ms": 3000}))
        killed = []
        for _ in range(2):
            holder = await _engine_holding_a_job(cluster, exclude=killed)
            killed.append(holder["index"])
            os.kill(holder["pid"], signal.SIGKILL)
        with pytest.raises(EngineLostError, match="died twice"):
            await job
        assert cluster.stats()["engines"] == 1 and cluster.retries == 1
        assert (await cluster.prove(key, {"seed": 2})).key == "k"  # the survivor serves new jobs


async def _engine_holding_a_job(cluster: RayCluster, exclude: list[int]) -> dict:
    for _ in range(400):
        for e in cluster.stats()["per_engine"]:
            if e["alive"] and e["outstanding"] and e["index"] not in exclude:
                return e
        await asyncio.sleep(0.01)
    raise AssertionError(f"no engine took the job: {cluster.stats()}")


async def test_with_no_engine_left_a_job_fails_with_engine_lost(local_ray):
    async with RayCluster(None, engines=1, config=sim_config()) as cluster:
        key = await cluster.load_key("k")
        os.kill(cluster.stats()["per_engine"][0]["pid"], signal.SIGKILL)
        for _ in range(500):  # the watcher learns of the death without any job being sent
            if cluster.stats()["engines"] == 0:
                break
            await asyncio.sleep(0.01)
        with pytest.raises(EngineLostError, match="no engine is left"):
            await cluster.prove(key, {"seed": 1})
    with pytest.raises(EngineClosedError):
        await cluster.prove(key, {"seed": 1})


async def test_placement_sends_jobs_where_the_queue_drains_first_and_keys_load_where_used(local_ray):
    async with RayCluster(None, engines=2, config=sim_config(gpu_ms=60), window=64) as cluster:
        key = await cluster.load_key("k")
        loaded_on = key.engines
        assert len(loaded_on) == 1
        big = asyncio.create_task(cluster.prove(key, partitions=[{"seed": s} for s in range(6)]))
        await asyncio.sleep(0.05)
        small = await asyncio.gather(*(cluster.prove(key, {"seed": 10 + s}) for s in range(4)))
        assert len(await big) == 6 and len(small) == 4
        counts = {e["index"]: e["completed"] for e in cluster.stats()["per_engine"]}
        # round robin would put two of the four small jobs behind the big one
        assert sorted(counts.values()) == [4, 6], counts
        assert key.engines == (0, 1)  # now resident where it was used
        stats = await cluster.engine_stats()
        assert [s["keys"] for s in stats] == [1, 1] and [s["loads"] for s in stats] == [1, 1]

        # leaving a stream early cancels what it has in flight; a failing iterable ends the stream with its error
        async with contextlib.aclosing(cluster.prove_stream(key, ({"seed": s} for s in range(1000)),
                                                           max_in_flight=6)) as stream:
            async for first in stream:
                assert first.ok
                break
        await _until(lambda: cluster.stats()["proofs_in_flight"] == 0)
        assert cluster.stats()["jobs_in_flight"] == 0

        def failing():
            yield {"seed": 1}
            raise ValueError("the caller's iterable broke")

        with pytest.raises(ValueError, match="iterable broke"):
            async for _ in cluster.prove_stream(key, failing()):
                pass
        await _until(lambda: cluster.stats()["proofs_in_flight"] == 0)
        engines = await cluster.engine_stats()
        for _ in range(100):  # an engine hears of a cancellation shortly after the driver
            if all(s["jobs_in_flight"] == 0 for s in engines):
                break
            await asyncio.sleep(0.02)
            engines = await cluster.engine_stats()
        assert all(s["jobs_in_flight"] == 0 for s in engines)


async def _until(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("engines, config", [("per-gpu", None), (2, EngineConfig(backend="gpu"))])
async def test_engines_that_need_gpus_the_cluster_lacks_fail_at_once(local_ray, engines, config):
    from engine.errors import BackendUnavailableError

    started = time.monotonic()
    with pytest.raises(BackendUnavailableError, match="GPU"):
        async with RayCluster(None, engines=engines, config=config or sim_config()):
            pass
    assert time.monotonic() - started < 5 and ray.is_initialized()  # not a start timeout; Ray stays up


async def test_a_cancelled_prove_cancels_the_engines_job(local_ray):
    async with RayCluster(None, engines=1, config=sim_config(gpu_ms=3000)) as cluster:
        key = await cluster.load_key("k")
        job = asyncio.create_task(cluster.prove(key, {"seed": 1}))  # 3 s on the (simulated) device
        await _engine_holding_a_job(cluster, exclude=[])
        await asyncio.sleep(0.2)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        for _ in range(200):
            if (await cluster.engine_stats())[0]["jobs_in_flight"] == 0:
                break
            await asyncio.sleep(0.02)
        assert (await cluster.engine_stats())[0]["jobs_in_flight"] == 0
        assert cluster.stats()["proofs_in_flight"] == 0


@pytest.mark.slow
@pytest.mark.snarkjs
def test_cli_prove_on_a_local_ray_instance_that_it_starts_and_stops(tmp_path):
    """Also the one test of RayCluster(address=None) starting Ray itself: nothing is left running after."""
    d = EXAMPLES / "bn128"
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    with marked() as mark:
        res = run_engine("prove", "--ray", "local", "--backend", "cpu", d / "sudoku.zkey", d / "sudoku.wtns",
                         proof, public)
    assert res.returncode == 0, res.stderr
    verdict = run_snarkjs("groth16", "verify", d / "verification_key.json", public, proof)
    assert verdict.returncode == 0 and "OK" in verdict.stdout, verdict.stdout + verdict.stderr
    assert wait_for_no_marked_processes(mark) == []
    bad = run_engine("prove", "--ray", "local", "--engines", "none", d / "sudoku.zkey", d / "sudoku.wtns",
                     proof, public)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1] == \
        "error: --engines: 'none' is not a count >= 1 or per-gpu"


@pytest.mark.slow
def test_cli_prove_on_ray_takes_a_piped_witness_and_names_a_piped_key(tmp_path):
    """`--ray local` with `<(cat w.wtns)` failed with "/dev/fd/63: no such file" (the actor opened the path in its
    own process); the witness is now read here and sent.  A piped key cannot be: each engine reads the key by
    its path, so that is one line before any Ray starts."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from conftest import REPO  # noqa: PLC0415

    d = EXAMPLES / "bn128"
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    line = (f'"{sys.executable}" -m engine prove --ray local --backend cpu "{d / "sudoku.zkey"}" '
            f'<(cat "{d / "sudoku.wtns"}") "{proof}" "{public}"')
    res = subprocess.run(["bash", "-c", line], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert run_engine("verify", d / "verification_key.json", public, proof).stdout.strip() == "OK!"
    line = (f'"{sys.executable}" -m engine prove --ray local --backend cpu <(cat "{d / "sudoku.zkey"}") '
            f'"{d / "sudoku.wtns"}" "{proof}" "{public}"')
    res = subprocess.run(["bash", "-c", line], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and res.stderr.strip().endswith(
        "is a pipe; with --ray the cluster's engines read the key by its path: give the file"), res.stderr


@pytest.mark.slow
def test_cli_prove_on_ray_reads_input_json_as_the_local_path_does(tmp_path):
    """`--ray` read input.json with json.load: a file that is not UTF-8 was a UnicodeDecodeError traceback, and a
    JSON number above 2^53 (which snarkjs rounds) was taken where the local path names it. Both are now the local
    path's one line, before any Ray starts; good inputs still prove on the cluster."""
    d = EXAMPLES / "bn128"
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    binary, rounded = tmp_path / "binary.json", tmp_path / "rounded.json"
    binary.write_bytes(b"\xff\xfe{}")
    rounded.write_text('{"puzzle": [' + ", ".join(["18446744073709551000"] * 16) + '], "solution": []}')
    for bad, words in ((binary, "not UTF-8 text"), (rounded, "which snarkjs would silently round")):
        res = run_engine("prove", "--ray", "local", "--backend", "cpu", d / "sudoku.zkey", "--wasm", d / "sudoku.wasm",
                         "--input", bad, proof, public)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert words in res.stderr.strip().splitlines()[-1] and str(bad) in res.stderr
    res = run_engine("prove", "--ray", "local", "--backend", "cpu", d / "sudoku.zkey", "--wasm", d / "sudoku.wasm",
                     "--input", d / "input.json", proof, public)
    assert res.returncode == 0, res.stderr
    assert run_engine("verify", d / "verification_key.json", public, proof).stdout.strip() == "OK!"
