"""Waiting for a lone proof's done event awake.

The context syncs by blocking (the waiting thread sleeps until the driver's interrupt wakes it), which
adds a wake-up to every wait: 0.03-0.2 ms on the H200 (perf/RESULTS.md: the NTT's "sync wall" against its
"wall"), a few percent of a small proof.  So a proof with a device tail, when it is the only one of this
backend in flight, is waited for in two steps: blocking until its final phase starts (an event recorded
just before it: the wake-up then happens while the final phase runs, ~3 ms at every size), then polling
its done event for at most GROTH16_WAIT_SPIN_MS (default 5 ms; 0: never poll; at most 1000 ms,
env_setting.MAX_SPIN_MS), then blocking as before.
Beside other proofs every waiter blocks: threads spinning side by side would take the cores that the
synthesis pool and the other waits need (engine/client_wait.py has the same rule for the client).
"""
from __future__ import annotations

import threading
import time
import weakref

from engine.backends.base import Pending
from engine.env_setting import milliseconds
from engine.errors import DeviceError, EngineError

DEFAULT_SPIN_MS = 5.0
ENV = "GROTH16_WAIT_SPIN_MS"


class WaitSettingError(EngineError, ValueError):
    """A bad GROTH16_WAIT_SPIN_MS: one line from the CLI (an EngineError), raised when the backend starts."""


def spin_seconds() -> float:
    """The polling budget of a lone wait, from GROTH16_WAIT_SPIN_MS (ms; 0 turns it off)."""
    return milliseconds(ENV, DEFAULT_SPIN_MS, WaitSettingError, "turns the polling off") / 1000.0


class Flight:
    """How many compute phases of one backend are in flight (computed and not yet waited for), and which
    proofs are staged for one (memory phase done, compute not begun)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count = 0
        self._staged: dict[int, weakref.ref] = {}  # id -> the Staged (a dropped one leaves by itself)

    def lone(self) -> bool:
        return self._count == 1

    def staged(self, staged) -> None:
        key = id(staged)
        staged_set = self._staged

        def gone(_ref) -> None:  # may run inside any allocation: no lock (a dict's pop is atomic)
            staged_set.pop(key, None)

        with self._lock:
            staged_set[key] = weakref.ref(staged, gone)

    def unstaged(self, staged) -> None:
        """`staged` goes to its compute phase (or is discarded)."""
        with self._lock:
            self._staged.pop(id(staged), None)

    def idle(self) -> bool:
        """No compute phase in flight and no other proof staged for one (read by the next compute phase
        before it is tracked: pipeline.compute): a proof alone on the backend."""
        with self._lock:
            return self._count == 0 and not self._staged

    def track(self, pendings: list[Pending]) -> list[Pending]:
        """Count `pendings` in flight until each one's wait has returned or raised."""
        with self._lock:
            self._count += len(pendings)
        return [self._tracked(p) for p in pendings]

    def _tracked(self, pending: Pending) -> Pending:
        left = [False]

        def wait():
            try:
                return pending.wait()
            finally:
                if not left[0]:
                    left[0] = True
                    with self._lock:
                        self._count -= 1

        return Pending(wait)


def await_awake(before_final, done, budget_s: float) -> None:
    """Block until `before_final` has fired, then poll `done` for at most `budget_s`; returns when `done`
    has fired or the budget is spent (the caller's blocking wait follows either way).  An event the
    driver reports an error for ends the polling early: the caller's wait raises it."""
    if budget_s <= 0 or before_final is None or done is None:
        return
    try:
        before_final.synchronize()
        until = time.perf_counter() + budget_s
        while not done.query():
            if time.perf_counter() >= until:
                return
            time.sleep(0)  # the GIL to the other threads between polls
    except DeviceError:  # the blocking wait after this reports it
        return
