"""Failure paths of the GPU pipeline free everything (issue 14 item 11).

A device fault is injected (`cuda_kernels.driver.inject_fault`: an allocation failure, a launch
error, a failed event, a failed copy or free) at each step of `stage` and `compute`; afterwards the
device pool holds exactly what it held before, every pinned buffer is back in its pool, and a
proof run next gives the same result as before the faults.  The same cases run on the CPU over a
fake driver (which also checks the order: nothing is handed back before a wait on the stream) and,
marked `gpu`, on a real device.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import FIXTURES
from cuda_kernels import driver
from engine.backends.select import cuda_device_count
from engine.errors import DeviceError
from engine.formats import read_wtns, read_zkey
from fake_cuda import FakeDriver, fake_driver

TINY = FIXTURES / "tiny"

# (call, nth) for the memory phase: every allocation, both events, the upload
STAGE_FAULTS = ([("cuMemAllocFromPoolAsync", i) for i in range(1, 17)]
                + [("cuEventCreate", 1), ("cuEventCreate", 2), ("cuEventRecord", 1), ("cuEventRecord", 2),
                   ("cuMemcpyHtoDAsync", 1)])
# for the compute phase (after a clean stage): waits, launches in each stage, timing events, the
# download, the frees, and the waits of the Pending
COMPUTE_FAULTS = ([("cuStreamWaitEvent", 1), ("cuStreamWaitEvent", 2)]
                  + [("cuLaunchKernel", i) for i in (1, 2, 4, 8, 16, 32, 64)]
                  + [("cuEventCreate", 1), ("cuEventCreate", 4), ("cuEventRecord", 3), ("cuMemcpyDtoHAsync", 1),
                     ("cuMemFreeAsync", 1), ("cuMemFreeAsync", 7), ("cuEventSynchronize", 1),
                     ("cuEventElapsedTime", 1)])
ERRORS = {"cuMemAllocFromPoolAsync": "CUDA_ERROR_OUT_OF_MEMORY"}


def _backend(fake: bool):
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    backend = GpuBackend(0)
    if fake:
        backend.ctx.prepare = lambda curve: b"fake cubin"
    return backend


def _used(backend) -> int:
    return backend.device.pool_used_bytes()


def _run(backend, key, witness):
    """stage -> compute -> wait; returns (phase that failed or None, result or None)."""
    try:
        staged = backend.stage(key, witness)
    except DeviceError:
        return "stage", None
    pending = backend.compute(staged)  # never raises: a failure comes out of wait()
    try:
        return None, pending.wait()
    except DeviceError:
        return "compute", None


def _core(result) -> tuple:
    return (result.pi_a0, result.pi_b1_0, result.pi_b2_0, result.pi_c0, result.pi_h)


def _check_every_fault(backend, curve: str, fake: FakeDriver | None, pinned: bool = True):
    """pinned=False: no pinned buffers, so every result is fetched after the done event (pipeline._fetch_late)."""
    d = TINY / curve
    key = backend.load_key(read_zkey(d / "tiny.zkey"))
    try:
        if pinned:
            backend.maintain()  # pin the key's buffers (off the proof path)
        witness = np.asarray(read_wtns(d / "tiny.wtns").values)
        failed, good = _run(backend, key, witness)
        assert failed is None
        used, free_pinned = _used(backend), backend.ctx.pinned.free_count()
        fired = set()
        for phase, faults in (("stage", STAGE_FAULTS), ("compute", COMPUTE_FAULTS)):
            for call, nth in faults:
                if phase == "compute":  # count from the start of compute: stage cleanly first
                    staged = backend.stage(key, witness)
                    mark = len(fake.calls) if fake else 0
                    with driver.inject_fault(call, nth, ERRORS.get(call, "CUDA_ERROR_LAUNCH_FAILED")):
                        pending = backend.compute(staged)
                        try:
                            result, failed = pending.wait(), None
                        except DeviceError:
                            result, failed = None, "compute"
                        went_off = not driver.fault_pending(call)
                else:
                    mark = len(fake.calls) if fake else 0
                    with driver.inject_fault(call, nth, ERRORS.get(call, "CUDA_ERROR_LAUNCH_FAILED")):
                        failed, result = _run(backend, key, witness)
                        went_off = not driver.fault_pending(call)
                where = f"{curve}: fault in {call} #{nth} ({phase})"
                if went_off:
                    fired.add((call, nth))
                    # a failed free is retried, a failed event wait falls back to the stream: both recover
                    assert failed is not None or call in ("cuMemFreeAsync", "cuEventSynchronize"), where
                else:
                    assert failed is None and _core(result) == _core(good), where
                if failed is None and result is not None:
                    assert _core(result) == _core(good), where
                assert _used(backend) == used, f"{where}: device memory leaked"
                assert backend.ctx.pinned.free_count() == free_pinned, f"{where}: a pinned buffer was not returned"
                if fake is not None and failed is not None:
                    tail = fake.calls[mark:]
                    last_free = max((i for i, c in enumerate(tail) if c == "cuMemFreeAsync"), default=-1)
                    assert any(c in ("cuEventSynchronize", "cuStreamSynchronize") for c in tail[last_free + 1:]), (
                        f"{where}: returned before waiting for its frees")
        # stage allocates the proof's arena (witness, a/b/c, sort and buckets carved from it) and its results
        # (and the range check's answer when a pinned buffer carries it): a fault at each fired
        assert {("cuMemAllocFromPoolAsync", i) for i in range(1, 3 if not pinned else 4)} <= fired
        assert {("cuLaunchKernel", 1), ("cuLaunchKernel", 32), ("cuEventSynchronize", 1)} <= fired
        failed, again = _run(backend, key, witness)
        assert failed is None and _core(again) == _core(good)  # the device still proves, and right
    finally:
        backend.unload_key(key)


@pytest.mark.parametrize("pinned", [True, False])
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_every_failure_path_frees_everything_on_a_fake_driver(curve, pinned):
    with fake_driver() as fake:
        backend = _backend(fake=True)
        events_before = len(fake.live_events)
        _check_every_fault(backend, curve, fake, pinned)
        assert len(fake.live_events) == events_before  # every proof's went, and the unloaded key's ready event
        backend.close()
        assert not fake.live_device and not fake.live_pinned


@pytest.mark.gpu
@pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_every_failure_path_frees_everything_on_the_gpu(curve):
    backend = _backend(fake=False)
    try:
        _check_every_fault(backend, curve, None)
    finally:
        backend.close()
