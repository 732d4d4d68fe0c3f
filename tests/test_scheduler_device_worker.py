"""Device workers: every driver call on the device's own threads, each bound once (design.md §4)."""
import threading
import time

import pytest

from scheduler.budget import Budget
from scheduler.device_worker import DeviceWorker


class RecordingBackend:
    name = "recording"

    def __init__(self):
        self.bound = []
        self.lock = threading.Lock()

    def bind_thread(self):
        with self.lock:
            self.bound.append(threading.current_thread().name)

    def compute(self, staged):
        return staged


class SlowPending:
    def __init__(self, seconds):
        self.seconds = seconds

    def wait(self):
        time.sleep(self.seconds)
        return threading.current_thread().name


async def test_calls_run_on_the_device_thread_and_every_thread_binds_once():
    backend = RecordingBackend()
    budget = Budget([10], name="VRAM budget")
    worker = DeviceWorker(0, backend, budget, compute_slots=2, device_threads=1)
    worker.start()
    try:
        names = {await worker.call(lambda: threading.current_thread().name) for _ in range(20)}
        assert names == {"device0-0"}
        waited = [await worker.wait(SlowPending(0.001)) for _ in range(6)]
        assert all(name.startswith("device0-waiter-") for name, _ in waited)
    finally:
        await worker.stop()
    assert sorted(backend.bound) == sorted(worker.device_lane.thread_names + worker.waiter_lane.thread_names)


async def test_device_call_errors_reach_the_caller():
    worker = DeviceWorker(0, RecordingBackend(), Budget([1], name="b"))
    worker.start()
    try:
        with pytest.raises(ZeroDivisionError):
            await worker.call(lambda: 1 / 0)
        assert await worker.call(lambda: 5) == 5  # the thread lives on
    finally:
        await worker.stop()


async def test_wait_stamps_when_the_done_event_fired_not_when_the_loop_noticed():
    worker = DeviceWorker(0, RecordingBackend(), Budget([1], name="b"))
    worker.start()
    try:
        before = time.monotonic_ns()
        _, t_done = await worker.wait(SlowPending(0.02))
        after = time.monotonic_ns()
        assert before + 20_000_000 <= t_done <= after
    finally:
        await worker.stop()
