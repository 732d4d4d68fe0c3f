"""The asyncio Engine on a real GPU: concurrent proofs verify, budgets return, timeline overlap.

Marked `gpu`: skipped only when no CUDA device exists.
"""
from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from engine.api import Engine
from engine.backends.select import cuda_device_count
from engine.config import EngineConfig
from engine.formats import read_zkey
from engine.groth16.verifier import verify, vk_from_zkey
from scheduler.timeline import MemorySink, Stage

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]

TINY = FIXTURES / "tiny"


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
async def test_concurrent_gpu_proofs_verify_and_budgets_return(curve):
    d = TINY / curve
    sink = MemorySink()
    config = EngineConfig(backend="gpu", synthesis_workers=2, compute_slots=2, lock_mode="split", idle_trim_s=None)
    async with Engine(config, on_event=sink) as eng:
        key = await eng.load_key(d / "tiny.zkey")
        start = eng.vram.available(0)
        proofs = await eng.prove(key, partitions=[str(d / "tiny.wtns")] * 12)
        assert eng.at_rest()
        assert eng.vram.available(0) == start  # every reservation came back
    vk = vk_from_zkey(read_zkey(d / "tiny.zkey"))
    expected = [int(x) for x in json.loads((d / "public.json").read_text())]
    assert len({p.pi_a for p in proofs}) == 12  # fresh r, s for every proof
    for p in proofs:
        assert p.public == expected and verify(vk, p.public, p)
    stages = {e.stage for e in sink}
    assert {Stage.MEM_START, Stage.GPU_START, Stage.GPU_END} <= stages
