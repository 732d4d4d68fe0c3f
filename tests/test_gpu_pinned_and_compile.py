"""The GPU backend's host side off the proof path, on a fake driver (issue 14 items 10 and 12):
pinned buffers are made and freed only in maintenance (never by a proof), counted in the host
budget, and given back when no key wants them; NVRTC compiles run off the device thread."""
from __future__ import annotations

import threading

import anyio
import numpy as np
import pytest

from conftest import FIXTURES
from engine.backends.gpu import GpuBackend
from engine.backends.gpu.pipeline import pinned_bytes
from engine.backends.gpu.runtime import pinned_size_class
from engine.formats import read_wtns, read_zkey
from fake_cuda import fake_driver
from scheduler.budget import Budget
from scheduler.device_worker import DeviceWorker

TINY = FIXTURES / "tiny" / "bn128"


@pytest.fixture
def fake():
    with fake_driver() as fake:
        yield fake


def _backend(prepare=None) -> GpuBackend:
    backend = GpuBackend(0)
    backend.ctx.prepare = prepare or (lambda curve: b"fake cubin")
    return backend


async def _worker(backend):
    vram = Budget([1 << 40], name="VRAM budget", guard_devices=[0])
    host = Budget([1 << 30], name="host budget")
    worker = DeviceWorker(0, backend, vram, host_budget=host)
    worker.start()
    return worker, vram, host


def _observed(core) -> tuple:
    """What a caller reads of a CoreResult's proof and sums (not its private fields: a resident proof's own r
    among them; nor its timings, whose stages name the path it took: the last proof, alone, takes the products
    beside)."""
    return (str(core.proof), core.verified, core.pi_a0, core.pi_b1_0, core.pi_b2_0, core.pi_c0, core.pi_h)


async def test_pinned_buffers_are_made_in_maintenance_counted_and_given_back(fake):
    backend = _backend()
    worker, vram, host = await _worker(backend)
    try:
        zkey = read_zkey(TINY / "tiny.zkey")
        witness = np.asarray(read_wtns(TINY / "tiny.wtns").values)
        key = await worker.load_key(zkey)  # idle device: the key's buffers are pinned at once
        size = pinned_size_class(pinned_bytes(key))
        # a small key: one buffer for each proof of two full batches (one computing, one staging) and one
        n = backend.pinned_count(key, pinned_bytes(key))
        assert n == 2 * backend.max_batch(key) + 1 > backend.pinned_per_key
        assert fake.pinned_allocs == n
        assert host.capacity() == (1 << 30) - n * size  # counted in the host budget

        # n + 1 proofs in flight at once (a reservation outstanding: pinning would be refused)
        res = await vram.reserve(1)
        staged = [await worker.call(backend.stage, key, witness) for _ in range(n + 1)]
        assert fake.pinned_allocs == n  # the last found no free buffer and did not pin one
        assert backend.ctx.pinned.misses == 1
        results = [await worker.wait(await worker.call(backend.compute, s)) for s in staged]
        assert len({_observed(r[0]) for r in results}) == 1  # pageable path: same
        assert await worker.maintain(wait=False) is False  # a reservation is outstanding: not now
        res.release()
        assert await worker.maintain(wait=False) is True  # idle: the miss is made good
        assert fake.pinned_allocs == n + 1 and host.capacity() == (1 << 30) - (n + 1) * size

        await worker.call(backend.unload_key, key)
        assert await worker.trim()  # idle trim: nothing wants the buffers any more
        assert not fake.live_pinned and host.capacity() == 1 << 30
    finally:
        await worker.call(backend.close)
        await worker.stop()
        vram.close()


async def test_the_nvrtc_compile_runs_off_the_device_thread(fake):
    started, release = threading.Event(), threading.Event()
    seen = {}

    def slow_prepare(curve):  # (the real prepare caches: the device thread's module() call is instant)
        seen.setdefault("thread", threading.current_thread().name)
        started.set()
        release.wait(10)
        return b"fake cubin"

    backend = _backend(slow_prepare)
    worker, vram, _host = await _worker(backend)
    try:
        async with anyio.create_task_group() as tg:
            loaded = {}

            async def load():
                loaded["key"] = await worker.load_key(read_zkey(TINY / "tiny.zkey"))

            tg.start_soon(load)
            await anyio.to_thread.run_sync(started.wait, 10)
            # the compile is running: the device thread still serves other work
            with anyio.fail_after(5):
                assert await worker.call(lambda: threading.current_thread().name) == "device0-0"
            assert "key" not in loaded
            release.set()
        assert seen["thread"] not in worker.device_lane.thread_names
        await worker.call(backend.unload_key, loaded["key"])
    finally:
        release.set()
        await worker.call(backend.close)
        await worker.stop()
        vram.close()


def test_a_compile_is_done_once_per_curve_however_many_threads_ask(fake, monkeypatch):
    from cuda_kernels import build  # noqa: PLC0415
    from engine.algebra.curves import BN254  # noqa: PLC0415

    calls = []

    def compile_cubin(params, arch):
        calls.append(arch)
        return b"cubin", ""

    monkeypatch.setattr(build, "compile_cubin", compile_cubin)
    backend = GpuBackend(0)
    threads = [threading.Thread(target=backend.ctx.prepare, args=(BN254,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["sm_90"] and backend.ctx.prepare(BN254) == b"cubin"
    backend.close()


async def test_a_large_proofs_key_pins_only_pinned_per_key_buffers(fake):
    """Above SMALL_PROOF_PINNED_BYTES a proof's pinned buffer is large: a few, not a batch's worth."""
    from engine.backends.gpu.backend import SMALL_PROOF_PINNED_BYTES

    backend = _backend()
    worker, vram, host = await _worker(backend)
    try:
        key = await worker.load_key(read_zkey(TINY / "tiny.zkey"))
        assert backend.pinned_count(key, SMALL_PROOF_PINNED_BYTES + 1) == backend.pinned_per_key
        assert backend.pinned_count(key, SMALL_PROOF_PINNED_BYTES) == 2 * backend.max_batch(key) + 1
        await worker.call(backend.unload_key, key)
    finally:
        await worker.call(backend.close)
        await worker.stop()
        vram.close()


def test_the_pool_never_makes_an_allocation_wait_on_another_streams_free(fake):
    """With the pool's default, an allocation on the upload stream could reuse memory a compute stream
    had freed but not yet run the free of, by waiting for that stream: each proof's memory phase then
    waited for the previous proof's kernels (perf/RESULTS.md, throughput at 2^14)."""
    backend = _backend()
    assert fake.pool_attributes["CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES"] == 0
    assert fake.pool_attributes["CU_MEMPOOL_ATTR_RELEASE_THRESHOLD"] == 0xFFFFFFFFFFFFFFFF
    backend.close()


def test_an_engine_key_load_pins_its_proofs_buffers_without_an_idle_loop(fake):
    """Engine.load_key pins the key's proof buffers once its own reservation is back: the worker's try
    inside the load found the device busy with that reservation, and with no idle loop (idle_trim_s
    None, as perf/sweep.py runs) every proof then staged through pageable memory (t13tput)."""
    from engine.api import Engine  # noqa: PLC0415
    from engine.config import EngineConfig  # noqa: PLC0415

    backend = _backend()

    async def main():
        async with Engine(EngineConfig(idle_trim_s=None), backends=[backend]) as eng:
            key = await eng.load_key(TINY / "tiny.zkey")
            resident = key._record.resident[0]
            n = backend.pinned_count(resident, pinned_bytes(resident))
            assert fake.pinned_allocs == n and backend.ctx.pinned.free_count() == n
            staged = backend.stage(resident, np.asarray(read_wtns(TINY / "tiny.wtns").values))
            assert backend.ctx.pinned.misses == 0 and staged.state.host is not None
            backend.discard(staged).wait()

    anyio.run(main)


def test_an_engine_key_unload_unpins_its_proofs_buffers_and_gives_the_host_budget_back(fake):
    """The proofs' pinned buffers a load pinned (and the host budget counts) are unpinned by the unload,
    without an idle loop: the host budget whole again, nothing pinned (they stayed before, until an idle
    maintenance that idle_trim_s=None never runs)."""
    from engine.api import Engine  # noqa: PLC0415
    from engine.config import EngineConfig  # noqa: PLC0415

    backend = _backend()
    host_budget = 1 << 30

    async def main():
        async with Engine(EngineConfig(idle_trim_s=None, host_budget=host_budget), backends=[backend]) as eng:
            key = await eng.load_key(TINY / "tiny.zkey")
            pinned = backend.host_pinned_bytes()
            assert pinned > 0 and eng.host.capacity(0) == host_budget - key.key_host_bytes - pinned
            await eng.unload_key(key)
            assert backend.host_pinned_bytes() == 0 and eng.host.capacity(0) == host_budget

    anyio.run(main)
