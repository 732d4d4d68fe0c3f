"""Edges of a key load on the GPU backend over tests/fake_cuda.py: a load failing at any recorded event
leaves no event behind (the fake counts them), and the next load works."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from cuda_kernels import driver
from engine.errors import DeviceError
from engine.formats import read_zkey
from fake_cuda import fake_driver


def _backend(tier: str):
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    backend = GpuBackend(0, key_cache_dir=False, tier=tier, host_chunk=2 if tier == "host" else None)
    backend.ctx.prepare = lambda curve: b"fake cubin"
    return backend


@pytest.mark.parametrize("tier", ["resident", "host"])
def test_a_load_whose_event_record_fails_leaves_no_event(tier):
    """key.py made its events as `Event().record(stream)`: when the record failed, the event made just before
    was in no list, so no clean-up destroyed it (the table events and `ready`)."""
    with fake_driver() as fake:
        backend = _backend(tier)
        z = read_zkey(FIXTURES / "tiny" / "bn128" / "tiny.zkey")
        backend.ctx.module(z.curve)
        fired = 0
        try:
            for nth in range(1, 40):
                events, device = set(fake.live_events), dict(fake.live_device)
                with driver.inject_fault("cuEventRecord", nth):
                    try:
                        key = backend.load_key(z)
                    except DeviceError:
                        key = None
                    if driver.fault_pending("cuEventRecord"):  # past the load's last record: it loaded
                        backend.unload_key(key)
                        break
                fired += 1
                if key is not None:
                    backend.unload_key(key)
                assert set(fake.live_events) == events, f"cuEventRecord #{nth}: an event leaked"
                assert fake.live_device == device, f"cuEventRecord #{nth}: device memory leaked"
            assert fired >= 1
            backend.unload_key(backend.load_key(z))  # the next load works
        finally:
            backend.close()
        assert not fake.live_device and not fake.live_events and not fake.live_streams


@pytest.mark.parametrize("call", ["cuStreamDestroy", "cuEventDestroy"])
def test_a_load_whose_clean_up_call_fails_leaks_that_handle_only(call):
    """_load's clean-up destroyed the side stream first and the table events in a plain loop: a failing
    destroy skipped the rest, so the zkey's descriptor and every later event leaked with it (5 events and
    an open file for one failed cuStreamDestroy; 4 more events for one failed cuEventDestroy)."""
    import os  # noqa: PLC0415

    with fake_driver() as fake:
        backend = _backend("resident")
        z = read_zkey(FIXTURES / "tiny" / "bn128" / "tiny.zkey")
        backend.ctx.module(z.curve)
        try:
            events, streams, fds = set(fake.live_events), set(fake.live_streams), len(os.listdir("/proc/self/fd"))
            with driver.inject_fault(call, 1):
                if call == "cuStreamDestroy":
                    with pytest.raises(DeviceError):
                        backend.load_key(z)
                else:  # a table event's destroy: the key is whole (runtime.destroy_events: one handle leaks)
                    backend.unload_key(backend.load_key(z))
            assert len(os.listdir("/proc/self/fd")) == fds, "the zkey's descriptor leaked"
            assert len(fake.live_events - events) + len(fake.live_streams - streams) == 1  # the one that failed
            backend.unload_key(backend.load_key(z))
        finally:
            backend.close()
