"""One device's OS threads: every driver call for the device runs here (design.md §4).

A `DeviceWorker` owns

* the device thread(s): closures sent with `call()` run there in order (the
  backend's `stage`, `compute`, `load_key`, `trim_pool`: every driver call);
* waiter threads: `wait(pending)` blocks one of them in `Pending.wait()`
  (cuEventSynchronize on the GPU) and stamps the moment the done event fired;
* the device's `DeviceLocks` (memory lock, compute slots) and its pool of the
  shared VRAM `Budget`.

Each thread calls the backend's optional `bind_thread()` once when it starts
(the GPU backend makes its context current there; a no-op elsewhere).  Results
come back to the event loop with `loop.call_soon_threadsafe`, never by a
Python callback inside the driver.  The pool is trimmed (optional backend
`trim_pool()`) only from `idle_trim_loop`, while the worker holds its whole
budget pool as a maintenance reservation, so no proof reservation can be
outstanding during the call (see scheduler/guard.py).
"""
from __future__ import annotations

import asyncio
import queue
import threading
import time
from typing import Any, Callable

import anyio

from scheduler.budget import Budget
from scheduler.locks import DeviceLocks
from scheduler.timeline import Stage, Timeline

_STOP = object()


class ThreadLane:
    """n OS threads taking closures from one FIFO; each result resolves an asyncio future."""

    def __init__(self, name: str, n: int, bind: Callable[[], None] | None = None):
        if n < 1:
            raise ValueError(f"{name}: need at least one thread")
        self.name = name
        self._bind = bind
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True) for i in range(n)]
        self.bound: list[str] = []  # names of threads that ran bind(), once each
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            for t in self._threads:
                t.start()

    @property
    def thread_names(self) -> list[str]:
        return [t.name for t in self._threads]

    def submit(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """Run fn(*args) on a lane thread; call from the event loop thread."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._queue.put((fn, args, loop, fut))
        return fut

    def stop(self, timeout: float | None = 10.0) -> None:
        """Finish queued closures, then end the threads (blocking: call from a thread or at exit)."""
        if not self._started:
            return
        for _ in self._threads:
            self._queue.put(_STOP)
        for t in self._threads:
            t.join(timeout)

    def _run(self) -> None:
        if self._bind is not None:
            try:
                self._bind()
            finally:
                self.bound.append(threading.current_thread().name)
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fn, args, loop, fut = item
            if fut.cancelled():
                continue  # nobody waits for it and it has not started: skip it
            try:
                result, error = fn(*args), None
            except BaseException as exc:  # handed to the awaiting task
                result, error = None, exc
            try:
                loop.call_soon_threadsafe(_resolve, fut, result, error)
            except RuntimeError:  # the loop is closed: nobody to tell
                pass


def _resolve(fut: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if fut.cancelled():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


class DeviceWorker:
    """The threads, locks and budget pool of one device (one GPU, the CPU, or a simulated device)."""

    def __init__(
        self,
        index: int,
        backend: Any,
        budget: Budget,
        *,
        pool: int | None = None,
        lock_mode: str = "split",
        compute_slots: int = 1,
        device_threads: int = 1,
        timeline: Timeline | None = None,
    ):
        self.index = index
        self.backend = backend
        self.budget = budget
        self.pool = index if pool is None else pool
        self.locks = DeviceLocks(lock_mode, compute_slots, name=f"device {index}")
        self.timeline = timeline or Timeline()
        bind = getattr(backend, "bind_thread", None)
        self.device_lane = ThreadLane(f"device{index}", device_threads, bind)
        self.waiter_lane = ThreadLane(f"device{index}-waiter", compute_slots + 1, bind)
        self.trims = 0

    def start(self) -> None:
        self.device_lane.start()
        self.waiter_lane.start()

    async def stop(self) -> None:
        """Let queued closures finish, then end the threads."""
        await anyio.to_thread.run_sync(self.device_lane.stop)
        await anyio.to_thread.run_sync(self.waiter_lane.stop)

    def reservations_outstanding(self) -> int:
        """Proof reservations on this device's budget pool (the guard reads the same number)."""
        return self.budget.outstanding(self.pool)

    def bound_threads(self) -> list[str]:
        return self.device_lane.bound + self.waiter_lane.bound

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) on the device thread.  Callers shield it: a started driver call cannot be undone."""
        return await self.device_lane.submit(fn, *args)

    async def wait(self, pending: Any) -> tuple[Any, int]:
        """pending.wait() on a waiter thread; returns (result, monotonic ns when it returned)."""

        def waiter() -> tuple[Any, int]:
            result = pending.wait()
            return result, time.monotonic_ns()

        return await self.waiter_lane.submit(waiter)

    async def trim(self) -> bool:
        """Hand pool memory back to the system while holding the whole budget pool; False if unsupported."""
        trim_pool = getattr(self.backend, "trim_pool", None)
        if trim_pool is None:
            return False
        reservation = await self.budget.reserve_pool(self.pool, label=f"device {self.index} trim")
        try:
            with anyio.CancelScope(shield=True):
                self.timeline.emit(Stage.TRIM_START, device=self.index)
                await self.call(trim_pool)
                self.trims += 1
                self.timeline.emit(Stage.TRIM_END, device=self.index)
        finally:
            reservation.release()
        return True

    async def idle_trim_loop(self, idle_s: float) -> None:
        """Trim once after each busy period, when the pool has been idle for a whole `idle_s`."""
        if getattr(self.backend, "trim_pool", None) is None:
            return
        trimmed_at = previous = self.budget.grants(self.pool)
        while True:
            await anyio.sleep(idle_s)
            grants = self.budget.grants(self.pool)
            idle = self.budget.held(self.pool) == 0 and self.budget.waiting() == 0
            if idle and grants == previous and grants != trimmed_at:
                await self.trim()
                trimmed_at = self.budget.grants(self.pool)
            previous = self.budget.grants(self.pool)
