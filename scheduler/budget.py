"""Byte budgets: all-or-nothing, first-come-first-served reservations (design.md §5 rules 2, 4, 6).

One `Budget` holds one or more pools (the host budget has one; the VRAM
budget has one pool per device).  Requests wait in a single FIFO queue; the
head is granted on any pool with room for all of it (the pool that frees
first wins, which is how work goes to the device whose queue drains first),
and nothing behind the head is granted before it, so a large request is never
starved by a stream of small ones.  A request larger than every pool it may
use fails at once with `BudgetError`.

All methods run on the event loop thread; `Reservation.release()` is plain
(not async) so it can run in `finally` blocks, including cancelled ones.
"""
from __future__ import annotations

import itertools
import math
from collections import deque
from typing import Callable, Sequence

import anyio
import anyio.lowlevel

from engine.errors import BudgetError

from cuda_kernels import device_global

PROOF = "proof"  # a proof's working set: counted by cuda_kernels.device_global (design.md §5 rule 1)
MAINTENANCE = "maintenance"  # the whole pool, held by the idle hook while it trims
KEY = "key"  # a key being loaded: its bytes, held until they leave the capacity for the key's lifetime


def fmt_bytes(n: int, up: bool = False) -> str:
    """Bytes as a short human string (1.5 GiB); `up`: rounded up, so that a budget of that figure holds n (a
    refusal's "at least" figure, rounded down, was refused again when given back)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            if unit == "B":
                return f"{value:.0f} {unit}"
            return f"{math.ceil(value * 10) / 10 if up else value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # unreachable


class Reservation:
    """Bytes held from one pool of a Budget until `release()` (idempotent)."""

    __slots__ = ("budget", "pool", "nbytes", "kind", "seq", "_released")

    def __init__(self, budget: "Budget", pool: int, nbytes: int, kind: str, seq: int):
        self.budget, self.pool, self.nbytes, self.kind, self.seq = budget, pool, nbytes, kind, seq
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        if not self._released:
            self._released = True
            self.budget._return(self)


class _Waiter:
    __slots__ = ("nbytes", "kind", "pools", "label", "seq", "event", "reservation", "error")

    def __init__(self, nbytes: int, kind: str, pools: Sequence[int], label: str, seq: int):
        self.nbytes, self.kind, self.pools, self.label, self.seq = nbytes, kind, pools, label, seq
        self.event = anyio.Event()
        self.reservation: Reservation | None = None
        self.error: BaseException | None = None


class Budget:
    """Pools of bytes handed out whole, in arrival order."""

    def __init__(self, capacities: Sequence[int], *, name: str, guard_devices: Sequence[int] | None = None):
        if not capacities:
            raise ValueError("a budget needs at least one pool")
        if any(c < 0 for c in capacities):
            raise ValueError(f"{name}: negative capacity {list(capacities)}")
        self.name = name
        self._capacity = [int(c) for c in capacities]
        self._available = list(self._capacity)
        self._outstanding = [0] * len(capacities)  # PROOF reservations per pool
        self._held = [0] * len(capacities)  # all reservations per pool
        self._grants = [0] * len(capacities)  # monotone counter: activity since a moment
        self._queue: deque[_Waiter] = deque()
        self._seq = itertools.count()
        self._idle_events: list[anyio.Event | None] = [None] * len(capacities)
        self._idle_hooks: list[Callable[[int], None]] = []
        self._guard_handles = []
        for pool, device in enumerate(guard_devices or ()):
            # the budget is the owner its devices' device-global calls are checked against
            self._guard_handles.append(
                device_global.register(device, lambda p=pool: self._outstanding[p], owner=self))

    # ---- state (for tests, stats and the guard)
    @property
    def pools(self) -> int:
        return len(self._capacity)

    def capacity(self, pool: int = 0) -> int:
        return self._capacity[pool]

    def available(self, pool: int = 0) -> int:
        return self._available[pool]

    def outstanding(self, pool: int | None = None) -> int:
        """Proof reservations held (in `pool`, or in all pools)."""
        return sum(self._outstanding) if pool is None else self._outstanding[pool]

    def held(self, pool: int | None = None) -> int:
        """Reservations of any kind held."""
        return sum(self._held) if pool is None else self._held[pool]

    def waiting(self) -> int:
        return len(self._queue)

    def grants(self, pool: int) -> int:
        return self._grants[pool]

    def at_rest(self) -> bool:
        """Nothing held, nobody waiting, every pool full: the state a drained engine must return to."""
        return not self._queue and not any(self._held) and self._available == self._capacity

    def add_idle_hook(self, hook: Callable[[int], None]) -> None:
        """`hook(pool)` runs (on the loop) each time a pool's last reservation returns."""
        self._idle_hooks.append(hook)

    # ---- reserving
    async def reserve(
        self,
        nbytes: int,
        *,
        pools: Sequence[int] | None = None,
        kind: str = PROOF,
        label: str = "a request",
    ) -> Reservation:
        """Wait until `nbytes` fit whole in one of `pools` (all by default), in arrival order.

        Raises BudgetError at once when `nbytes` exceeds the capacity of every pool it may use.
        Cancelling the wait leaves the budget as it was.
        """
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"{label}: negative reservation {nbytes}")
        pools = tuple(range(len(self._capacity))) if pools is None else tuple(pools)
        self._check_fits(nbytes, pools, label)
        waiter = _Waiter(nbytes, kind, pools, label, next(self._seq))
        self._queue.append(waiter)
        self._grant()
        if waiter.reservation is None and waiter.error is None:
            try:
                await waiter.event.wait()
                await anyio.lowlevel.checkpoint_if_cancelled()  # granted but cancelled: give it back
            except BaseException:
                if waiter.reservation is not None:
                    waiter.reservation.release()
                elif waiter in self._queue:
                    self._queue.remove(waiter)
                    self._grant()  # the head may have left: those behind it may fit now
                    self._signal_idle()
                raise
        if waiter.error is not None:
            raise waiter.error
        assert waiter.reservation is not None
        return waiter.reservation

    async def reserve_pool(self, pool: int, *, label: str = "maintenance") -> Reservation:
        """Take the whole of `pool` (in turn, like everyone else); not counted as a proof reservation."""
        return await self.reserve(self._capacity[pool], pools=(pool,), kind=MAINTENANCE, label=label)

    def adjust_capacity(self, pool: int, delta: int) -> None:
        """Grow or shrink a pool (a resident key takes device memory out of the proofs' budget).

        Shrinking may leave `available` negative until reservations return; waiting
        requests that no longer fit anywhere fail with BudgetError.
        """
        self._capacity[pool] += delta
        self._available[pool] += delta
        if delta < 0:
            for waiter in list(self._queue):
                try:
                    self._check_fits(waiter.nbytes, waiter.pools, waiter.label)
                except BudgetError as exc:
                    self._queue.remove(waiter)
                    waiter.error = exc
                    waiter.event.set()
        self._grant()

    async def wait_idle(self, pool: int) -> None:
        """Return when `pool` holds no reservation and nobody waits for the budget."""
        while self._held[pool] or self._queue:
            event = self._idle_events[pool]
            if event is None:
                event = self._idle_events[pool] = anyio.Event()
            await event.wait()

    def close(self) -> None:
        """Stop being visible to the guard."""
        for handle in self._guard_handles:
            device_global.unregister(handle)
        self._guard_handles = []

    # ---- internals
    def _check_fits(self, nbytes: int, pools: Sequence[int], label: str) -> None:
        biggest = max((self._capacity[p] for p in pools), default=0)
        if nbytes > biggest:
            where = "" if len(self._capacity) == 1 else f" ({len(pools)} pool(s), largest)"
            raise BudgetError(
                f"{label}: needs {fmt_bytes(nbytes)} of {self.name} but the whole budget{where} is "
                f"{fmt_bytes(biggest)}; raise the budget or make the job smaller"
            )

    def _pick(self, waiter: _Waiter) -> int | None:
        best = None
        for p in waiter.pools:
            if self._available[p] >= waiter.nbytes:
                score = (-self._outstanding[p], self._available[p], -p)
                if best is None or score > best[0]:
                    best = (score, p)
        return None if best is None else best[1]

    def _grant(self) -> None:
        while self._queue:
            head = self._queue[0]
            pool = self._pick(head)
            if pool is None:
                return
            self._queue.popleft()
            self._available[pool] -= head.nbytes
            self._held[pool] += 1
            self._grants[pool] += 1
            if head.kind == PROOF:
                self._outstanding[pool] += 1
            head.reservation = Reservation(self, pool, head.nbytes, head.kind, head.seq)
            head.event.set()

    def _return(self, res: Reservation) -> None:
        p = res.pool
        self._available[p] += res.nbytes
        self._held[p] -= 1
        if res.kind == PROOF:
            self._outstanding[p] -= 1
        self._grant()
        if self._held[p] == 0:
            for hook in self._idle_hooks:
                hook(p)
        self._signal_idle()

    def _signal_idle(self) -> None:
        for i, event in enumerate(self._idle_events):
            if event is not None and self._held[i] == 0 and not self._queue:
                self._idle_events[i] = None
                event.set()
