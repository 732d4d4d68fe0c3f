"""Device faults a user meets on a real GPU, on the fake driver (tests/fake_cuda.py): an error code the
driver wrapper has no name for, a lost context (a sticky error: every later call fails), a failure while
pinning host memory, unloading a key or closing the backend, a device whose start fails half-way.  Each
is one DeviceError line naming the GPU; what was made before it is released; the engine keeps serving
where the device still works and says the context is lost where it does not."""
from __future__ import annotations

import threading

import anyio
import numpy as np
import pytest

from conftest import FIXTURES
from cuda_kernels import driver
from engine.errors import DeviceError, DeviceOutOfMemoryError
from engine.formats import read_wtns, read_zkey
from fake_cuda import fake_driver

TINY = FIXTURES / "tiny" / "bn128"


def _backend(**options):
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    backend = GpuBackend(0, key_cache_dir=False, **options)
    backend.ctx.prepare = lambda curve: b"fake cubin"
    return backend


def _witness():
    return np.asarray(read_wtns(TINY / "tiny.wtns").values)


def _live(fake) -> tuple:
    return dict(fake.live_device), set(fake.live_events), set(fake.live_streams), dict(fake.live_pinned)


@pytest.fixture
def accepted(monkeypatch):
    """The fake's kernels compute nothing: the device's pairing check is taken as passed (engine tests)."""
    from engine.backends.gpu import epilogue as gepi  # noqa: PLC0415

    real = gepi.decode_proof
    monkeypatch.setattr(gepi, "decode_proof", lambda curve, raw: (real(curve, raw)[0], True))


@pytest.mark.parametrize("names", ["raises", "none"])
def test_an_error_code_the_driver_has_no_name_for_is_one_line_naming_its_code(names):
    """A newer driver's code: the fake's cuGetErrorName raised ValueError out of _call (a traceback), and the
    real bindings answer (CUDA_ERROR_INVALID_VALUE, None), which read "failed: None (None)"."""
    with fake_driver() as fake:
        backend = _backend()
        try:
            if names == "none":
                fake.cuGetErrorName = lambda err: (fake.CUresult.CUDA_ERROR_INVALID_VALUE, None)
                fake.cuGetErrorString = lambda err: (fake.CUresult.CUDA_ERROR_INVALID_VALUE, None)
            with driver.inject_fault("cuStreamSynchronize", 1, 12345):
                with pytest.raises(DeviceError) as info:
                    backend.ctx.upload_stream.synchronize()
            text = str(info.value)
            assert "CUDA error 12345" in text and "None" not in text and "\n" not in text, text
            assert text.startswith("GPU 0 (Fake H200): cuStreamSynchronize failed"), text
        finally:
            backend.close()


def test_a_lost_context_is_named_for_the_failed_proof_and_every_later_one():
    """An illegal address surfacing at a later wait makes every later call fail: each proof said only
    "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS", naming neither the GPU nor that it is lost for
    good; and closing the backend raised, leaving the streams, events and pinned buffers unreleased."""
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(read_zkey(TINY / "tiny.zkey"))
        backend.maintain()
        backend.prove_core(key, _witness())
        fake.download_hook = lambda dst, nbytes: fake.lose_context()
        for _ in range(2):
            with pytest.raises(driver.DeviceContextLostError) as info:
                backend.prove_core(key, _witness())
            text = str(info.value)
            assert text.startswith("GPU 0 (Fake H200): ") and "CUDA_ERROR_ILLEGAL_ADDRESS" in text, text
            assert "context is lost" in text and "restart" in text and "\n" not in text, text
        backend.unload_key(key)  # the memory went with the context: nothing to report again
        backend.close()
        calls = fake.calls[-60:]
        assert "cuDevicePrimaryCtxRelease" in calls and "cuMemFreeHost" in calls


def test_a_pinned_buffer_that_cannot_be_pinned_leaves_the_key_loaded_and_proving(accepted):
    """Pinning a proof's buffer (optional: proofs go on through pageable memory) failed in maintenance, and
    the engine's key load raised "device out of memory in cuMemHostAlloc" for a key it had loaded: the key's
    device memory stayed allocated for good (22 allocations live after the engine closed)."""
    from engine.api import Engine  # noqa: PLC0415
    from engine.config import EngineConfig  # noqa: PLC0415

    async def main(fake):
        backend = _backend()
        async with Engine(EngineConfig(idle_trim_s=None), backends=[backend]) as eng:
            with driver.inject_fault("cuMemHostAlloc", 2, "CUDA_ERROR_OUT_OF_MEMORY"):
                key = await eng.load_key(TINY / "tiny.zkey")
            assert not backend.maintenance_due()  # not retried at every idle moment
            await eng.prove(key, TINY / "tiny.wtns")
            await eng.unload_key(key)
            key = await eng.load_key(TINY / "tiny.zkey")  # a later load pins again (not just the one of before)
            assert len(fake.live_pinned) > 1 and not backend.maintenance_due()
            await eng.prove(key, TINY / "tiny.wtns")

    with fake_driver() as fake:
        anyio.run(main, fake)
        assert not fake.live_device and not fake.live_events and not fake.live_pinned and not fake.live_streams


def test_a_host_tier_key_whose_bases_cannot_be_pinned_says_host_memory():
    """A host-tier key pins its bases: that failing said "device out of memory in cuMemHostAlloc"."""
    with fake_driver():
        backend = _backend(tier="host", host_chunk=2)
        try:
            with driver.inject_fault("cuMemHostAlloc", 1, "CUDA_ERROR_OUT_OF_MEMORY"):
                with pytest.raises(DeviceOutOfMemoryError) as info:
                    backend.load_key(read_zkey(TINY / "tiny.zkey"))
            text = str(info.value)
            assert "host memory" in text and "device out of memory" not in text and "GPU 0" in text, text
        finally:
            backend.close()


@pytest.mark.parametrize("call,nth", [("cuMemFreeAsync", 1), ("cuMemFreeAsync", 3), ("cuEventDestroy", 1)])
def test_an_unload_whose_free_fails_frees_everything_else(call, nth):
    """GpuKey.close stopped at the first failing free or destroy: the key's other buffers and events stayed
    (21 allocations for one failed cuMemFreeAsync), and the Engine, which has let go of the key, never
    frees them."""
    with fake_driver() as fake:
        backend = _backend()
        backend.ctx.module(read_zkey(TINY / "tiny.zkey").curve)
        device, events, _, _ = _live(fake)
        key = backend.load_key(read_zkey(TINY / "tiny.zkey"))
        backend.maintain()  # its proofs' pinned buffers
        with driver.inject_fault(call, nth, "CUDA_ERROR_INVALID_VALUE"):
            if call == "cuMemFreeAsync":  # retried once the stream is idle: nothing left, nothing to report
                backend.unload_key(key)
            else:
                with pytest.raises(DeviceError, match=f"GPU 0 .*{call} failed"):
                    backend.unload_key(key)
        assert fake.live_device == device and len(fake.live_events - events) <= (call == "cuEventDestroy")
        backend.maintain()
        assert not fake.live_pinned  # unwanted with the key, however its close ended
        backend.close()


@pytest.mark.parametrize("call", ["cuStreamSynchronize", "cuStreamDestroy", "cuMemFreeHost", "cuMemPoolDestroy"])
def test_a_close_whose_call_fails_releases_everything_else(call):
    """GpuContext.close stopped at the first failure: streams, events, every pinned buffer (33) and the
    primary context stayed."""
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(read_zkey(TINY / "tiny.zkey"))
        backend.maintain()
        backend.prove_core(key, _witness())
        backend.unload_key(key)
        mark = len(fake.calls)
        with driver.inject_fault(call, 1, "CUDA_ERROR_INVALID_VALUE"):
            with pytest.raises(DeviceError, match=f"GPU 0 .*{call} failed"):
                backend.close()
        assert len(fake.live_streams) <= (1 if call == "cuStreamDestroy" else 0)
        assert len(fake.live_pinned) <= (1 if call == "cuMemFreeHost" else 0) and not fake.live_events
        assert "cuDevicePrimaryCtxRelease" in fake.calls[mark:]


@pytest.mark.parametrize("call", ["cuDeviceGetName", "cuMemPoolCreate", "cuMemPoolSetAttribute", "cuStreamCreate"])
def test_a_device_whose_start_fails_releases_its_context(call):
    """Device() retained the primary context, then a later call failed: the retain was never released (each
    failed start kept the context alive); a failing first stream left the device's pool and context too."""
    with fake_driver() as fake:
        with driver.inject_fault(call, 1):
            with pytest.raises(DeviceError, match=call):
                _backend()
        assert fake.calls.count("cuDevicePrimaryCtxRelease") == fake.calls.count("cuDevicePrimaryCtxRetain") == 1
        assert not fake.live_streams


def test_an_engine_over_a_lost_context_says_so_and_closes(accepted):
    """Through the Engine: after the context was lost, each job failed on some call's obscure error, and the
    engine's close raised DeviceError (the key's unload) out of `async with`, leaving its device threads."""
    from engine.api import Engine  # noqa: PLC0415
    from engine.config import EngineConfig  # noqa: PLC0415

    errors = []

    async def main(fake):
        backend = _backend()
        async with Engine(EngineConfig(idle_trim_s=None), backends=[backend]) as eng:
            key = await eng.load_key(TINY / "tiny.zkey")
            await eng.prove(key, TINY / "tiny.wtns")
            fake.download_hook = lambda dst, nbytes: fake.lose_context()
            for _ in range(3):
                with anyio.fail_after(30):
                    try:
                        await eng.prove(key, TINY / "tiny.wtns")
                    except DeviceError as exc:
                        errors.append(exc)

    with fake_driver() as fake:
        anyio.run(main, fake)
    assert len(errors) == 3 and all("context is lost" in str(e) and "\n" not in str(e) for e in errors), errors
    assert not [t.name for t in threading.enumerate() if t.name.startswith("device0")]


def test_a_cache_write_that_runs_out_of_memory_is_a_warning_not_a_thread_traceback(tmp_path, monkeypatch):
    """The entry is written on a thread after the load (the host's CSR built there for a device-built one):
    a MemoryError (or any error but the OSError the cache itself handles) went to threading's excepthook,
    which printed a traceback under the user's proof."""
    from engine.formats import key_cache as kc  # noqa: PLC0415

    def store(self, *args, **kwargs):
        raise MemoryError

    hooked = []
    monkeypatch.setattr(kc.KeyCache, "store", store)
    monkeypatch.setattr(threading, "excepthook", hooked.append)
    with fake_driver() as fake:
        backend = _backend()
        backend.key_cache = kc.KeyCache(tmp_path)
        try:
            key = backend.load_key(read_zkey(TINY / "tiny.zkey"))
            backend.wait_cache_writes()
            assert not hooked, hooked
            assert key.cache_hit is False and backend.prove_core(key, _witness()).proof is not None
            backend.unload_key(key)
        finally:
            backend.close()
        assert not fake.live_device and kc.KeyCache(tmp_path).entries() == []


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_slot_whose_stream_cannot_be_made_fails_its_proof_and_frees_it(nth):
    """A compute slot's streams are made at its first proof (the slot's own, then its side lanes): when one
    could not be made (out of memory), pipeline.compute raised instead of handing the error to its Pending,
    and the scheduler, which discards only what it still holds, left the staged proof's device memory and
    pinned buffer allocated for good."""
    with fake_driver():
        backend = _backend()
        key = backend.load_key(read_zkey(TINY / "tiny.zkey"))
        backend.maintain()
        used, free = backend.device.pool_used_bytes(), backend.ctx.pinned.free_count()
        staged = backend.stage(key, _witness())
        with driver.inject_fault("cuStreamCreateWithPriority", nth, "CUDA_ERROR_OUT_OF_MEMORY"):
            pending = backend.compute(staged, slot=1)
        with pytest.raises(DeviceOutOfMemoryError, match="GPU 0 .*cuStreamCreateWithPriority"):
            pending.wait()
        assert backend.device.pool_used_bytes() == used and backend.ctx.pinned.free_count() == free
        assert backend.compute(backend.stage(key, _witness()), slot=1).wait().proof is not None
        backend.unload_key(key)
        backend.close()


@pytest.mark.parametrize("call,nth", [("cuMemAllocFromPoolAsync", 4), ("cuMemAllocFromPoolAsync", 5),
                                      ("cuLaunchKernel", 1), ("cuMemcpyDtoHAsync", 1)])
def test_a_device_batch_check_that_fails_frees_its_buffers(call, nth):
    """GpuBackend.verify_batch (one device multi-pairing) had no failure path: a failed allocation, launch or
    copy left every buffer it had made on the device (448-1888 bytes a call here, the proofs' size on a key)."""
    from types import SimpleNamespace  # noqa: PLC0415

    with fake_driver():
        backend = _backend()
        key = backend.load_key(read_zkey(TINY / "tiny.zkey"))
        g1, g2 = key.curve.g1_gen, key.curve.g2_gen
        items = [([1] * key.epilogue.n_public, SimpleNamespace(pi_a=g1, pi_b=g2, pi_c=g1))] * 2
        used = backend.device.pool_used_bytes()
        with driver.inject_fault(call, nth, "CUDA_ERROR_INVALID_VALUE"):
            with pytest.raises(DeviceError, match=f"GPU 0 .*{call}"):
                backend.verify_batch(key, items)
        assert backend.device.pool_used_bytes() == used
        assert backend.verify_batch(key, items) is False  # the fake's flag: and the device still answers
        backend.unload_key(key)
        backend.close()


def test_closing_for_the_exit_over_a_lost_context_leaves_the_proofs_error_standing():
    """The CLI closes its backend in a `finally` (close_for_exit) after a proof that failed on a lost context:
    the close's own wait raised again, replacing the proof's error with one about cuStreamSynchronize."""
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(read_zkey(TINY / "tiny.zkey"))
        backend.prove_core(key, _witness())
        fake.lose_context()
        raised = []
        with pytest.raises(driver.DeviceContextLostError) as info:
            try:
                backend.prove_core(key, _witness())
            except DeviceError as exc:
                raised.append(exc)
                raise
            finally:
                backend.close_for_exit()
        assert raised == [info.value]  # the proof's own error, not the close's


def _staged_backend(monkeypatch, tmp_path):
    """A backend whose key uploads go through staging buffers (pinned ones first), and the tiny key's copy."""
    import shutil  # noqa: PLC0415

    from engine.backends.gpu import staging  # noqa: PLC0415

    monkeypatch.setattr(staging, "DIRECT_BYTES", 0)
    monkeypatch.setattr(staging, "BUFFERS", 2)
    monkeypatch.setattr(staging, "MAX_READERS", 2)
    path = tmp_path / "tiny.zkey"
    shutil.copyfile(TINY / "tiny.zkey", path)
    backend = _backend()
    z = read_zkey(path)
    backend.prepare_key(z)
    backend.maintain()
    backend.ctx.module(z.curve)
    return backend, z


@pytest.mark.parametrize("call,nth", [("cuEventCreate", 1), ("cuEventCreate", 3), ("cuEventDestroy", 1)])
def test_a_staged_upload_whose_event_fails_gives_its_buffers_back(monkeypatch, tmp_path, call, nth):
    """staging.upload made its events before its try: a failing cuEventCreate kept the pinned staging buffers
    it had taken out of the pool for good (every later load then staged through pageable memory) and leaked
    the events made before; a failing destroy at its end leaked the other events and failed a whole load."""
    with fake_driver() as fake:
        backend, z = _staged_backend(monkeypatch, tmp_path)
        events, free = set(fake.live_events), backend.ctx.pinned.free_count()
        with driver.inject_fault(call, nth, "CUDA_ERROR_INVALID_VALUE"):
            try:
                backend.unload_key(backend.load_key(z))
            except DeviceError as exc:
                assert call == "cuEventCreate" and "GPU 0" in str(exc), exc
        assert backend.ctx.pinned.free_count() == free == 2
        assert len(fake.live_events - events) <= (call == "cuEventDestroy")
        backend.unload_key(backend.load_key(z))
        backend.close()


@pytest.mark.parametrize("fail", ["eio", "short"])
def test_a_key_whose_file_cannot_be_read_while_uploading_is_one_line_naming_it(monkeypatch, tmp_path, fail):
    """The zkey's sections (or a cache entry's arrays) are read with preadv while the copies run: a read error
    (EIO) or a file cut short meanwhile raised a bare OSError, which the CLI shows as a traceback."""
    import errno  # noqa: PLC0415
    import os  # noqa: PLC0415

    from engine.errors import InputFileError  # noqa: PLC0415

    def preadv(fd, buffers, offset):
        if fail == "eio":
            raise OSError(errno.EIO, "Input/output error")
        return 0

    with fake_driver() as fake:
        backend, z = _staged_backend(monkeypatch, tmp_path)
        device = dict(fake.live_device)
        monkeypatch.setattr(os, "preadv", preadv)
        with pytest.raises(InputFileError) as info:
            backend.load_key(z)
        monkeypatch.undo()
        text = str(info.value)
        assert text.startswith(f"{tmp_path / 'tiny.zkey'}: ") and "\n" not in text, text
        assert ("Input/output error" if fail == "eio" else "short") in text, text
        assert fake.live_device == device and backend.ctx.pinned.free_count() == 2
        backend.close()


@pytest.mark.parametrize("error", ["CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_OUT_OF_MEMORY"])
def test_an_idle_trim_that_fails_does_not_stop_the_engine(accepted, error):
    """The idle loop's pool trim (handing cached memory back, an optimisation) raised out of GpuBackend.trim_pool:
    the engine stopped on an internal error, every later job was refused and its close raised the trim's
    DeviceError."""
    from engine.api import Engine  # noqa: PLC0415
    from engine.config import EngineConfig  # noqa: PLC0415

    async def main():
        backend = _backend()
        async with Engine(EngineConfig(idle_trim_s=0.02), backends=[backend]) as eng:
            key = await eng.load_key(TINY / "tiny.zkey")
            with driver.inject_fault("cuMemPoolTrimTo", 1, error):
                await eng.prove(key, TINY / "tiny.wtns")
                with anyio.fail_after(20):
                    while driver.fault_pending("cuMemPoolTrimTo"):
                        await anyio.sleep(0.01)
            await eng.prove(key, TINY / "tiny.wtns")

    with fake_driver() as fake:
        anyio.run(main)
        assert not fake.live_device and not fake.live_pinned


@pytest.mark.parametrize("where", ["not-a-directory", "disk-full"])
def test_a_kernel_cache_that_cannot_be_written_still_gives_the_kernels(monkeypatch, tmp_path, where):
    """The NVRTC build is written to the kernel cache ($GROTH16_KERNEL_CACHE, ~/.cache): a cache directory that
    cannot be made (a read-only home, a file in its place) or a full disk raised a bare OSError out of the key
    load (a traceback from the CLI) after the compile had succeeded."""
    import errno  # noqa: PLC0415

    from cuda_kernels import build  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu import runtime  # noqa: PLC0415

    compiles = []
    monkeypatch.setattr(build, "_nvrtc_compile", lambda *args: compiles.append(args) or (b"fake cubin", ""))
    monkeypatch.setattr(build, "nvrtc_version", lambda: (12, 9))
    monkeypatch.setattr(build, "_nvrtc_library_path", lambda: None)
    if where == "not-a-directory":
        (tmp_path / "file").write_bytes(b"")
        monkeypatch.setenv("GROTH16_KERNEL_CACHE", str(tmp_path / "file" / "kernels"))
    else:
        monkeypatch.setenv("GROTH16_KERNEL_CACHE", str(tmp_path / "kernels"))

        def full(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(build.os, "replace", full)  # the cache entry's rename (write_cache_file)
    assert runtime.curve_cubin(curve_by_name("bn128"), "sm_90") == b"fake cubin"
    assert 1 <= len(compiles) <= (1 if where == "not-a-directory" else 2)
