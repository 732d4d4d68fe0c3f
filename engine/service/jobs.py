"""A job's record, and the priority queue of admitted jobs in front of the Engine.

The queue hands the Engine only as many jobs as it can run at once
(`slots`), so everything still waiting stays here, where it can be
reordered: a high job overtakes queued normal and low ones (FIFO within a
priority) but never pre-empts one the Engine already runs.  A job that is
cancelled or whose deadline passes while queued leaves at once and never
reaches the Engine.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

PRIORITIES = ("high", "normal", "low")
RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
FINAL = ("done", "failed", "cancelled", "expired")


@dataclass(eq=False)
class Job:
    """One proof request: where it is, what it holds, how it ended."""

    id: str
    key: Any  # keys.ServedKey
    priority: str
    witness: Any  # an uploaded .wtns parsed in memory (a Witness), its spooled path, or a dict of inputs
    label: str  # what the client calls the witness (for messages)
    spool: str | None = None  # the uploaded file to delete when the job ends
    upload: bytearray | None = None  # the buffer of an upload held in memory (witness is a view over it)
    deadline: float | None = None  # loop.time() after which the job is cancelled
    deadline_s: float | None = None
    state: str = "queued"  # queued -> running -> done | failed | cancelled | expired
    reason: str | None = None  # why it was cancelled or expired
    proof: Any = None
    problem: Any = None  # problems.Problem for failed / cancelled / expired
    received: float | None = None  # when its request arrived (before the upload was read)
    created: float = field(default_factory=time.monotonic)
    started: float | None = None
    finished: float | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    scope: Any = None  # the anyio CancelScope around the engine call while running
    timer: asyncio.TimerHandle | None = None
    cancel_as: str | None = None  # the final state a cancel of a running job ends in
    by_server: bool = False  # cancelled by the server shutting down (503), not by a client (409)
    detached: bool = False  # a polled job (POST .../jobs), kept after it ends; else its request waits

    @property
    def final(self) -> bool:
        return self.state in FINAL


class JobQueue:
    """Queued jobs by (priority, arrival); `start(job)` is called for each job the Engine may take."""

    def __init__(self, slots: int, per_key_limit: int, start: Callable[[Job], None]):
        self.slots = slots
        self.per_key_limit = per_key_limit
        self.running = 0
        self.depth = {name: 0 for name in PRIORITIES}
        self._start = start
        self._heap: list[tuple[int, int, Job]] = []
        self._seq = itertools.count()
        self.paused = False

    def has_room(self, key: Any) -> bool:
        return key.queued + key.uploading < self.per_key_limit  # an upload under way has its place

    def admit(self, job: Job) -> None:
        """Queue a job (the caller checked has_room) and start what may start."""
        heapq.heappush(self._heap, (RANK[job.priority], next(self._seq), job))
        job.key.queued += 1
        self.depth[job.priority] += 1
        self.pump()

    def withdraw(self, job: Job) -> None:
        """A queued job leaves (cancelled, expired); its heap entry is skipped when popped."""
        job.key.queued -= 1
        self.depth[job.priority] -= 1

    def pump(self) -> None:
        while not self.paused and self.running < self.slots and self._heap:
            _, _, job = heapq.heappop(self._heap)
            if job.state != "queued":
                continue  # withdrawn while it waited
            self.withdraw(job)
            self.running += 1
            job.state = "running"
            job.started = time.monotonic()
            self._start(job)

    def release(self) -> None:
        """A started job is over: its slot goes to the next queued job."""
        self.running -= 1
        self.pump()

    def queued(self) -> int:
        return sum(self.depth.values())
