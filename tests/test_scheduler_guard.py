"""Rule 1 by construction: device-global calls are refused while any proof holds VRAM."""
import anyio
import pytest

from engine.api import Engine
from engine.config import EngineConfig, SimulationConfig
from cuda_kernels import device_global as guard
from scheduler.budget import Budget
from scheduler.simulated import SimParams, SimulatedDevice


async def test_banned_call_is_refused_while_a_reservation_is_outstanding():
    budget = Budget([100], name="VRAM budget", guard_devices=[41])
    try:
        res = await budget.reserve(10)
        for call in ("cuCtxSynchronize", "cuMemPoolTrimTo", "cuMemGetInfo", "cuMemAlloc", "cuMemFree"):
            with pytest.raises(guard.DeviceGlobalCallError, match=call):
                guard.check(call, 41)
        guard.check("cuMemAllocFromPoolAsync", 41)  # stream-ordered calls are fine
        guard.check("cuMemPoolTrimTo", 42)  # another device is not affected
        res.release()
        guard.check("cuMemPoolTrimTo", 41)  # idle: allowed
    finally:
        budget.close()


async def test_simulated_trim_goes_through_the_guard():
    budget = Budget([100], name="VRAM budget", guard_devices=[43])
    device = SimulatedDevice(43, SimParams())
    try:
        res = await budget.reserve(1)
        with pytest.raises(guard.DeviceGlobalCallError):
            device.trim_pool()
        res.release()
        device.trim_pool()
        assert device.trims == 1
    finally:
        device.close()
        budget.close()


async def test_engine_trims_only_when_no_reservation_is_outstanding():
    sim = SimulationConfig(devices=2, vram="4GiB", working_set="1GiB", witness_rows=64, synth_ms=1, upload_ms=1,
                           stage_host_ms=0, gpu_ms=3, epilogue_ms=0, verify_ms=0)
    cfg = EngineConfig(backend="simulated", simulation=sim, compute_slots=2, idle_trim_s=0.02, synthesis_workers=2)
    async with Engine(cfg) as eng:
        key = await eng.load_key("k")
        for burst in range(3):  # idle gaps between bursts let the idle hook trim
            async with anyio.create_task_group() as tg:
                for _ in range(12):
                    tg.start_soon(eng.prove, key, {})
            await anyio.sleep(0.1)
        devices = [w.backend for w in eng.devices]
    assert sum(d.trims for d in devices) >= 2
    for d in devices:
        # every device-global call happened with zero proof reservations outstanding, and the
        # guard would have raised otherwise (it did not: the jobs all succeeded)
        assert d.global_calls and all(outstanding == 0 for _, outstanding in d.global_calls)
