"""What a pool task logs in its worker process, carried back to the caller with its reply (scheduler/synth_pool.py).

A circuit's log() lines (engine.witness.calculator) went nowhere from the Engine's synthesis workers: the
direct path printed them and the Engine's proofs showed none.  The worker keeps a task's records, bounded,
and the pool re-emits them in its own process under the same loggers, where the caller's logging config
(the CLI's handler, an application's) applies.
"""
from __future__ import annotations

import collections
import logging
from dataclasses import dataclass, field

# Bounded: a circuit that logs without end must not keep every line in the worker's memory, nor send them all.
LOG_KEEP_FIRST = 1000  # the first lines a task logged...
LOG_KEEP_LAST = 1000  # ...and its last, with a count of those left out between them
LOG_LINE_MAX = 4 << 10  # characters of one line; a longer one is cut and says how much was left out
LOG_LEVEL = logging.INFO  # the lowest level carried back (the parent's own logging config filters again)


@dataclass
class TaskLog:
    """A task's log records as (logger name, level, message): the first and last ones, and how many were not kept."""

    lines: list = field(default_factory=list)
    left_out: int = 0
    left_out_logger: str = ""  # the logger of the first line left out, which says so in the parent


def record_text(record: logging.LogRecord) -> str:
    """A record's message, cut at LOG_LINE_MAX characters (saying how many more there were); a record whose
    arguments do not fit its format is said as it is, not raised in the handler."""
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001
        text = f"{record.msg!r} {record.args!r}"
    if len(text) > LOG_LINE_MAX:
        text = f"{text[:LOG_LINE_MAX]}... ({len(text) - LOG_LINE_MAX} more characters)"
    return text


class _TaskLogHandler(logging.Handler):
    """Keeps a task's records in the worker, bounded (TaskLog)."""

    def __init__(self) -> None:
        super().__init__(LOG_LEVEL)
        self.head: list = []
        self.tail: collections.deque = collections.deque(maxlen=LOG_KEEP_LAST)
        self.dropped = 0
        self.dropped_logger = ""
        self.saved_level = logging.NOTSET  # the root logger's level before capture()

    def emit(self, record: logging.LogRecord) -> None:
        line = (record.name, record.levelno, record_text(record))
        if len(self.head) < LOG_KEEP_FIRST:
            self.head.append(line)
            return
        if len(self.tail) == self.tail.maxlen:
            self.dropped += 1
            self.dropped_logger = self.dropped_logger or self.tail[0][0]
        self.tail.append(line)

    def result(self) -> TaskLog:
        return TaskLog(self.head + list(self.tail), self.dropped, self.dropped_logger)


def emit(log: TaskLog | None, label: str) -> None:
    """A task's carried log lines through this process's loggers of the same names, in order, each record with
    `witness` = the task's label; where lines were left out, one line says how many (at the place they were)."""
    if log is None:
        return
    for i, (name, level, text) in enumerate(log.lines):
        if i == LOG_KEEP_FIRST and log.left_out:
            _emit_line(log.left_out_logger, logging.INFO, f"{label}: {log.left_out} more log lines left out here (the "
                       f"first {LOG_KEEP_FIRST} and the last {LOG_KEEP_LAST} are kept)", label)
        _emit_line(name, level, text, label)


def _emit_line(name: str, level: int, text: str, label: str) -> None:
    logger = logging.getLogger(name)
    if logger.isEnabledFor(level):
        logger.handle(logger.makeRecord(name, level, "(synthesis worker)", 0, text, None, None,
                                        extra={"witness": label}))


def capture() -> "_TaskLogHandler":
    """Start keeping this process's records (INFO and up) until `release(handler)`."""
    root = logging.getLogger()
    handler = _TaskLogHandler()
    handler.saved_level = root.level
    root.addHandler(handler)
    if root.getEffectiveLevel() > LOG_LEVEL:
        root.setLevel(LOG_LEVEL)
    return handler


def release(handler: "_TaskLogHandler") -> TaskLog:
    """Stop keeping records; what was kept."""
    root = logging.getLogger()
    root.removeHandler(handler)
    root.setLevel(handler.saved_level)
    return handler.result()

