"""The public asyncio Engine: concurrency, failures, streams, shutdown, configuration, real proofs."""
import asyncio
import json
import re
from pathlib import Path

import anyio
import numpy as np
import pytest

from engine import config as engine_config
from engine.api import Engine, prove_files, run
from engine.config import ConfigError, EngineConfig, SimulationConfig
from engine.errors import EngineClosedError, EngineError, MismatchError
from scheduler.synth_pool import SynthesisCrashedError
from scheduler.timeline import MemorySink, Stage, load_events

from conftest import EXAMPLES, FIXTURES

TINY = FIXTURES / "tiny"


def sim_config(**overrides) -> EngineConfig:
    sim = dict(devices=1, vram="4GiB", working_set="1GiB", witness_rows=64, synth_ms=1, upload_ms=1,
               stage_host_ms=0, gpu_ms=3, epilogue_ms=0, verify_ms=0)
    sim.update(overrides.pop("simulation", {}))
    base = dict(backend="simulated", synthesis_workers=2, compute_slots=2, idle_trim_s=None)
    base.update(overrides)
    return EngineConfig(simulation=SimulationConfig(**sim), **base)


async def test_prove_returns_one_proof_or_one_per_partition_in_order():
    async with Engine(sim_config()) as eng:
        key = await eng.load_key("circuit.zkey")
        single = await eng.prove(key, {})
        assert single.key == "circuit.zkey"
        many = await eng.prove(key, partitions=[{"seed": s} for s in (5, 6, 7)])
        assert [p.digest for p in many] == [(await eng.prove(key, {"seed": s})).digest for s in (5, 6, 7)]
        with pytest.raises(TypeError):
            await eng.prove(key, {}, partitions=[{}])
        with pytest.raises(TypeError, match="prove: the key is what eng.load_key returned, not str 'circuit.zkey'"):
            await eng.prove("circuit.zkey", {})  # was an AttributeError
        with pytest.raises(TypeError, match="the key is what eng.load_key returned, not str"):
            async for _ in eng.prove_stream("circuit.zkey", [{}]):
                pass


async def test_many_concurrent_callers_share_the_engine():
    async with Engine(sim_config(simulation={"devices": 2})) as eng:
        key = await eng.load_key("k")
        proofs = await asyncio.gather(*(eng.prove(key, {"seed": i}) for i in range(60)))
        assert len(proofs) == 60 and {p.device for p in proofs} == {0, 1}
        assert eng.at_rest()


async def test_failing_job_raises_its_own_error_and_the_engine_keeps_serving():
    async with Engine(sim_config()) as eng:
        key = await eng.load_key("k")
        results = await asyncio.gather(
            *(eng.prove(key, {"fail": "input 3 is out of range"} if i == 3 else {}) for i in range(8)),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert len(errors) == 1 and isinstance(results[3], EngineError)
        assert str(results[3]) == "input 3 is out of range"
        # a failing partition fails its whole job, and only that job
        with pytest.raises(EngineError, match="partition two is bad"):
            await eng.prove(key, partitions=[{}, {"fail": "partition two is bad"}, {}])
        assert (await eng.prove(key, {})).key == "k"
        await eng.drain()
        assert eng.at_rest()


async def test_crashing_synthesis_worker_fails_its_job_only_and_the_pool_recovers():
    async with Engine(sim_config()) as eng:
        key = await eng.load_key("k")
        results = await asyncio.gather(*(eng.prove(key, {"crash": True} if i == 1 else {}) for i in range(6)),
                                       return_exceptions=True)
        assert isinstance(results[1], SynthesisCrashedError)
        assert all(not isinstance(r, BaseException) for i, r in enumerate(results) if i != 1)
        await eng.drain()
        assert eng.synth.alive() == 2 and eng.synth.restarts == 1 and eng.at_rest()
        assert len(await eng.prove(key, partitions=[{}, {}, {}])) == 3


async def test_stream_yields_every_item_once_with_failures_in_place():
    async with Engine(sim_config()) as eng:
        key = await eng.load_key("k")
        items = [{"seed": i} for i in range(12)]
        items[4] = {"fail": "bad item"}
        seen = [r async for r in eng.prove_stream(key, items, max_in_flight=3)]
        assert sorted(r.index for r in seen) == list(range(12))
        assert [r.index for r in seen if not r.ok] == [4] and "bad item" in str(seen[[r.index for r in seen].index(4)].error)
        ordered = [r.index async for r in eng.prove_stream(key, iter(items), max_in_flight=5, ordered=True)]
        assert ordered == list(range(12))

        async def agen():
            for i in range(5):
                yield {"seed": i}

        assert len([r async for r in eng.prove_stream(key, agen())]) == 5


async def test_leaving_a_stream_early_cancels_what_is_in_flight():
    async with Engine(sim_config(simulation={"gpu_ms": 50})) as eng:
        key = await eng.load_key("k")
        async for first in eng.prove_stream(key, ({} for _ in range(1000)), max_in_flight=4):
            assert first.ok
            break
        await eng.drain()
        assert eng.at_rest()


@pytest.mark.parametrize("limit, error", [(-1, ValueError), (1.5, TypeError), ("3", TypeError), (True, TypeError)])
async def test_a_stream_limit_that_is_not_a_count_names_max_in_flight(limit, error):
    async with Engine(sim_config()) as eng:
        key = await eng.load_key("k")
        with pytest.raises(error, match="max_in_flight"):  # was anyio's "max_buffer_size ..." (or a stream of 2)
            async for _ in eng.prove_stream(key, [{}, {}], max_in_flight=limit):
                pass
        assert [r.ok async for r in eng.prove_stream(key, [{}, {}], max_in_flight=1)] == [True, True]
        await eng.drain()
        assert eng.at_rest()


async def test_shutdown_drains_jobs_in_flight():
    sink = MemorySink()
    tasks = []
    async with Engine(sim_config(simulation={"gpu_ms": 30}), on_event=sink) as eng:
        key = await eng.load_key("k")
        tasks = [asyncio.create_task(eng.prove(key, {})) for _ in range(6)]
        await asyncio.sleep(0.01)
    # the block ended while the jobs were running: they finished rather than being dropped
    proofs = [t.result() for t in tasks]
    assert len(proofs) == 6 and sum(e.stage == Stage.DONE for e in sink) == 6
    with pytest.raises(EngineClosedError):
        await eng.prove(key, {})


async def test_engine_not_entered_refuses_work():
    eng = Engine(sim_config())
    with pytest.raises(EngineClosedError, match="async with"):
        await eng.load_key("k")


async def test_key_from_another_engine_is_refused():
    async with Engine(sim_config()) as one, Engine(sim_config()) as two:
        key = await one.load_key("k")
        with pytest.raises(EngineError, match="not loaded in this engine"):
            await two.prove(key, {})


async def test_resident_key_takes_its_memory_out_of_the_budget_until_unloaded():
    gib = 1 << 30
    async with Engine(sim_config(simulation={"vram": "4GiB", "key_resident": "1GiB"})) as eng:
        assert eng.stats()["vram_capacity"] == [4 * gib]
        key = await eng.load_key("k")
        assert eng.stats()["vram_capacity"] == [3 * gib]
        await eng.prove(key, {})
        await eng.unload_key(key)
        assert eng.stats()["vram_capacity"] == [4 * gib]


def test_engine_works_under_uvloop():
    import uvloop

    async def main():
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        async with Engine(sim_config()) as eng:
            key = await eng.load_key("k")
            proofs = await asyncio.gather(*(eng.prove(key, {}) for _ in range(10)))
            with anyio.move_on_after(0.001):  # a cancellation under uvloop leaves the engine whole
                await eng.prove(key, {"synth_ms": 2000})
            await eng.drain()
            assert eng.at_rest()
            return len(proofs)

    assert run(main, use_uvloop=True) == 10


def test_config_loads_from_toml_and_flags_override(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text('[engine]\nbackend = "simulated"\ncompute_slots = 3\nvram_budget = "6GiB"\n'
                    'lock_mode = "single"\n[engine.simulation]\ndevices = 2\n')
    cfg = engine_config.load(path)
    assert (cfg.compute_slots, cfg.vram_budget, cfg.lock_mode, cfg.simulation.devices) == (3, 6 << 30, "single", 2)
    import argparse

    parser = argparse.ArgumentParser()
    engine_config.add_arguments(parser)
    args = parser.parse_args(["--config", str(path), "--compute-slots", "1", "--lock-mode", "split",
                              "--host-budget", "512MiB", "--no-verify", "--devices", "0,1"])
    cfg = engine_config.from_args(args)
    assert (cfg.compute_slots, cfg.lock_mode, cfg.host_budget, cfg.verify) == (1, "split", 512 << 20, False)
    assert cfg.devices == [0, 1] and cfg.vram_budget == 6 << 30  # untouched by flags


def test_a_config_file_that_cannot_be_read_is_a_config_error_naming_it(tmp_path):
    """A folder and a file that is not UTF-8 were an IsADirectoryError and a UnicodeDecodeError: tracebacks from
    `prove --config` and `serve --config`."""
    from engine.service.settings import load_files  # noqa: PLC0415

    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe")
    for path, words in ((tmp_path, "is a directory, not a configuration file"),
                        (binary, "is not a TOML text file (not UTF-8)")):
        for load in (engine_config.load, load_files):
            with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {re.escape(words)}$"):
                load(path)


@pytest.mark.parametrize("text, message", [
    ("compute_slots = 0", "compute_slots: need at least 1"),
    ('synthesis_start_method = "fork"', "never fork"),
    ('vram_budget = "lots"', "not a size"),
    ("bogus = 1", "bogus: not a key of the engine's configuration"),
    ("compute_slots = ", "not valid TOML"),
    ("devices = [1, 0, 1]", "devices: [1, 0, 1] names device 1 more than once"),  # was accepted
    # TOML reads nan, which `< 0` lets by: a nan idle trim or shutdown timeout failed later in the task group
    ("idle_trim_s = nan", "idle_trim_s: nan is not a number"),
    ("shutdown_timeout_s = nan", "shutdown_timeout_s: nan is not a number"),
    ("shutdown_timeout_s = -1.0", "shutdown_timeout_s: -1.0 is negative"),  # was accepted
    ("[simulation]\ngpu_ms = nan", "simulation.gpu_ms: nan is not a number"),
])
def test_bad_config_is_a_one_line_error_naming_the_file(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as info:
        engine_config.load(path)
    assert str(path) in str(info.value) and message in str(info.value)
    assert "\n" not in str(info.value)


async def test_timeline_option_writes_one_json_line_per_event(tmp_path):
    path = tmp_path / "run.jsonl"
    async with Engine(sim_config(timeline=str(path))) as eng:
        key = await eng.load_key("k")
        await eng.prove(key, partitions=[{}, {}])
    events = load_events(path)
    stages = [e.stage for e in events if e.job == 1 and e.partition == 0]
    for stage in ("SUBMIT", "SYNTH_START", "SYNTH_END", "BUDGET_WAIT", "BUDGET_GRANTED", "MEM_START", "MEM_END",
                  "GPU_START", "GPU_END", "EPILOGUE_START", "EPILOGUE_END", "VERIFY_START", "VERIFY_END", "DONE"):
        assert stage in stages
    assert stages.index("GPU_END") < stages.index("BUDGET_RELEASED") < stages.index("EPILOGUE_START")


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_cpu_backend_proves_files_that_verify(curve, tmp_path):
    from engine.formats import read_zkey
    from engine.groth16.verifier import verify, vk_from_zkey

    d = TINY / curve
    timeline = tmp_path / "t.jsonl"
    proofs = prove_files(d / "tiny.zkey", [d / "tiny.wtns", d / "tiny.wtns"],
                         config=EngineConfig(backend="cpu", synthesis_workers=1, compute_slots=2), timeline=timeline)
    expected_public = [int(x) for x in json.loads((d / "public.json").read_text())]
    vk = vk_from_zkey(read_zkey(d / "tiny.zkey"))
    assert len(proofs) == 2 and proofs[0].pi_a != proofs[1].pi_a  # fresh r, s per proof
    for proof in proofs:
        assert proof.public == expected_public and verify(vk, proof.public, proof)
    assert sum(e.stage == Stage.DONE for e in load_events(timeline)) == 2


async def test_cpu_backend_proves_from_circuit_inputs_and_rejects_a_foreign_witness():
    d = TINY / "bn128"
    async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
        key = await eng.load_key(d / "tiny.zkey", wasm=d / "tiny.wasm")
        proof = await eng.prove(key, json.loads((TINY / "input.json").read_text()))
        assert proof.public == [int(x) for x in json.loads((d / "public.json").read_text())]
        with pytest.raises(MismatchError, match="bls12381"):
            await eng.prove(key, str(TINY / "bls12381" / "tiny.wtns"))
        assert eng.at_rest()


async def test_cpu_backend_proves_values_given_as_ints_and_names_a_bad_shape():
    """A list of ints was a TypeError (whose message asked for "values"), a 1-D array an IndexError, and an
    array of three limb columns was taken as a witness that then failed verification."""
    import numpy as np  # noqa: PLC0415

    from engine.algebra.limbs import to_ints  # noqa: PLC0415
    from engine.errors import UnreducedWitnessError  # noqa: PLC0415
    from engine.formats import read_wtns  # noqa: PLC0415

    d = TINY / "bn128"
    limbs = read_wtns(d / "tiny.wtns").values
    ints = to_ints(limbs)
    expected = [int(x) for x in json.loads((d / "public.json").read_text())]
    async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
        key = await eng.load_key(d / "tiny.zkey")
        for given in (ints, tuple(ints), np.array(ints, dtype=object), np.array(ints, dtype=np.uint64), limbs):
            assert (await eng.prove(key, given)).public == expected
        with pytest.raises(TypeError, match=r"witness 0: values as an array must be .* got shape \(\d+, 3\) of uint64"):
            await eng.prove(key, limbs[:, :3])
        with pytest.raises(TypeError, match=r"witness 0: .* got shape \(\d+, 4\) of float64"):
            await eng.prove(key, limbs.astype(np.float64))
        with pytest.raises(TypeError, match="witness 1: value 2 is str '5', not an int"):
            await eng.prove(key, partitions=[ints, ints[:2] + ["5"] + ints[3:]])
        for bad in (-1, 1 << 256):
            with pytest.raises(UnreducedWitnessError, match="witness 0: value 1 is not reduced modulo r"):
                await eng.prove(key, [1, bad] + ints[2:])
        signed = limbs.astype(np.int64)  # a negative limb was read as its 64-bit word: another witness, which
        signed[2, 1] = -1  # failed verification (VerificationError) instead of naming the row
        with pytest.raises(UnreducedWitnessError, match="witness 0: value 2 is not reduced modulo r"):
            await eng.prove(key, signed)
        assert (await eng.prove(key, limbs.astype(np.int64))).public == expected
        assert (await eng.prove(key, ints)).public == expected and eng.at_rest()


async def test_load_key_refuses_a_wasm_that_cannot_compute_its_witnesses(tmp_path):
    """A missing circuit.wasm, a file that is not wasm and another curve's wasm were accepted by load_key; then
    every proof from inputs failed with the same error.  Now load_key raises it, naming the wasm."""
    from engine.witness.errors import CircuitFileError, CircuitPrimeError  # noqa: PLC0415

    examples = TINY.parents[2] / "examples"
    zkey = examples / "bn128" / "sudoku.zkey"
    async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
        with pytest.raises(CircuitFileError, match="none.wasm: no such file"):
            await eng.load_key(zkey, wasm=tmp_path / "none.wasm")
        with pytest.raises(CircuitFileError, match=r"sudoku.zkey: not a WebAssembly file"):
            await eng.load_key(zkey, wasm=zkey)
        with pytest.raises(CircuitPrimeError, match=r"bls12381/sudoku.wasm: compiled for bls12381, but .*sudoku.zkey is"
                                                    r" for bn128"):
            await eng.load_key(zkey, wasm=examples / "bls12381" / "sudoku.wasm")
        key = await eng.load_key(zkey, wasm=examples / "bn128" / "sudoku.wasm")
        proof = await eng.prove(key, json.loads((examples / "bn128" / "input.json").read_text()))
        assert proof.public == [int(x) for x in json.loads((examples / "bn128" / "public.json").read_text())]


async def test_a_path_with_a_nul_is_an_input_error_and_the_engine_keeps_serving(tmp_path):
    """load_key and prove of a path with a NUL character raised Python's bare ValueError ("embedded null byte")."""
    from engine.errors import InputFileError  # noqa: PLC0415

    examples = TINY.parents[2] / "examples" / "bn128"
    async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
        with pytest.raises(InputFileError, match="a.zkey: is not a path: it holds a NUL character"):
            await eng.load_key(str(tmp_path / "\0a.zkey"))
        key = await eng.load_key(examples / "sudoku.zkey")
        with pytest.raises(InputFileError, match="b.wtns: is not a path: it holds a NUL character"):
            await eng.prove(key, str(tmp_path / "\0b.wtns"))
        proof = await eng.prove(key, examples / "sudoku.wtns")
        assert proof.public == [int(x) for x in json.loads((examples / "public.json").read_text())]


async def test_stream_source_error_reaches_the_consumer_and_the_engine_lives_on():
    def items():
        yield {}
        raise ValueError("input list is corrupt")

    async with Engine(sim_config()) as eng:
        key = await eng.load_key("k")
        got = []
        with pytest.raises(ValueError, match="corrupt"):
            async for result in eng.prove_stream(key, items()):
                got.append(result)
        assert len(got) == 1 and got[0].ok
        assert (await eng.prove(key, {})).key == "k"


def test_groth16_kit_runs_only_device_made_steps_inline():
    """finish inline only for a core the backend ended itself (CoreResult.proof set); verify inline
    only for a proof its backend checked (nothing left to do); everything else on threads/pools."""
    from engine.groth16.kit import Groth16Kit
    from engine.backends.base import CoreResult
    from engine.groth16.proof import Proof
    from engine.algebra.curves import curve_by_name

    kit = Groth16Kit()
    device = CoreResult(None, None, None, None, None, {}, proof=((1, 2), None, None), verified=True)
    host = CoreResult(None, None, None, None, None, {})
    assert kit.inline("finish", None, device) and not kit.inline("finish", None, host)
    curve = curve_by_name("bn128")
    checked = Proof(curve, None, None, None, [], {"gpu_check": 0.001})
    unchecked = Proof(curve, None, None, None, [], {"msm_h": 0.001})
    assert kit.inline("verify", None, checked) and not kit.inline("verify", None, unchecked)
    assert not kit.inline("check", None, device)


async def test_one_witness_where_a_list_belongs_is_a_type_error_not_a_proof_a_character(tmp_path):
    """prove(partitions="w.wtns"), prove_stream(key, "w.wtns") and prove_files(zkey, "w.wtns") proved each
    character of the path as a file name ("w: no such file", ...); a dict, its keys; an (m, 4) array, its rows."""
    wtns = str(EXAMPLES / "bn128" / "sudoku.wtns")
    async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
        key = await eng.load_key(EXAMPLES / "bn128" / "sudoku.zkey")
        for one in (wtns, Path(wtns), {"a": 1}, np.zeros((4, 4), np.uint64)):
            with pytest.raises(TypeError, match=f"got a {type(one).__name__} \\(for one proof, give \\[it\\]\\)"):
                await eng.prove(key, partitions=one)
            with pytest.raises(TypeError, match=f"prove_stream's items: .* got a {type(one).__name__}"):
                [item async for item in eng.prove_stream(key, one)]
        assert [item.ok async for item in eng.prove_stream(key, iter([wtns]))] == [True]


def test_prove_files_takes_a_list_and_an_empty_one_is_no_proofs():
    wtns = str(EXAMPLES / "bn128" / "sudoku.wtns")
    with pytest.raises(TypeError, match="witnesses: a list"):
        prove_files(EXAMPLES / "bn128" / "sudoku.zkey", wtns, config=EngineConfig(backend="cpu"))
    assert prove_files(EXAMPLES / "bn128" / "sudoku.zkey", [], config=EngineConfig(backend="cpu")) == []


@pytest.mark.parametrize("fields, words", [
    # devices="0,1" was a TypeError from a comparison; [0.5] and [True] were accepted
    ({"devices": "0,1"}, "devices: expected an array of device indices such as [0, 1], got the string '0,1'"),
    ({"devices": [0.5]}, "devices: expected an array of device indices such as [0, 1], got an array [0.5]"),
    ({"devices": [True]}, "devices: expected an array of device indices such as [0, 1], got an array [True]"),
    ({"synthesis_workers": "2"}, "synthesis_workers: expected a whole number, got the string '2'"),
    ({"idle_trim_s": "5"}, "idle_trim_s: expected a number, got the string '5'"),
    ({"timeline": 5}, "timeline: expected a file name (a string), got the whole number 5"),  # was accepted
    ({"verify": 1}, "verify: expected true or false, got the whole number 1"),
    ({"simulation": {"gpu_ms": "fast"}}, "simulation.gpu_ms: expected a number, got the string 'fast'"),
])
def test_a_config_built_in_python_is_checked_like_one_read_from_a_file(fields, words):
    """msgspec checks types when it decodes TOML or flags, not when Python code builds the struct."""
    with pytest.raises(ConfigError) as info:
        EngineConfig(**fields)
    assert words in str(info.value)


def test_a_config_built_in_python_takes_paths_and_float_sizes(tmp_path):
    cfg = EngineConfig(timeline=tmp_path / "t.jsonl", key_cache_dir=tmp_path, vram_budget=16e9, idle_trim_s=5)
    assert cfg.timeline == str(tmp_path / "t.jsonl") and cfg.key_cache_dir == str(tmp_path)
    assert cfg.vram_budget == 16_000_000_000 and cfg.idle_trim_s == 5
    assert EngineConfig(simulation=SimulationConfig(gpu_ms=1.0)).simulation.gpu_ms == 1.0
    assert EngineConfig(simulation={"gpu_ms": 2.0}).simulation == SimulationConfig(gpu_ms=2.0)  # was left a dict


@pytest.mark.parametrize("config, words", [
    ("engine.toml", "an EngineConfig, not a str (engine.load_config(path) reads a TOML file)"),
    ({"backend": "cpu"}, "an EngineConfig, not a dict (EngineConfig(**settings) takes a dict's settings)"),
    (5, "an EngineConfig, not a int"),
])
def test_an_engine_given_something_else_than_a_config_says_what_it_takes(config, words):
    """It was "AttributeError: 'str' object has no attribute 'timeline'" at the start."""
    from engine.distributed.cluster import RayCluster  # noqa: PLC0415 - the same check; no Ray is started

    for make, who in ((Engine, "Engine"), (lambda c: RayCluster(None, 1, c), "RayCluster")):
        with pytest.raises(TypeError) as info:
            make(config)
        assert f"{who}(config): {words}" in str(info.value)
