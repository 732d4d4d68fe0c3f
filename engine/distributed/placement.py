"""Which engine gets the next job: the one whose queue drains first.

Round robin gives a slow engine (a smaller GPU, a busy host, a key not yet
loaded) as many jobs as a fast one, and the whole batch then waits for it.
Instead each engine has an estimate of how soon a new job would finish there:

    (proofs it holds + proofs of the new job) x seconds per proof
      + the key's load time, unless the key is resident there (or loading)

`seconds per proof` is measured, not configured: the time between an
engine's completions while it is busy, divided by the proofs completed
(throughput, so an engine running several proofs at once counts as fast as
it is), as a moving average.  An engine not yet measured is assumed as fast
as the median of those that are (all equal at the start).

Each engine also has a window (proofs in flight it may hold); jobs beyond
every window wait on the driver and go out as windows open, which is a pull
model: the engine that drains first asks first.  Pure Python, no Ray: the
cluster drives it, tests drive it with a fake clock.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

EWMA = 0.3  # weight of the newest sample of seconds per proof


@dataclass
class EngineSlot:
    """The driver's view of one engine."""

    index: int
    window: int
    alive: bool = True
    outstanding: int = 0  # proofs sent and not yet returned
    keys: set[int] = field(default_factory=set)  # resident or loading there
    seconds_per_proof: float | None = None
    busy_since: float | None = None
    last_completion: float | None = None
    completed: int = 0

    def room(self, proofs: int) -> bool:
        # a job larger than the whole window still goes to an idle engine
        return self.alive and (self.outstanding + proofs <= self.window or self.outstanding == 0)


class Placement:
    def __init__(self, windows: list[int], clock: Callable[[], float] = time.monotonic):
        self.slots = [EngineSlot(i, w) for i, w in enumerate(windows)]
        self.key_load_s: dict[int, float] = {}
        self._clock = clock

    def alive(self) -> list[EngineSlot]:
        return [s for s in self.slots if s.alive]

    def _rate_prior(self) -> float:
        measured = [s.seconds_per_proof for s in self.alive() if s.seconds_per_proof is not None]
        return statistics.median(measured) if measured else 1.0

    def estimate(self, slot: EngineSlot, proofs: int, key: int) -> float:
        """Seconds until a job of `proofs` proofs of `key` would finish on `slot`."""
        per_proof = slot.seconds_per_proof if slot.seconds_per_proof is not None else self._rate_prior()
        load = 0.0 if key in slot.keys else self.key_load_s.get(key, 0.0)
        return (slot.outstanding + proofs) * per_proof + load

    def choose(self, proofs: int, key: int, exclude: frozenset[int] = frozenset()) -> EngineSlot | None:
        """The engine whose queue drains first among those with room; None when every window is full."""
        candidates = [s for s in self.alive() if s.index not in exclude and s.room(proofs)]
        if not candidates:
            return None
        return min(candidates, key=lambda s: (self.estimate(s, proofs, key), s.outstanding, s.index))

    def sent(self, slot: EngineSlot, proofs: int, key: int) -> None:
        if slot.outstanding == 0:
            slot.busy_since = self._clock()
        slot.outstanding += proofs
        slot.keys.add(key)

    def returned(self, slot: EngineSlot, proofs: int, *, completed: bool) -> None:
        """A job came back (completed=True: its proofs count towards the engine's measured speed)."""
        now = self._clock()
        if completed and proofs:
            # the busy interval since this engine's previous completion (or since it last became busy)
            start = slot.busy_since if slot.busy_since is not None else now
            if slot.last_completion is not None:
                start = max(start, slot.last_completion)
            sample = max(now - start, 0.0) / proofs
            slot.seconds_per_proof = sample if slot.seconds_per_proof is None \
                else (1 - EWMA) * slot.seconds_per_proof + EWMA * sample
            slot.last_completion = now
            slot.completed += proofs
        slot.outstanding -= proofs
        if slot.outstanding == 0:
            slot.busy_since = None

    def key_loaded(self, key: int, seconds: float) -> None:
        self.key_load_s.setdefault(key, seconds)

    def lost(self, slot: EngineSlot) -> None:
        slot.alive = False
