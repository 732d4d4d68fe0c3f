"""What a killed run leaves of its --timeline, and the readers of such a file.

JsonlSink wrote through an 8 KiB buffer: a run killed (SIGKILL, the watchdog's forced exit) lost the events still
in it, and a flush cut short (by the kill, or a full disk) left a last line cut mid-way, on which load_events
(perf/timeline.py, perf/timeline_gaps.py) then failed for the whole file.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import msgspec
import pytest

from conftest import REPO
from scheduler.timeline import Event, JsonlSink, load_events


def test_a_run_killed_mid_timeline_leaves_whole_lines_only(tmp_path):
    """os._exit after 300 events (as SIGKILL would end it): the last 25 were lost in the write buffer (and a
    flush of that buffer cut by the kill or a full disk ended the file mid-line)."""
    path = tmp_path / "t.jsonl"
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from scheduler.timeline import Timeline
        timeline = Timeline.to_file({str(path)!r})
        for i in range(300):
            timeline.emit("GPU_START", job=i, detail="x" * 37)
        os._exit(137)
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 137, proc.stderr
    data = path.read_bytes()
    assert data.endswith(b"\n"), data[-80:]
    events = load_events(path)
    assert [e.job for e in events[1:]] == list(range(300))


def test_a_cut_last_line_is_skipped_by_the_reader(tmp_path, caplog):
    """load_events raised msgspec.DecodeError for the whole file over its last, cut line."""
    path = tmp_path / "t.jsonl"
    whole = msgspec.json.encode(Event(t_ns=1, stage="SUBMIT")) + b"\n"
    path.write_bytes(whole * 2 + whole[:17])
    with caplog.at_level("WARNING", logger="scheduler.timeline"):
        events = load_events(path)
    assert [e.stage for e in events] == ["SUBMIT", "SUBMIT"]
    assert any("last line" in r.getMessage() and str(path) in r.getMessage() for r in caplog.records), caplog.text


def test_a_bad_line_inside_names_its_number(tmp_path):
    """A damaged line that is not the last is an error (not skipped) that says which line."""
    path = tmp_path / "t.jsonl"
    whole = msgspec.json.encode(Event(t_ns=1, stage="SUBMIT")) + b"\n"
    path.write_bytes(whole + b"{\"t_ns\": \n" + whole)
    with pytest.raises(msgspec.DecodeError, match="line 2"):
        load_events(path)


def test_perf_timeline_summarises_a_killed_runs_file(tmp_path):
    """perf/timeline.py said `error: ...: JSON is malformed` (exit 2) for a timeline whose last line was cut."""
    path = tmp_path / "t.jsonl"
    lines = [Event(t_ns=10, stage="SUBMIT", job=0, partition=0), Event(t_ns=20, stage="DONE", job=0, partition=0)]
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in lines) + b'{"t_ns": 3')
    proc = subprocess.run([sys.executable, str(REPO / "perf" / "timeline.py"), str(path), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert msgspec.json.decode(proc.stdout)["proofs_done"] == 1
    assert "last line" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_full_disk_mid_line_leaves_no_cut_line(tmp_path, monkeypatch):
    """A short write (the disk filled in the middle of a line) is taken back: the file keeps whole lines."""
    path = tmp_path / "t.jsonl"
    sink = JsonlSink(path)
    sink(Event(t_ns=1, stage="SUBMIT"))
    fileio_write = type(sink._file).write
    calls = []

    def write_once_short(self, data):
        calls.append(len(data))
        if len(calls) == 1:
            return fileio_write(self, bytes(data)[:20])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sink, "_file", _Wrapped(sink._file, write_once_short))
    sink(Event(t_ns=2, stage="DONE", detail="y" * 50))
    sink.close()
    assert isinstance(sink.error, OSError) and sink.error.errno == 28
    assert [e.stage for e in load_events(path)] == ["SUBMIT"]
    assert path.read_bytes().endswith(b"\n")


class _Wrapped:
    """A file whose write is replaced (FileIO's own attributes cannot be)."""

    def __init__(self, f, write):
        self._f, self._write = f, write

    def write(self, data):
        return self._write(self._f, data)

    def __getattr__(self, name):
        return getattr(self._f, name)


def test_perf_timeline_asked_for_a_chart_of_no_events_says_so(tmp_path):
    """A timeline with no whole line (a run killed at once) and --gantt: a ValueError traceback (min() of none)."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"t_ns": 3')
    proc = subprocess.run([sys.executable, str(REPO / "perf" / "timeline.py"), str(path), "--gantt",
                           str(tmp_path / "g.png")], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2 and f"error: {path}: no events to draw" in proc.stderr, (proc.returncode, proc.stderr)
    assert not (tmp_path / "g.png").exists()
