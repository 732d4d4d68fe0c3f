"""The timeline (design.md §7): every stage of every partition as one JSON line.

`Event` is the msgspec struct written per line.  `Timeline` stamps events
with `time.monotonic_ns()` and hands them to sinks: a JSON-lines file
(`JsonlSink`), an in-memory list (`MemorySink`, for tests and sweeps), or any
callable.  `load_events` reads a file back and `summarize` turns events into
the numbers perf/ reports: proofs per minute, latency percentiles, GPU busy
fraction (the union of GPU_START..GPU_END intervals over wall time, per
device), queue waits and per-stage durations.

Events are emitted on the event loop thread; a stage that ends on another
thread (a done event observed by a waiter thread) passes its own `t_ns`.
"""
from __future__ import annotations

import logging
import os
import stat
import time
from enum import StrEnum
from typing import Callable, Iterable, Sequence

import msgspec


class Stage(StrEnum):
    TIMELINE_START = "TIMELINE_START"
    JOB_SUBMIT = "JOB_SUBMIT"
    SUBMIT = "SUBMIT"  # a partition enters the engine
    HOST_WAIT = "HOST_WAIT"
    HOST_GRANTED = "HOST_GRANTED"
    SYNTH_START = "SYNTH_START"  # slot = synthesis worker
    SYNTH_END = "SYNTH_END"
    CHECK_START = "CHECK_START"
    CHECK_END = "CHECK_END"
    BUDGET_WAIT = "BUDGET_WAIT"
    BUDGET_GRANTED = "BUDGET_GRANTED"  # device = the device that will run it
    MEM_WAIT = "MEM_WAIT"
    MEM_START = "MEM_START"
    MEM_END = "MEM_END"
    GPU_WAIT = "GPU_WAIT"
    GPU_START = "GPU_START"  # slot = compute slot
    GPU_END = "GPU_END"  # the done event fired (stamped by the waiter thread)
    # a device-thread call's own start and end (stamped there): detail "stage", "compute" or
    # "compute_batch of k"; the gap from MEM_START / GPU_START to CALL_START is the device thread's queue
    CALL_START = "CALL_START"
    CALL_END = "CALL_END"
    BUDGET_RELEASED = "BUDGET_RELEASED"
    HOST_RELEASED = "HOST_RELEASED"
    EPILOGUE_START = "EPILOGUE_START"
    EPILOGUE_END = "EPILOGUE_END"
    VERIFY_START = "VERIFY_START"
    VERIFY_END = "VERIFY_END"
    DONE = "DONE"
    FAILED = "FAILED"  # detail = the error
    CANCELLED = "CANCELLED"
    JOB_DONE = "JOB_DONE"
    JOB_FAILED = "JOB_FAILED"
    JOB_CANCELLED = "JOB_CANCELLED"
    KEY_LOAD_START = "KEY_LOAD_START"
    KEY_LOAD_END = "KEY_LOAD_END"
    TRIM_START = "TRIM_START"
    TRIM_END = "TRIM_END"


class Event(msgspec.Struct):
    """One timeline line.  -1 means "not applicable" for job, partition, device and slot."""

    t_ns: int  # time.monotonic_ns()
    stage: str
    job: int = -1
    partition: int = -1
    device: int = -1
    slot: int = -1
    bytes: int = 0  # the size the stage moved or reserved
    key: str = ""  # the proving key's label
    detail: str = ""  # errors, notes; TIMELINE_START carries wall_ns=<time.time_ns()>


Sink = Callable[[Event], None]
log = logging.getLogger("scheduler.timeline")


def _started_file(path: str) -> None:
    """A new timeline file: the CLI's forced exit (engine/interrupts.py) removes it, as Ctrl-C's way out does."""
    import sys  # noqa: PLC0415

    interrupts = sys.modules.get("engine.interrupts")
    if interrupts is not None:
        interrupts.started_file(path)


class JsonlSink:
    """Writes events to a file (replacing it), one JSON line each, each line one write(2) as it comes.

    A run killed by SIGKILL (or the CLI's watchdog, engine/interrupts.py) used to lose the events still in an
    8 KiB buffer, and could leave a line cut in two; now the file holds every event emitted, in whole lines
    (a line cut by a full disk is taken back).  A write that fails (a full disk, a reader that left) stops this
    sink, never the proof that emitted the event: the error is logged once and kept in `error` for whoever
    closes the timeline to report.  `flush_every_s` is accepted for older callers and has no effect.
    """

    def __init__(self, path: str | os.PathLike, flush_every_s: float = 1.0):
        self.path = os.fspath(path)
        created = not os.path.lexists(self.path)
        self._file = open(self.path, "wb", buffering=0)
        try:  # where the lines begin (0 but for a descriptor shared with others: /dev/stdout on a file)
            self._end: int | None = os.lseek(self._file.fileno(), 0, os.SEEK_CUR)
        except OSError:  # a pipe: what its reader got, it keeps
            self._end = None
        self._encoder = msgspec.json.Encoder()
        self.error: OSError | None = None
        if created:
            _started_file(self.path)

    def __call__(self, event: Event) -> None:
        if self.error is not None:
            return
        line = self._encoder.encode(event) + b"\n"
        try:
            rest = memoryview(line)
            while rest:  # one write but where it comes back short (a full disk, a signal on a pipe)
                rest = rest[self._file.write(rest):]
        except OSError as exc:
            self._take_back()
            self._failed(exc)
            return
        if self._end is not None:
            self._end += len(line)

    def _take_back(self) -> None:
        """Cut a regular file back to the end of its last whole line (a full disk took part of this one)."""
        try:
            fd = self._file.fileno()
            if self._end is not None and stat.S_ISREG(os.fstat(fd).st_mode) and \
                    os.lseek(fd, 0, os.SEEK_CUR) > self._end:
                os.ftruncate(fd, self._end)
        except (OSError, ValueError):
            pass

    def _failed(self, exc: OSError) -> None:
        self.error = exc
        log.warning("timeline %s: cannot write (%s); going on without it", self.path, exc.strerror or exc)
        try:
            self._file.close()
        except OSError:  # the buffer that failed to go out fails again: nothing more to say
            pass

    def close(self) -> None:
        if not self._file.closed:
            try:
                self._file.close()
            except OSError as exc:
                self._failed(exc)


class MemorySink(list):
    """Keeps events in a list (tests, sweeps)."""

    def __call__(self, event: Event) -> None:
        self.append(event)


class Timeline:
    """Stamps and fans out events; without sinks, `emit` costs one attribute check."""

    def __init__(self, sinks: Iterable[Sink] = ()):
        self._sinks: list[Sink] = list(sinks)
        self._owned: list[JsonlSink] = []
        self._failed_sinks: list[Sink] = []  # listeners that raised (said once each)

    @classmethod
    def to_file(cls, path: str | os.PathLike) -> "Timeline":
        tl = cls()
        tl.add_file(path)
        return tl

    def add_file(self, path: str | os.PathLike) -> JsonlSink:
        sink = JsonlSink(path)
        self._owned.append(sink)
        self.add_sink(sink)
        return sink

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)
        sink(Event(t_ns=time.monotonic_ns(), stage=Stage.TIMELINE_START, detail=f"wall_ns={time.time_ns()}"))

    def remove_sink(self, sink: Sink) -> None:
        if sink in self._sinks:
            self._sinks.remove(sink)

    @property
    def enabled(self) -> bool:
        return bool(self._sinks)

    def emit(self, stage: str, job: int = -1, partition: int = -1, *, t_ns: int | None = None, **fields) -> None:
        if not self._sinks:
            return
        event = Event(t_ns=time.monotonic_ns() if t_ns is None else t_ns, stage=str(stage), job=job,
                      partition=partition, **fields)
        for sink in self._sinks:
            try:
                sink(event)
            except Exception:  # noqa: BLE001 - a listener's bug (on_event) raised in the middle of a job's
                self._sink_failed(sink, event)  # budgets and device calls: proofs failed, memory was never returned

    def _sink_failed(self, sink: Sink, event: Event) -> None:
        """Say a listener's first failure (with its traceback) and go on calling it: it may fail only at times."""
        if not any(s is sink for s in self._failed_sinks):
            self._failed_sinks.append(sink)
            log.exception("timeline listener %r failed on event %s (its later failures are not said)",
                          sink, event.stage)

    def close(self) -> list[JsonlSink]:
        """Close the files this timeline owns; returns those that could not be written whole."""
        failed = []
        for sink in self._owned:
            sink.close()
            self.remove_sink(sink)
            if sink.error is not None:
                failed.append(sink)
        self._owned = []
        return failed


# ---------------------------------------------------------------- analysis

def load_events(path: str | os.PathLike) -> list[Event]:
    """Read a JSON-lines timeline, every line checked, so that the figures perf/ prints from it are the run's.

    Blank lines are skipped, and so is a last line without its newline that does not decode (a run killed while
    writing it: said as a warning); a file with no event at all (one killed before its first line) is [] with a
    warning.  Any other bad line is msgspec.DecodeError naming its number: a line that is not a JSON object of an
    Event's fields and types, a stage this engine never writes (a typo'd or foreign stage used to go through
    silently and drop out of every figure), a negative t_ns, and an end stage of a job's partition stamped before
    its start (summarize printed a negative latency).  The lines themselves need not be in time order: a stage
    stamped on another thread (GPU_END, CALL_START/END) is written when the event loop hands it on.  Fields this
    version does not know are ignored."""
    decoder = msgspec.json.Decoder(Event)
    events: list[Event] = []
    order, cut = _TimeOrder(), False
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                event = decoder.decode(line)
            except msgspec.DecodeError as exc:
                if not line.endswith(b"\n") and not f.read(1):
                    log.warning("timeline %s: its last line is cut short (the run was killed while writing it?); "
                                "read without it", os.fspath(path))
                    cut = True
                    break
                raise msgspec.DecodeError(f"line {number}: not a timeline event: {exc}") from None
            problem = _event_problem(event) or order.problem(event, number)
            if problem is not None:
                raise msgspec.ValidationError(f"line {number}: {problem}")
            events.append(event)
    if not events and not cut:
        log.warning("timeline %s: holds no events (a run killed before its first line?)", os.fspath(path))
    return events


_STAGES = frozenset(Stage)


def _event_problem(event: Event) -> str | None:
    """What makes one decoded line no event of this engine's timeline, or None."""
    if event.stage not in _STAGES:
        import difflib  # noqa: PLC0415 - only for a bad line

        near = difflib.get_close_matches(event.stage.upper(), _STAGES, n=1)  # (gpu_start too)
        hint = f"did you mean {near[0]}?" if near else "not one of scheduler.timeline.Stage"
        return f"unknown stage {event.stage!r} ({hint})"
    if event.t_ns < 0:
        return f"{event.stage} at t_ns={event.t_ns}: a time.monotonic_ns() stamp is never negative"
    return None


class _TimeOrder:
    """Each end stage of a job or partition against its latest start (in the file's order) of the same job and
    partition: a real run stamps the end later.  Only a job's stages are paired (_START_OF: key loads and trims,
    which may overlap for several keys, are not), and a TIMELINE_START (a second run's lines after the first's,
    as `--timeline /dev/stdout >> file` leaves them) forgets the pairs before it."""

    def __init__(self):
        self._starts: dict[tuple[int, int, str], tuple[int, int]] = {}  # (job, partition, stage) -> (t_ns, line)

    def problem(self, event: Event, number: int) -> str | None:
        if event.stage == Stage.TIMELINE_START:
            self._starts.clear()
        if event.stage in _STARTS:
            self._starts[(event.job, event.partition, event.stage)] = (event.t_ns, number)
        start_stage = _START_OF.get(event.stage)
        start = self._starts.get((event.job, event.partition, start_stage)) if start_stage else None
        if start is None or start[0] <= event.t_ns:
            return None
        of = "".join(f" {name} {n}" for name, n in (("job", event.job), ("partition", event.partition)) if n >= 0)
        return (f"{event.stage}{' of' if of else ''}{of} at t_ns={event.t_ns} is before its {start_stage} "
                f"(line {start[1]}, t_ns={start[0]}): the times go backwards")


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]); nan for no values."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """Total length covered by half-open intervals (overlaps counted once)."""
    total, cur_start, cur_end = 0, None, None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


# (name, start stage, end stage): spans measured per partition
SPANS = (
    ("host_wait", Stage.HOST_WAIT, Stage.HOST_GRANTED),
    ("synth", Stage.SYNTH_START, Stage.SYNTH_END),
    ("check", Stage.CHECK_START, Stage.CHECK_END),
    ("budget_wait", Stage.BUDGET_WAIT, Stage.BUDGET_GRANTED),
    ("mem_wait", Stage.MEM_WAIT, Stage.MEM_START),
    ("mem", Stage.MEM_START, Stage.MEM_END),
    ("gpu_wait", Stage.GPU_WAIT, Stage.GPU_START),
    ("gpu", Stage.GPU_START, Stage.GPU_END),
    ("epilogue", Stage.EPILOGUE_START, Stage.EPILOGUE_END),
    ("verify", Stage.VERIFY_START, Stage.VERIFY_END),
)
QUEUE_SPANS = ("host_wait", "budget_wait", "mem_wait", "gpu_wait")
# end stage -> its start stage, for load_events' check that no end is stamped before its start
_START_OF: dict[str, str] = {
    **{end: start for _, start, end in SPANS},
    Stage.CALL_END: Stage.CALL_START,
    **{end: Stage.SUBMIT for end in (Stage.DONE, Stage.FAILED, Stage.CANCELLED)},
    **{end: Stage.JOB_SUBMIT for end in (Stage.JOB_DONE, Stage.JOB_FAILED, Stage.JOB_CANCELLED)},
}
_STARTS = frozenset(_START_OF.values())


def partition_spans(events: Iterable[Event]) -> dict[tuple[int, int], dict[str, tuple[int, int, Event]]]:
    """(job, partition) -> span name -> (start ns, end ns, start event)."""
    starts: dict[tuple[int, int, str], Event] = {}
    out: dict[tuple[int, int], dict[str, tuple[int, int, Event]]] = {}
    by_end = {end: (name, start) for name, start, end in SPANS}
    by_start = {start for _, start, _ in SPANS}
    for ev in events:
        key = (ev.job, ev.partition)
        if ev.stage in by_start:
            starts[(ev.job, ev.partition, ev.stage)] = ev
        if ev.stage in by_end:
            name, start_stage = by_end[ev.stage]
            start = starts.pop((ev.job, ev.partition, start_stage), None)
            if start is not None:
                out.setdefault(key, {})[name] = (start.t_ns, ev.t_ns, start)
    return out


class Summary(msgspec.Struct):
    proofs_done: int
    failed: int
    cancelled: int
    wall_s: float
    proofs_per_min: float
    latency_p50_s: float
    latency_p95_s: float
    gpu_busy: float  # mean over devices of the busy fraction
    gpu_busy_by_device: dict[int, float]
    queue_wait_p50_s: float  # per partition: host + budget + memory + compute waits
    queue_wait_p95_s: float
    stage_p50_s: dict[str, float]
    stage_p95_s: dict[str, float]


def summarize(events: Sequence[Event]) -> Summary:
    """The figures a sweep table reports, from one run's events."""
    events = sorted(events, key=lambda e: e.t_ns)
    submit = {(e.job, e.partition): e.t_ns for e in events if e.stage == Stage.SUBMIT}
    done = {(e.job, e.partition): e.t_ns for e in events if e.stage == Stage.DONE}
    failed = sum(1 for e in events if e.stage == Stage.FAILED)
    cancelled = sum(1 for e in events if e.stage == Stage.CANCELLED)
    work = [e.t_ns for e in events if e.stage != Stage.TIMELINE_START]
    t0 = min(submit.values(), default=min(work, default=0))
    t1 = max(work, default=t0)
    wall_ns = max(t1 - t0, 1)
    latencies = [(done[k] - submit[k]) / 1e9 for k in done if k in submit]
    spans = partition_spans(events)
    gpu: dict[int, list[tuple[int, int]]] = {}
    per_stage: dict[str, list[float]] = {name: [] for name, _, _ in SPANS}
    queue: list[float] = []
    for parts in spans.values():
        for name, (a, b, start) in parts.items():
            per_stage[name].append((b - a) / 1e9)
            if name == "gpu":
                gpu.setdefault(start.device, []).append((a, b))
        if any(n in parts for n in QUEUE_SPANS):
            queue.append(sum((parts[n][1] - parts[n][0]) / 1e9 for n in QUEUE_SPANS if n in parts))
    devices = sorted({e.device for e in events if e.stage == Stage.BUDGET_GRANTED and e.device >= 0} | set(gpu))
    busy = {d: union_length(gpu.get(d, [])) / wall_ns for d in devices}
    return Summary(
        proofs_done=len(done),
        failed=failed,
        cancelled=cancelled,
        wall_s=wall_ns / 1e9,
        proofs_per_min=len(done) * 60e9 / wall_ns if done else 0.0,
        latency_p50_s=percentile(latencies, 50),
        latency_p95_s=percentile(latencies, 95),
        gpu_busy=sum(busy.values()) / len(busy) if busy else 0.0,
        gpu_busy_by_device=busy,
        queue_wait_p50_s=percentile(queue, 50),
        queue_wait_p95_s=percentile(queue, 95),
        stage_p50_s={k: percentile(v, 50) for k, v in per_stage.items() if v},
        stage_p95_s={k: percentile(v, 95) for k, v in per_stage.items() if v},
    )
