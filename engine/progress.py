"""Progress and stage timing for long commands.

A terminal gets a one-line bar on stderr; `--quiet` prints nothing; `--json`
writes one JSON object per event on stderr for machines.  `--verbose` adds the
elapsed time per stage at the end.  Library code reports through a `Progress`
and never prints.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

TYPE_CHECKING = False  # typing's own flag without importing typing (~4 ms of the CLI client's start)
if TYPE_CHECKING:
    from typing import Iterator, TextIO


class Progress:
    """Reports stages of a long task.  The base class records timings and shows nothing."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def stage(self, name: str, fraction: float | None = None) -> None:
        """A new stage starts; `fraction` is the overall completion in [0, 1] when known."""

    def done(self) -> None:
        """The task finished (clears a bar)."""

    def note(self, text: str) -> None:
        """A line the user should read while the task runs (a long first-run step); silent here."""

    def log(self, text: str) -> None:
        """A line of the task's own (a circuit's log()), shown unless --quiet: on stderr here, above a bar
        (BarProgress), a {"event": "log"} object with --json."""
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    @contextmanager
    def timed(self, name: str, fraction: float | None = None) -> Iterator[None]:
        self.stage(name, fraction)
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t

    def add_timings(self, timings: dict[str, float], prefix: str = "") -> None:
        for k, v in timings.items():
            self.timings[prefix + k] = self.timings.get(prefix + k, 0.0) + v


class BarProgress(Progress):
    """A single updating line on a terminal."""

    def __init__(self, title: str, stream: TextIO | None = None, width: int = 28) -> None:
        super().__init__()
        self.title, self.stream, self.width = title, stream or sys.stderr, width
        self._fraction = 0.0
        self._t0 = time.perf_counter()
        # The line stays within the terminal: a longer one wraps, and "\r" goes back to the start of its last
        # part only, leaving the rest on the screen at every update
        self._columns = len(title) + width + 48
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        if not columns:  # a terminal no one sized (`script`, `docker exec -t`) says 0: COLUMNS, if set, or the bar
            from engine.commands.parsing import env_columns  # noqa: PLC0415 - a terminal's bar is the CLI's

            columns = env_columns()
        if columns:
            self._columns = max(min(self._columns, columns - 1), 1)

    def stage(self, name: str, fraction: float | None = None) -> None:
        if fraction is not None:
            self._fraction = max(0.0, min(1.0, fraction))
        elapsed = time.perf_counter() - self._t0
        numbers = f" {self._fraction * 100:5.1f}% {elapsed:6.2f}s "
        room = self._columns - len(self.title) - 3 - len(numbers)  # for the bar and the stage's name
        width = max(0, min(self.width, max(min(10, room), room - 24)))  # the bar gives way first, down to 10
        filled = int(self._fraction * width)
        line = f"{self.title} [{'#' * filled + '-' * (width - filled)}]{numbers}{name:<24.24}"
        self.stream.write("\r" + line[:self._columns])
        self.stream.flush()

    def done(self) -> None:
        self.stream.write("\r" + " " * self._columns + "\r")
        self.stream.flush()

    def note(self, text: str) -> None:
        self.done()  # the line above the bar, which the next stage draws again
        self.stream.write(text + "\n")
        self.stream.flush()

    def log(self, text: str) -> None:
        self.note(text)  # a plain handler's line was appended to the bar's


class JsonProgress(Progress):
    """One JSON object per stage on a stream: {"event": "stage", "name": ..., "fraction": ..., "t": ...}."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self.stream = stream or sys.stderr
        self._t0 = time.perf_counter()

    def stage(self, name: str, fraction: float | None = None) -> None:
        self._emit({"event": "stage", "name": name, "fraction": fraction})

    def note(self, text: str) -> None:
        self._emit({"event": "note", "text": text})

    def event(self, event: str, **fields) -> None:
        """Another line of the command's (a circuit's log line: {"event": "log", "text": ...})."""
        self._emit({"event": event, **fields})

    def log(self, text: str) -> None:
        self.event("log", text=text)

    def _emit(self, msg: dict) -> None:
        import msgspec  # noqa: PLC0415 - only --json needs it; every command imports this module

        msg["t"] = round(time.perf_counter() - self._t0, 6)
        try:
            line = msgspec.json.encode(msg).decode()
        except UnicodeEncodeError:  # a name's byte that is not UTF-8 (a surrogate escape): msgspec refuses it
            line = None
        if line is None or not line.isascii():  # \u escapes: an ASCII stderr made é \xe9, which is no JSON
            import json  # noqa: PLC0415

            line = json.dumps(msg, separators=(",", ":"), default=str)
        self.stream.write(line + "\n")
        self.stream.flush()


def add_output_flags(parser, *, quiet: str = "no progress bar", json: str = "progress and the result as JSON lines",
                     verbose: str = "print the elapsed time of every stage") -> None:
    """--quiet | --json and --verbose, the same for every command (the help words where a command means more)."""
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--quiet", action="store_true", help=quiet)
    out.add_argument("--json", action="store_true", help=json)
    parser.add_argument("--verbose", action="store_true", help=verbose)


def make_progress(title: str, *, quiet: bool = False, json: bool = False, stream: TextIO | None = None) -> Progress:
    """The right reporter for this invocation: JSON, a bar on a terminal, or silent."""
    stream = stream or sys.stderr
    if json:
        return JsonProgress(stream)
    if quiet or not stream.isatty():
        return Progress()
    return BarProgress(title, stream)


def process_age() -> float | None:
    """Seconds since this process started (Linux: /proc/self/stat, to the kernel's 10 ms clock
    tick), for the CLI's "interpreter + imports" stage; None where that is not known."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 (starttime), counted after the name
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - start)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


# A proof's timings that are counts, not seconds (the GPU pipeline's batch size and the fold its MSMs ran at)
COUNTS = frozenset({"gpu_batch", "gpu_fold"})


def stage_seconds(timings: dict[str, float]) -> dict[str, float]:
    """The timings that are durations (what a sum of stages may add up)."""
    return {k: v for k, v in timings.items() if k.strip() not in COUNTS}


def format_timings(timings: dict[str, float]) -> str:
    """The `--verbose` table: one stage per line with milliseconds (a count as it is)."""
    if not timings:
        return ""
    width = max(len(k) for k in timings)
    lines = [f"  {k:<{width}}  {int(v):10d}" if k.strip() in COUNTS else f"  {k:<{width}}  {v * 1000:10.2f} ms"
             for k, v in timings.items()]
    return "stage timings:\n" + "\n".join(lines)


def report_proof(progress, proof, /, *, verbose: bool, as_json: bool, **result) -> None:
    """A prove command's closing lines: the stage table (the command's stages, then the proof's own,
    indented) with --verbose, the JSON result object with --json (the same timings in it, as the direct path
    gives them: --json's lines are JSON only)."""
    timings = {**progress.timings, **{"  " + k: v for k, v in proof.timings.items()}}
    if verbose and not as_json:
        print(format_timings(timings), file=sys.stderr)
    if as_json:
        import json  # noqa: PLC0415

        print(json.dumps({"event": "result", **result, "timings": timings}))
