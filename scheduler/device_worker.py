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
Python callback inside the driver.

Device-global work (optional backend `trim_pool()`, and `maintain()`, which
pins or unpins host buffers) runs only while the worker holds its whole budget
pool as a maintenance reservation, so none of its owner's proof reservations
is outstanding during the call; the driver wrapper checks the same thing
(cuda_kernels/device_global.py), against this worker's budget as owner
(`backend.set_guard_owner(budget)`).  A key load's host-side work (the
backend's optional `prepare_key`: NVRTC compiles) runs on a worker thread of
its own, so it never stalls the proofs queued on the device thread.  Pinned
bytes the backend holds (`host_pinned_bytes()`) are taken out of the host
budget.
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
        host_budget: Budget | None = None,
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
        self.maintenances = 0
        self.host_budget = host_budget
        self._host_taken = 0  # pinned bytes taken out of the host budget
        set_owner = getattr(backend, "set_guard_owner", None)
        if set_owner is not None:
            set_owner(budget)

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

    async def wait_all(self, pendings: list[Any]) -> list[tuple[Any, BaseException | None, int]]:
        """Every pending.wait() in turn on one waiter thread: (result, None, ns) or (None, error, ns)
        each, so one proof's error stays its own.  One hand-off for a batch instead of one a proof
        (each a wake-up of a waiter and of the event loop, under the GIL the other threads want)."""

        def waiter() -> list[tuple[Any, BaseException | None, int]]:
            out: list[tuple[Any, BaseException | None, int]] = []
            for pending in pendings:
                try:
                    out.append((pending.wait(), None, time.monotonic_ns()))
                except Exception as exc:  # noqa: BLE001 - handed to that proof's partition
                    out.append((None, exc, time.monotonic_ns()))
            return out

        return await self.waiter_lane.submit(waiter)

    async def load_key(self, key: Any, *args: Any) -> Any:
        """The backend's `load_key(key, *args)` on the device thread, its `prepare_key` (compiles) off it first."""
        prepare = getattr(self.backend, "prepare_key", None)
        if prepare is not None:
            await anyio.to_thread.run_sync(prepare, key)
        resident = await self.call(self.backend.load_key, key, *args)
        await self.maintain(wait=False)  # pin the new key's buffers now if the device is idle
        return resident

    def _maintenance_due(self) -> bool:
        due = getattr(self.backend, "maintenance_due", None)
        return due is not None and bool(due())

    async def maintain(self, *, wait: bool = True) -> bool:
        """Run the backend's `maintain()` (pinning, unpinning) holding the whole budget pool.

        With wait=False only when the pool is idle right now (nobody holds or waits for it)."""
        if not self._maintenance_due():
            return False
        if not wait and (self.budget.held(self.pool) or self.budget.waiting()):
            return False
        reservation = await self.budget.reserve_pool(self.pool, label=f"device {self.index} maintenance")
        try:
            with anyio.CancelScope(shield=True):
                await self.call(self.backend.maintain)
                self.maintenances += 1
                self._sync_host_budget()
        finally:
            reservation.release()
        return True

    def _sync_host_budget(self) -> None:
        """Take the backend's pinned bytes out of the host budget (or give them back)."""
        measure = getattr(self.backend, "host_pinned_bytes", None)
        if measure is None or self.host_budget is None:
            return
        now = int(measure())
        if now != self._host_taken:
            self.host_budget.adjust_capacity(0, self._host_taken - now)
            self._host_taken = now

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
                self._sync_host_budget()
                self.timeline.emit(Stage.TRIM_END, device=self.index)
        finally:
            reservation.release()
        return True

    async def idle_trim_loop(self, idle_s: float) -> None:
        """Every `idle_s`: maintenance when the backend asks for it (pinned buffers a proof missed);
        a trim once after each busy period, when the pool has been idle for a whole `idle_s`."""
        can_trim = getattr(self.backend, "trim_pool", None) is not None
        if not can_trim and getattr(self.backend, "maintenance_due", None) is None:
            return
        trimmed_at = previous = self.budget.grants(self.pool)
        while True:
            await anyio.sleep(idle_s)
            if await self.maintain(wait=True):
                trimmed_at = previous = self.budget.grants(self.pool)  # its own grant is no activity
            if not can_trim:
                continue
            grants = self.budget.grants(self.pool)
            idle = self.budget.held(self.pool) == 0 and self.budget.waiting() == 0
            if idle and grants == previous and grants != trimmed_at:
                await self.trim()
                trimmed_at = self.budget.grants(self.pool)
            previous = self.budget.grants(self.pool)
