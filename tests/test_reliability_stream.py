"""prove_stream holds at most max_in_flight items (in flight, queued for the reader, held back for order):
a slow reader slows the producer instead of growing memory."""
from __future__ import annotations

import anyio

from engine.api import Engine
from engine.config import EngineConfig, SimulationConfig
from scheduler.timeline import MemorySink, Stage


def _config() -> EngineConfig:
    sim = SimulationConfig(devices=1, vram="4GiB", working_set="1GiB", witness_rows=64, synth_ms=1, upload_ms=0,
                           stage_host_ms=0, gpu_ms=1, epilogue_ms=0, verify_ms=0)
    return EngineConfig(backend="simulated", synthesis_workers=2, compute_slots=2, idle_trim_s=None, simulation=sim)


async def test_slow_reader_slows_the_producer():
    sink = MemorySink()
    async with Engine(_config(), on_event=sink) as eng:
        key = await eng.load_key("k")
        read, ahead = 0, []
        async for result in eng.prove_stream(key, ({"seed": i} for i in range(20)), max_in_flight=3):
            assert result.ok
            read += 1
            await anyio.sleep(0.05)  # a slow reader: every job finishes long before it is read
            ahead.append(sum(e.stage == Stage.JOB_SUBMIT for e in sink) - read)
        assert read == 20
        assert max(ahead) <= 3, f"the stream ran {max(ahead)} items ahead of its reader (max_in_flight=3)"


async def test_ordered_stream_does_not_buffer_past_its_limit_behind_a_slow_item():
    sink = MemorySink()
    async with Engine(_config(), on_event=sink) as eng:
        key = await eng.load_key("k")
        items = [{"seed": 0, "synth_ms": 600}] + [{"seed": i} for i in range(1, 30)]
        submitted_when_first_came = None
        order = []
        async for result in eng.prove_stream(key, items, max_in_flight=4, ordered=True):
            if submitted_when_first_came is None:
                submitted_when_first_came = sum(e.stage == Stage.JOB_SUBMIT for e in sink)
            order.append(result.index)
        assert order == list(range(30))
        # while item 0 synthesised for 600 ms, the 29 fast ones would all have been proved and buffered
        assert submitted_when_first_came <= 4, submitted_when_first_came
