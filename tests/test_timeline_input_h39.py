"""Malformed timelines given to the reader (scheduler.timeline.load_events, perf/timeline.py, perf/timeline_gaps.py).

A line of a stage the engine never writes (a typo, another tool's name) was read without a word and dropped out
of every figure; a negative stamp and an end stamped before its start went into the figures as they were (a
negative latency); an empty file was summarised as a run of nothing.  Each is now one error naming the line (or
a warning, for the empty file a killed run can leave)."""
from __future__ import annotations

import asyncio
import subprocess
import sys

import msgspec
import pytest

from conftest import REPO
from scheduler.timeline import Event, Stage, load_events, summarize


def _write(tmp_path, *lines: str | Event) -> str:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join((msgspec.json.encode(x) if isinstance(x, Event) else x.encode()) + b"\n"
                              for x in lines))
    return str(path)


START = Event(t_ns=1, stage=Stage.TIMELINE_START, detail="wall_ns=1")


@pytest.mark.parametrize(("stage", "words"), [
    ("SUBMT", "line 3: unknown stage 'SUBMT' (did you mean SUBMIT?)"),
    ("gpu_start", "line 3: unknown stage 'gpu_start' (did you mean GPU_START?)"),
    ("kernel-launch", "line 3: unknown stage 'kernel-launch' (not one of scheduler.timeline.Stage)"),
    ("", "line 3: unknown stage ''"),
])
def test_a_line_of_an_unknown_stage_is_an_error_naming_it(tmp_path, stage, words):
    path = _write(tmp_path, START, Event(t_ns=2, stage="SUBMIT", job=0, partition=0),
                  Event(t_ns=3, stage=stage, job=0, partition=0))
    with pytest.raises(msgspec.DecodeError) as info:
        load_events(path)
    assert str(info.value).startswith(words), info.value


@pytest.mark.parametrize(("line", "words"), [
    ("hello", "line 2: not a timeline event: JSON is malformed"),
    ('[1, 2]', "line 2: not a timeline event: Expected `object`, got `array`"),
    ('{"stage": "SUBMIT"}', "line 2: not a timeline event: Object missing required field `t_ns`"),
    ('{"t_ns": 5}', "line 2: not a timeline event: Object missing required field `stage`"),
    ('{"t_ns": "5", "stage": "SUBMIT"}', "line 2: not a timeline event: Expected `int`, got `str` - at `$.t_ns`"),
    ('{"t_ns": 5.5, "stage": "SUBMIT"}', "Expected `int`, got `float` - at `$.t_ns`"),
    ('{"t_ns": 5, "stage": 7}', "Expected `str`, got `int` - at `$.stage`"),
    ('{"t_ns": 5, "stage": "SUBMIT", "job": true}', "Expected `int`, got `bool` - at `$.job`"),
    ('{"t_ns": -5, "stage": "SUBMIT"}', "line 2: SUBMIT at t_ns=-5: a time.monotonic_ns() stamp is never negative"),
])
def test_a_malformed_line_is_an_error_naming_its_number(tmp_path, line, words):
    path = _write(tmp_path, START, line, Event(t_ns=9, stage="SUBMIT"))
    with pytest.raises(msgspec.DecodeError) as info:
        load_events(path)
    assert words in str(info.value), info.value


@pytest.mark.parametrize(("start", "end", "where"), [
    ("SUBMIT", "DONE", " of job 4 partition 2"),
    ("SUBMIT", "FAILED", " of job 4 partition 2"),
    ("GPU_START", "GPU_END", " of job 4 partition 2"),
    ("MEM_WAIT", "MEM_START", " of job 4 partition 2"),
    ("CALL_START", "CALL_END", " of job 4 partition 2"),
    ("JOB_SUBMIT", "JOB_DONE", " of job 4"),
])
def test_an_end_stamped_before_its_start_is_an_error(tmp_path, start, end, where):
    """summarize paired them anyway: DONE before SUBMIT was a negative latency in perf/timeline.py's table."""
    partition = -1 if start == "JOB_SUBMIT" else 2
    path = _write(tmp_path, START, Event(t_ns=500, stage=start, job=4, partition=partition),
                  Event(t_ns=700, stage="SUBMIT", job=5, partition=0),
                  Event(t_ns=400, stage=end, job=4, partition=partition))
    with pytest.raises(msgspec.ValidationError) as info:
        load_events(path)
    assert str(info.value) == (f"line 4: {end}{where} at t_ns=400 is before its {start} (line 2, t_ns=500): the "
                               "times go backwards")


def test_lines_out_of_time_order_are_a_real_runs_and_read(tmp_path):
    """A stage stamped on another thread (GPU_END by the waiter, CALL_START/END on the device thread) is written
    when the event loop hands it on, after later stamps of other partitions: that is no error."""
    events = [START, Event(10, "SUBMIT", 1, 0), Event(20, "GPU_START", 1, 0), Event(30, "SUBMIT", 2, 0),
              Event(21, "CALL_START", 1, 0), Event(25, "CALL_END", 1, 0), Event(28, "GPU_END", 1, 0),
              Event(40, "DONE", 1, 0)]
    assert load_events(_write(tmp_path, *events)) == events
    assert summarize(events).latency_p50_s == pytest.approx(30e-9)


def test_a_second_runs_lines_after_the_first_are_paired_on_their_own(tmp_path):
    """`--timeline /dev/stdout >> file` twice (the second after a reboot: smaller stamps, the same job numbers);
    the first run killed between its GPU_START and GPU_END."""
    events = [START, Event(900, "SUBMIT", 1, 0), Event(950, "GPU_START", 1, 0),
              Event(5, "TIMELINE_START", detail="wall_ns=2"), Event(10, "SUBMIT", 1, 0), Event(20, "GPU_START", 1, 0),
              Event(30, "GPU_END", 1, 0), Event(40, "DONE", 1, 0)]
    assert load_events(_write(tmp_path, *events)) == events


def test_key_loads_of_several_keys_may_overlap(tmp_path):
    """Stages outside a job are not paired: two keys' loads interleave (job -1 both)."""
    events = [START, Event(10, "KEY_LOAD_START", key="a"), Event(20, "KEY_LOAD_START", key="b"),
              Event(15, "KEY_LOAD_END", key="a"), Event(30, "KEY_LOAD_END", key="b")]
    assert load_events(_write(tmp_path, *events)) == events


def test_an_empty_file_is_no_events_with_a_warning(tmp_path, caplog):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n  \n")
    with caplog.at_level("WARNING", logger="scheduler.timeline"):
        assert load_events(path) == []
    assert any("holds no events" in r.getMessage() and str(path) in r.getMessage() for r in caplog.records)


def test_perf_timeline_says_the_unknown_stage_in_one_line(tmp_path):
    path = _write(tmp_path, START, Event(t_ns=2, stage="SUBMIT", job=0, partition=0),
                  Event(t_ns=3, stage="DONNE", job=0, partition=0))
    proc = subprocess.run([sys.executable, str(REPO / "perf" / "timeline.py"), path],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: {path}: line 3: unknown stage 'DONNE' (did you mean DONE?)\n"


def test_a_busy_simulated_runs_timeline_reads_whole(tmp_path):
    """Two devices, two slots each, jitter, two jobs cancelled mid-way: every line passes the reader's checks."""
    from engine.api import Engine
    from engine.config import EngineConfig, SimulationConfig

    path = str(tmp_path / "run.jsonl")
    sim = SimulationConfig(devices=2, witness_rows=64, synth_ms=1, upload_ms=1, stage_host_ms=0, gpu_ms=3,
                           epilogue_ms=0, verify_ms=0, jitter=0.5)

    async def run():
        config = EngineConfig(backend="simulated", simulation=sim, timeline=path, idle_trim_s=None, compute_slots=2)
        async with Engine(config) as eng:
            key = await eng.load_key("k")
            jobs = [asyncio.create_task(eng.prove(key, partitions=[{} for _ in range(6)])) for _ in range(10)]
            await asyncio.sleep(0.01)  # (60 proofs of 3 ms on 4 slots: 45 ms at least)
            for job in jobs[-2:]:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)

    asyncio.run(run())
    events = load_events(path)
    s = summarize(events)
    assert s.proofs_done + s.cancelled == 60 and s.cancelled > 0 and s.failed == 0
    assert {Stage.GPU_END, Stage.CALL_START, Stage.JOB_CANCELLED} <= {e.stage for e in events}
