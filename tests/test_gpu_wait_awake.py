"""The waiter of a lone proof (engine/backends/gpu/waiting.py), on the fake driver: it blocks until the final
phase starts, then polls the done event for at most GROTH16_WAIT_SPIN_MS before blocking as before; beside
other proofs, or with the setting 0, every waiter blocks."""
from __future__ import annotations

import time

import numpy as np
import pytest

from conftest import FIXTURES
from engine.errors import EngineError
from engine.formats import read_wtns, read_zkey
from fake_cuda import fake_driver

TINY = FIXTURES / "tiny"


def _backend():
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    backend = GpuBackend(0)
    backend.ctx.prepare = lambda curve: b"fake cubin"
    return backend


def _tiny(curve="bn128"):
    return read_zkey(TINY / curve / "tiny.zkey"), np.asarray(read_wtns(TINY / curve / "tiny.wtns").values)


def _wait_calls(fake, pending) -> tuple[list[str], object]:
    n = len(fake.calls)
    core = pending.wait()
    return [c for c in fake.calls[n:] if c.startswith("cuEvent")], core


@pytest.mark.parametrize("spin", ["", "0"])
def test_a_lone_proof_polls_its_done_event_once_the_final_phase_runs(spin, monkeypatch):
    monkeypatch.setenv("GROTH16_WAIT_SPIN_MS", spin)
    zkey, witness = _tiny()
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        pending = backend.compute(backend.stage(key, witness))
        assert backend.flight.lone()
        calls, core = _wait_calls(fake, pending)
        assert core.proof is not None
        if spin == "0":  # the done fence's blocking wait first, as before; no poll
            assert calls[0] == "cuEventSynchronize" and "cuEventQuery" not in calls
        else:  # before_final (blocking), a poll of the done event that finds it fired, then the fence's wait
            assert calls[:3] == ["cuEventSynchronize", "cuEventQuery", "cuEventSynchronize"]
            assert calls.count("cuEventQuery") == 1
        assert not backend.flight.lone()
        backend.unload_key(key)
        backend.close()


def test_waiters_block_while_another_proof_is_in_flight(monkeypatch):
    monkeypatch.delenv("GROTH16_WAIT_SPIN_MS", raising=False)
    zkey, witness = _tiny()
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        first = backend.compute(backend.stage(key, witness))
        second = backend.compute(backend.stage(key, witness))
        assert not backend.flight.lone()
        calls, _ = _wait_calls(fake, first)
        assert "cuEventQuery" not in calls  # two in flight: it blocks
        assert backend.flight.lone()
        calls, _ = _wait_calls(fake, second)
        assert "cuEventQuery" in calls  # the last one left polls
        pendings = backend.compute_batch([backend.stage(key, witness) for _ in range(2)])
        assert len(pendings) == 2 and not backend.flight.lone()
        for p in pendings:
            p.wait()
        pending = backend.compute(backend.stage(key, witness))
        assert backend.flight.lone()  # every batched wait left the count
        pending.wait()
        backend.unload_key(key)
        backend.close()


def test_the_polling_ends_at_its_budget_and_the_wait_blocks(monkeypatch):
    monkeypatch.setenv("GROTH16_WAIT_SPIN_MS", "30")
    zkey, witness = _tiny()
    with fake_driver() as fake:
        backend = _backend()
        key = backend.load_key(zkey)
        pending = backend.compute(backend.stage(key, witness))
        fake.events_pending = True  # every query: not ready (the fake's synchronize returns at once)
        t = time.perf_counter()
        calls, core = _wait_calls(fake, pending)
        spent = time.perf_counter() - t
        fake.events_pending = False
        assert 0.03 <= spent < 2.0 and calls.count("cuEventQuery") > 1
        assert calls[-1] != "cuEventQuery" and "cuEventSynchronize" in calls[calls.index("cuEventQuery"):]
        assert core.proof is not None
        backend.unload_key(key)
        backend.close()


@pytest.mark.parametrize("bad", ["abc", "-1", "nan"])
def test_a_bad_polling_setting_is_one_clear_error_at_start(bad, monkeypatch):
    monkeypatch.setenv("GROTH16_WAIT_SPIN_MS", bad)
    with fake_driver():
        with pytest.raises(EngineError, match="GROTH16_WAIT_SPIN_MS"):
            _backend()


def test_a_failed_wait_leaves_the_flight_too():
    from engine.backends.base import Pending  # noqa: PLC0415
    from engine.backends.gpu.waiting import Flight  # noqa: PLC0415

    flight = Flight()

    def boom():
        raise RuntimeError("device fault")

    (p,) = flight.track([Pending(boom)])
    assert flight.lone()
    with pytest.raises(RuntimeError):
        p.wait()
    assert not flight.lone()
    with pytest.raises(RuntimeError):  # a second wait raises again and counts nothing
        p.wait()
    (q,) = flight.track([Pending(lambda: 1)])
    assert flight.lone() and q.wait() == 1 and not flight.lone()
