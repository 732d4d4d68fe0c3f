"""A job's record, its circuit's log lines (JobLog, also the Ray actor's), and the priority queue of admitted
jobs in front of the Engine.

The queue hands the Engine only as many jobs as it can run at once
(`slots`), so everything still waiting stays here, where it can be
reordered: a high job overtakes queued normal and low ones (FIFO within a
priority) but never pre-empts one the Engine already runs.  A job that is
cancelled or whose deadline passes while queued leaves at once and never
reaches the Engine.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from scheduler.task_log import record_text

PRIORITIES = ("high", "normal", "low")
RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
FINAL = ("done", "failed", "cancelled", "expired")

CIRCUIT_LOGGER = "engine.witness.calculator"  # a circuit's log() lines (scheduler/task_log.py carries them here)
# What the service keeps of one job's lines: its answer and a kept job's body carry them, and max_jobs_kept
# (10000) ended jobs are kept; 200 lines hold a circuit's debugging output (a few signals a constraint block),
# and 64 KiB a job bounds what a chatty circuit costs: an answer stays small, 10000 kept jobs under 1 GiB.
SERVICE_LOG_LINES = 200
SERVICE_LOG_CHARS = 64 << 10


class JobLog:
    """One job's circuit log lines as (logger, level, text, witness): its first ones, within `max_lines` and
    `max_chars`; `left_out` counts the rest.  Filled by the records logged in its context (`collecting`)."""

    def __init__(self, max_lines: int = SERVICE_LOG_LINES, max_chars: int = SERVICE_LOG_CHARS):
        self.max_lines, self.max_chars = max_lines, max_chars
        self.lines: list[tuple[str, int, str, str | None]] = []
        self.chars = 0
        self.left_out = 0

    def add(self, record: logging.LogRecord) -> None:
        text = record_text(record)  # cut as a synthesis worker cuts them
        if len(self.lines) >= self.max_lines or self.chars + len(text) > self.max_chars or self.left_out:
            self.left_out += 1  # the first lines only, in order: none after one was left out
            return
        self.chars += len(text)
        self.lines.append((record.name, record.levelno, text, getattr(record, "witness", None)))

    def texts(self) -> list[str]:
        return [line[2] for line in self.lines]


_JOB_LOG: contextvars.ContextVar[JobLog | None] = contextvars.ContextVar("engine_job_log", default=None)


_OWN_LEVEL = logging.INFO - 1  # the circuit logger's level while we set it: none other sets it, so it says who did


class _Collect(logging.Filter):
    """On the circuit's logger from a job's first collection on: a record logged in a job's context (the tasks its
    engine call starts copy it) goes to that job's JobLog, and on to the logger's handlers (and its parents')
    only where the logger would have let it through without the level set here: a server's log at WARNING is
    not filled with every job's lines.  A record logged outside a job passes as before (the CLI's own)."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger, self.saved = logger, logger.level

    def filter(self, record: logging.LogRecord) -> bool:
        log = _JOB_LOG.get()
        if log is None:
            return True
        log.add(record)
        level = self.logger.level
        if level == _OWN_LEVEL:  # ours: the level it had before
            level = self.saved or (self.logger.parent.getEffectiveLevel() if self.logger.parent else 0)
        return record.levelno >= level


_COLLECT: list[_Collect] = []  # the one filter, installed once: a job then costs a context variable's set only


@contextlib.contextmanager
def collecting(log: JobLog) -> Iterator[JobLog]:
    """The circuit's log lines of what runs in this context (a job's engine call) go to `log`."""
    if not _COLLECT:
        logger = logging.getLogger(CIRCUIT_LOGGER)
        _COLLECT.append(_Collect(logger))
        logger.addFilter(_COLLECT[0])
        if logger.getEffectiveLevel() > logging.INFO:  # else the engine never makes the records
            logger.setLevel(_OWN_LEVEL)
    token = _JOB_LOG.set(log)
    try:
        yield log
    finally:
        _JOB_LOG.reset(token)


def stop_collecting() -> None:
    """The circuit's logger as it was before the first `collecting` (tests that share a process)."""
    while _COLLECT:
        collect = _COLLECT.pop()
        collect.logger.removeFilter(collect)
        if collect.logger.level == _OWN_LEVEL:
            collect.logger.setLevel(collect.saved)


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
    log: JobLog = field(default_factory=JobLog)  # its circuit's log() lines, sent with its state
    verified: bool | None = None  # done: whether the engine checked its proof (serve --no-verify: not)

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
