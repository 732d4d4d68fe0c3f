"""Failure paths of GpuBackend.compute_batch free everything, on the fake driver (tests/fake_cuda.py).

A fault in the batch's own allocations makes compute_batch raise with every proof still staged
(the scheduler then discards them); a fault after that (a launch, a copy, an event, a free) comes
out of every proof's Pending, after the frees.  Either way the device pool and the pinned pool end
where they started, and a clean batch runs next.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import FIXTURES
from cuda_kernels import driver
from engine.errors import DeviceError
from engine.formats import read_wtns, read_zkey
from fake_cuda import fake_driver

TINY = FIXTURES / "tiny"
K = 3
FAULTS = ([("cuMemAllocFromPoolAsync", i) for i in (1, 2, 3, 5, 9)]
          + [("cuStreamWaitEvent", 1), ("cuStreamWaitEvent", 3), ("cuLaunchKernel", 1), ("cuLaunchKernel", 20),
             ("cuMemcpyDtoDAsync", 1), ("cuMemcpyDtoHAsync", 2), ("cuMemFreeAsync", 3), ("cuEventSynchronize", 1)])


def _loaded(curve: str):
    """On the fake driver: a backend, the tiny key loaded with its pinned buffers, and its witness."""
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    backend = GpuBackend(0)
    backend.ctx.prepare = lambda c: b"fake cubin"
    key = backend.load_key(read_zkey(TINY / curve / "tiny.zkey"))
    backend.maintain()
    return backend, key, np.asarray(read_wtns(TINY / curve / "tiny.wtns").values)


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_every_batch_failure_frees_everything_on_a_fake_driver(curve):
    with fake_driver() as fake:
        backend, key, witness = _loaded(curve)
        clean = [p.wait() for p in backend.compute_batch([backend.stage(key, witness) for _ in range(K)])]
        assert len(clean) == K and all(c.timings["gpu_batch"] == K for c in clean)
        used, free_pinned = backend.device.pool_used_bytes(), backend.ctx.pinned.free_count()
        fired = set()
        for call, nth in FAULTS:
            where = f"{curve}: fault in {call} #{nth}"
            staged = [backend.stage(key, witness) for _ in range(K)]
            with driver.inject_fault(call, nth, "CUDA_ERROR_LAUNCH_FAILED"):
                try:
                    pendings = backend.compute_batch(staged)
                except DeviceError:  # refused before touching the proofs: discard them, as the scheduler does
                    for s in staged:
                        backend.discard(s).wait()
                    outcome = "refused"
                else:
                    outcome = "ok"
                    for p in pendings:
                        try:
                            p.wait()
                        except DeviceError:
                            outcome = "failed"
                if not driver.fault_pending(call):
                    fired.add((call, nth))
            if (call, nth) in fired and call not in ("cuMemFreeAsync", "cuEventSynchronize"):
                assert outcome != "ok", where
            assert backend.device.pool_used_bytes() == used, f"{where}: device memory leaked"
            assert backend.ctx.pinned.free_count() == free_pinned, f"{where}: a pinned buffer was not returned"
        assert ("cuMemAllocFromPoolAsync", 1) in fired and ("cuLaunchKernel", 20) in fired
        again = [p.wait() for p in backend.compute_batch([backend.stage(key, witness) for _ in range(K)])]
        assert len(again) == K
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device and not fake.live_pinned


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_full_batch_stages_beside_a_computing_one_in_pinned_memory(curve):
    """A batch computing holds its proofs' pinned buffers until its done event; the next full batch
    staged meanwhile gets pinned buffers too (with one batch's worth its proofs went through
    pageable memory, their results fetched one by one after the done event)."""
    with fake_driver() as fake:
        backend, key, witness = _loaded(curve)
        k = backend.max_batch(key)
        first = [backend.stage(key, witness) for _ in range(k)]
        running = backend.compute_batch(first)
        second = [backend.stage(key, witness) for _ in range(k)]
        assert all(s.state.host is not None for s in first + second)
        assert backend.ctx.pinned.misses == 0
        assert len([p.wait() for p in running + backend.compute_batch(second)]) == 2 * k
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device and not fake.live_pinned
