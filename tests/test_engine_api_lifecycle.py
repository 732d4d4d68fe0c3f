"""An Engine's life at its edges: closed twice, closed before it was entered."""
import asyncio
import threading

import pytest

from engine.api import Engine
from engine.config import EngineConfig, SimulationConfig
from engine.errors import EngineClosedError, EngineError


def sim_config() -> EngineConfig:
    sim = SimulationConfig(devices=1, vram="4GiB", working_set="1GiB", witness_rows=64, synth_ms=1, upload_ms=1,
                           stage_host_ms=0, gpu_ms=3, epilogue_ms=0, verify_ms=0)
    return EngineConfig(simulation=sim, backend="simulated", synthesis_workers=1, idle_trim_s=None)


def _in_a_thread(main, seconds: float = 20.0):
    """asyncio.run(main()) on a daemon thread: a close that hangs in a shielded scope fails the test instead of
    hanging the test run (no cancellation reaches it)."""
    outcome: list = []

    def body() -> None:
        try:
            outcome.append((True, asyncio.run(main())))
        except BaseException as exc:  # noqa: BLE001 - raised again on the test's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def test_closing_an_engine_twice_returns_at_once():
    async def main():
        eng = Engine(sim_config())
        async with eng:
            key = await eng.load_key("k")
            await eng.prove(key, {})
        second = await eng.__aexit__(None, None, None)  # before: waited for ever on the stopped device threads
        with pytest.raises(EngineClosedError, match="shut down"):
            await eng.prove(key, {})
        return second

    assert _in_a_thread(main) is None


def test_closing_an_engine_never_entered_is_a_no_op_and_it_can_still_be_entered():
    async def main():
        eng = Engine(sim_config())
        assert await eng.__aexit__(None, None, None) is None  # before: AttributeError on its task group
        async with eng:  # before: "an Engine can be entered once"
            key = await eng.load_key("k")
            return (await eng.prove(key, {})).key

    assert _in_a_thread(main) == "k"


async def test_an_engine_used_from_another_event_loop_says_so_and_keeps_serving_its_own():
    async with Engine(sim_config()) as eng:
        key = await eng.load_key("k")
        seen: dict = {}

        def other_loop() -> None:
            async def main():
                for name, call in (("prove", lambda: eng.prove(key, {})), ("load_key", lambda: eng.load_key("k2"))):
                    try:
                        seen[name] = await asyncio.wait_for(call(), 10)
                    except BaseException as exc:  # noqa: BLE001 - recorded for the asserts
                        seen[name] = exc

            asyncio.run(main())

        thread = threading.Thread(target=other_loop, daemon=True)
        thread.start()
        await asyncio.to_thread(thread.join, 30)
        # before: the job ran on both loops at once (proofs from the two loops together hung both)
        for name in ("prove", "load_key"):
            assert isinstance(seen[name], RuntimeError), seen[name]
            assert "event loop that entered it" in str(seen[name])
        assert (await eng.prove(key, {})).key == "k"
        assert eng.at_rest()


async def test_unloading_a_key_waits_for_its_jobs_only_not_for_an_idle_engine():
    sim = SimulationConfig(devices=1, vram="4GiB", working_set="1GiB", witness_rows=64, synth_ms=1, upload_ms=1,
                           stage_host_ms=0, gpu_ms=20, epilogue_ms=0, verify_ms=0)
    async with Engine(EngineConfig(simulation=sim, backend="simulated", synthesis_workers=2, idle_trim_s=None)) as eng:
        a, b = await eng.load_key("a"), await eng.load_key("b")
        busy = True

        async def other_key_traffic():
            while busy:
                await asyncio.gather(eng.prove(b, {}), asyncio.sleep(0.005))

        traffic = [asyncio.create_task(other_key_traffic()) for _ in range(3)]
        await asyncio.sleep(0.05)
        job = asyncio.create_task(eng.prove(a, {}))
        await asyncio.sleep(0.001)
        try:
            # before: unload_key drained the whole engine, which b's traffic never let become idle
            await asyncio.wait_for(eng.unload_key(a), 5)
            assert job.done() and (await job).key == "a"
        finally:
            busy = False
            await asyncio.gather(*traffic)
        with pytest.raises(EngineError, match="not loaded"):
            await eng.prove(a, {})
        assert (await eng.prove(b, {})).key == "b"


async def test_unload_key_refuses_another_engines_key_and_what_is_not_a_key():
    """`eng2.unload_key(key_of_eng1)` released eng1's key through eng2's devices without a word (eng1's next
    proof then failed on a budget it no longer held), and `unload_key("k")` was an AttributeError."""
    async with Engine(sim_config()) as one, Engine(sim_config()) as two:
        key = await one.load_key("k")
        with pytest.raises(EngineError, match="this key is not loaded in this engine"):
            await two.unload_key(key)
        with pytest.raises(TypeError, match="unload_key: the key is what eng.load_key returned, not str 'k'"):
            await one.unload_key("k")
        assert len(await one.prove(key, partitions=[{}, {}])) == 2
        await one.unload_key(key)
        await one.unload_key(key)  # twice: nothing more to do, as before
        assert one.at_rest() and two.at_rest()
