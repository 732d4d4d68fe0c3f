"""The Engine batching queued proofs of one key on a real GPU (GpuBackend.compute_batch).

Marked `gpu`: skipped only when no CUDA device exists.  One compute slot and sixteen
in-memory witnesses: while the first proof computes the others stage and queue, and the
next slot holder takes them as one batch.  Every proof must verify.
"""
from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from engine.api import Engine
from engine.backends.select import cuda_device_count
from engine.config import EngineConfig
from engine.formats import read_wtns, read_zkey
from engine.groth16.verifier import verify, vk_from_zkey
from scheduler.timeline import MemorySink, Stage

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
async def test_queued_gpu_proofs_of_one_key_batch_and_verify(curve):
    d = FIXTURES / "tiny" / curve
    sink = MemorySink()
    config = EngineConfig(backend="gpu", synthesis_workers=1, compute_slots=1, lock_mode="split", idle_trim_s=None)
    values = read_wtns(d / "tiny.wtns").values
    async with Engine(config, on_event=sink) as eng:
        key = await eng.load_key(d / "tiny.zkey")
        start = eng.vram.available(0)
        proofs = await eng.prove(key, partitions=[values.copy() for _ in range(16)])
        assert eng.at_rest()
        assert eng.vram.available(0) == start
    vk = vk_from_zkey(read_zkey(d / "tiny.zkey"))
    expected = [int(x) for x in json.loads((d / "public.json").read_text())]
    assert len({p.pi_a for p in proofs}) == 16
    for p in proofs:
        assert p.public == expected and verify(vk, p.public, p)
    batches = [int(e.detail.split()[-1]) for e in sink if e.stage == Stage.GPU_START and e.detail.startswith("batch")]
    assert len(batches) == 16 and max(batches) > 1
