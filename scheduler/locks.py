"""The device's memory lock and compute slots (design.md §5 rule 3), as FIFO asyncio primitives.

`FifoSlots(n)` hands out slot numbers 0..n-1 in arrival order (a fair
semaphore that says *which* slot: a compute slot is a compute stream).
`DeviceLocks` composes them for one device in one of two modes:

* ``split`` (the design): a memory lock (one holder: allocate, enqueue uploads,
  record an event, release) and `slots` compute slots (held from launch until
  the done event fires).  A partition takes them in order budget → memory →
  compute and never holds two; `compute()` refuses a holder of the memory lock.
* ``single`` (the old design, for experiments): one lock held over the memory
  and compute phases together.
"""
from __future__ import annotations

from collections import deque
from contextlib import asynccontextmanager
from typing import AsyncIterator

import anyio
import anyio.lowlevel

SPLIT = "split"
SINGLE = "single"
LOCK_MODES = (SPLIT, SINGLE)


class LockOrderError(RuntimeError):
    """A partition tried to hold the memory lock and a compute slot at once (a bug)."""


class FifoSlots:
    """n numbered slots, granted in arrival order; cancelling a wait leaves no trace.

    A caller may take several slots at once (`count`): a proof that should not share the device
    takes them all.  Grants stay strictly FIFO, so a wide caller at the head is never overtaken by
    narrow ones behind it (no starvation); the first of its slots is its own (the longest free, as
    for a single slot).
    """

    def __init__(self, n: int, name: str = "slots"):
        if n < 1:
            raise ValueError(f"{name}: need at least one slot, got {n}")
        self.name = name
        self.size = n
        self._free: list[int] = list(range(n))
        self._waiters: deque[list] = deque()  # [event, slot or None, owner, count]
        self._holders: dict[int, object] = {}
        self._groups: dict[int, list[int]] = {}  # a holder's slot -> every slot it took

    @property
    def in_use(self) -> int:
        return self.size - len(self._free)

    def waiting(self) -> int:
        return len(self._waiters)

    def holders(self) -> set:
        return set(self._holders.values())

    def at_rest(self) -> bool:
        return not self._waiters and len(self._free) == self.size

    def _take(self, owner: object, count: int) -> int:
        group, self._free = self._free[:count], self._free[count:]
        for slot in group:
            self._holders[slot] = owner
        self._groups[group[0]] = group
        return group[0]

    async def acquire(self, owner: object = None, count: int = 1) -> int:
        """A slot number (`count` slots held under it, at most all of them)."""
        count = max(1, min(int(count), self.size))
        if len(self._free) >= count and not self._waiters:
            await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller takes nothing
            return self._take(owner, count)
        entry = [anyio.Event(), None, owner, count]
        self._waiters.append(entry)
        try:
            await entry[0].wait()
            await anyio.lowlevel.checkpoint_if_cancelled()  # granted but cancelled: give it back
        except BaseException:
            if entry[1] is not None:
                self.release(entry[1])
            else:
                self._waiters.remove(entry)
                self._grant()  # a wide waiter at the head may have held back narrower ones
            raise
        return entry[1]

    def release(self, slot: int) -> None:
        group = self._groups.pop(slot, None)
        if group is None:
            raise RuntimeError(f"{self.name}: slot {slot} released but not held")
        for s in group:
            del self._holders[s]
        self._free.extend(group)
        self._grant()

    def _grant(self) -> None:
        while self._waiters and len(self._free) >= self._waiters[0][3]:
            entry = self._waiters.popleft()
            entry[1] = self._take(entry[2], entry[3])
            entry[0].set()

    @asynccontextmanager
    async def hold(self, owner: object = None, count: int = 1) -> AsyncIterator[int]:
        slot = await self.acquire(owner, count)
        try:
            yield slot
        finally:
            self.release(slot)


class DeviceLocks:
    """The memory lock and compute slots of one device, in `split` or `single` mode."""

    def __init__(self, mode: str = SPLIT, compute_slots: int = 1, name: str = "device"):
        if mode not in LOCK_MODES:
            raise ValueError(f"lock mode {mode!r}: choose one of {', '.join(LOCK_MODES)}")
        self.mode = mode
        self.memory_lock = FifoSlots(1, f"{name} memory lock")
        self.compute_slots = FifoSlots(compute_slots, f"{name} compute slots")
        # single mode: one lock over both phases (the memory lock object stands in for it)
        self.single_lock = self.memory_lock

    def at_rest(self) -> bool:
        return self.memory_lock.at_rest() and self.compute_slots.at_rest()

    @asynccontextmanager
    async def memory(self, owner: object) -> AsyncIterator[None]:
        if owner in self.compute_slots.holders():
            raise LockOrderError(f"{owner!r} asked for the memory lock while holding a compute slot")
        async with self.memory_lock.hold(owner):
            yield

    @asynccontextmanager
    async def compute(self, owner: object, slots: int = 1) -> AsyncIterator[int]:
        """A compute slot (its number picks the compute stream); `slots` > 1 holds that many, so
        fewer proofs compute beside this one (all of them: it computes alone)."""
        if owner in self.memory_lock.holders():
            raise LockOrderError(f"{owner!r} asked for a compute slot while holding the memory lock")
        async with self.compute_slots.hold(owner, slots) as slot:
            yield slot

    @asynccontextmanager
    async def single(self, owner: object) -> AsyncIterator[int]:
        """The old design's one lock; the slot it yields is always 0."""
        async with self.single_lock.hold(owner):
            yield 0
