"""Rule 1 and the failure paths through the whole Engine on a real GPU (issue 14 items 8, 9, 11).

Two Engines share one GPU in one process (A starts, reads the device's free memory and trims
while B holds proof reservations); a device fault injected into one proof fails that job with a
DeviceError and no other, and every budget and byte of device memory comes back.

Marked `gpu`: skipped only when no CUDA device exists.
"""
from __future__ import annotations

import json

import anyio
import pytest

from conftest import FIXTURES
from cuda_kernels import device_global, driver
from engine.api import Engine
from engine.backends.select import cuda_device_count
from engine.config import EngineConfig
from engine.errors import DeviceError
from engine.formats import read_zkey
from engine.groth16.verifier import verify, vk_from_zkey
from scheduler.timeline import MemorySink, Stage

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]

TINY = FIXTURES / "tiny" / "bn128"


def _expected():
    return vk_from_zkey(read_zkey(TINY / "tiny.zkey")), [int(x) for x in json.loads((TINY / "public.json").read_text())]


async def test_two_engines_share_one_gpu_in_one_process():
    vk, public = _expected()
    wtns = str(TINY / "tiny.wtns")
    seen = {"start": None, "trims": []}
    b_cfg = EngineConfig(backend="gpu", synthesis_workers=2, compute_slots=2, idle_trim_s=None)
    a_cfg = EngineConfig(backend="gpu", synthesis_workers=1, idle_trim_s=0.05)
    b_proofs = []
    async with Engine(b_cfg) as b:
        b_key = await b.load_key(TINY / "tiny.zkey")
        stop = anyio.Event()

        async def b_load():  # three of these keep B's reservations outstanding all along
            while not stop.is_set():
                b_proofs.extend(await b.prove(b_key, partitions=[wtns] * 4))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(b_load)
            while device_global.reservations_outstanding(0, b.vram) == 0:
                await anyio.sleep(0.001)
            seen["start"] = device_global.reservations_outstanding(0, b.vram)
            async with Engine(a_cfg) as a:  # A's start-up reading of free memory, beside B's proofs
                backend = a.devices[0].backend
                trim = backend.trim_pool

                def watched_trim():
                    seen["trims"].append(device_global.reservations_outstanding(0, b.vram))
                    trim()

                backend.trim_pool = watched_trim
                a_key = await a.load_key(TINY / "tiny.zkey")
                a_proofs = []
                with anyio.fail_after(120):
                    while not any(n > 0 for n in seen["trims"]):  # A idles and trims while B proves
                        a_proofs.append(await a.prove(a_key, wtns))
                        await anyio.sleep(0.2)
            stop.set()
        assert b.at_rest()
    assert seen["start"] > 0
    assert any(n > 0 for n in seen["trims"]), seen["trims"]  # a trim of A's while B held reservations
    assert all(verify(vk, public, p) for p in a_proofs)
    assert len(b_proofs) >= 12 and all(verify(vk, public, p) for p in b_proofs[:5] + b_proofs[-5:])


# the nth call after the warm proof, among eight proofs' calls; the done events' waits are few (a batch's k done
# events are waited for at once, and how the eight batch varies run to run: the 3rd of them never came in one
# device run), so the fault goes to the first
@pytest.mark.parametrize("call,nth", [("cuLaunchKernel", 40), ("cuMemAllocFromPoolAsync", 20),
                                      ("cuEventRecord", 9), ("cuEventSynchronize", 1)])
async def test_an_injected_device_fault_fails_one_job_and_nothing_else(call, nth):
    vk, public = _expected()
    wtns = str(TINY / "tiny.wtns")
    cfg = EngineConfig(backend="gpu", synthesis_workers=2, compute_slots=2, idle_trim_s=None)
    sink = MemorySink()
    async with Engine(cfg, on_event=sink) as eng:
        key = await eng.load_key(TINY / "tiny.zkey")
        await eng.prove(key, wtns)  # warm: the pinned buffers are there, the module loaded
        dev = eng.devices[0].backend.device
        used = dev.pool_used_bytes()
        results = []

        async def one():
            try:
                results.append(await eng.prove(key, wtns))
            except Exception as exc:  # noqa: BLE001 - judged below: it must be a plain DeviceError
                results.append(exc)

        with driver.inject_fault(call, nth, "CUDA_ERROR_LAUNCH_FAILED"):
            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(one)
            fired = not driver.fault_pending(call)
        assert fired
        failures = [r for r in results if isinstance(r, Exception)]
        assert len(failures) <= 1 and len(results) == 8, failures
        assert all(isinstance(f, DeviceError) and call in str(f) for f in failures), failures
        # a launch or an allocation that fails fails its job, or, when it was a batch's shared work
        # (one launch for all of its proofs), each proof of that batch is computed again alone and
        # none fails; a failed event record or wait may be absorbed (the done fence falls back to
        # waiting on the stream)
        if call in ("cuLaunchKernel", "cuMemAllocFromPoolAsync"):
            retried = any(e.stage == Stage.MEM_WAIT and "alone" in (e.detail or "") for e in sink)
            assert len(failures) == 1 or (not failures and retried), (failures, retried)
        for p in results:
            if not isinstance(p, Exception):
                assert verify(vk, public, p)
        assert eng.at_rest()
        assert dev.pool_used_bytes() == used  # every byte of the failed proof came back
        assert verify(vk, public, await eng.prove(key, wtns))  # and the engine still proves
