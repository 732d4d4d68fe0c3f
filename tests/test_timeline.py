"""The timeline: one JSON line per event, and the figures perf/ derives from it (design.md §7)."""
import importlib.util
import json
import subprocess
import sys

import msgspec
import pytest

from conftest import REPO
from scheduler.timeline import Event, Stage, Timeline, load_events, summarize, union_length

MS = 1_000_000


def _perf_module(name):
    spec = importlib.util.spec_from_file_location(f"perf_{name}", REPO / "perf" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_event_is_one_json_line_with_every_field(tmp_path):
    path = tmp_path / "t.jsonl"
    tl = Timeline.to_file(path)
    tl.emit(Stage.GPU_START, 3, 1, device=0, slot=1, bytes=1 << 30, key="k.zkey")
    tl.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 2  # TIMELINE_START (with the wall clock), then the event
    first, event = json.loads(lines[0]), json.loads(lines[1])
    assert first["stage"] == "TIMELINE_START" and first["detail"].startswith("wall_ns=")
    assert event == {"t_ns": event["t_ns"], "stage": "GPU_START", "job": 3, "partition": 1, "device": 0, "slot": 1,
                     "bytes": 1 << 30, "key": "k.zkey", "detail": ""}
    assert load_events(path)[1] == msgspec.json.decode(lines[1].encode(), type=Event)


def test_union_counts_overlapping_intervals_once():
    assert union_length([(0, 10), (5, 15), (20, 30), (25, 26)]) == 25
    assert union_length([]) == 0


def _partition(job, t0, gpu, device=0, slot=0, queue=0):
    """Events of one partition: submitted at t0, waits `queue` for the budget, runs on the GPU for gpu=(a, b)."""
    a, b = gpu
    return [
        Event(t0 * MS, Stage.SUBMIT, job, 0),
        Event(t0 * MS, Stage.BUDGET_WAIT, job, 0),
        Event((t0 + queue) * MS, Stage.BUDGET_GRANTED, job, 0, device=device),
        Event(a * MS, Stage.GPU_START, job, 0, device=device, slot=slot),
        Event(b * MS, Stage.GPU_END, job, 0, device=device, slot=slot),
        Event((b + 5) * MS, Stage.DONE, job, 0),
    ]


def test_summary_reports_throughput_latency_busy_fraction_and_waits():
    events = (
        _partition(1, 0, (10, 60), slot=0)
        + _partition(2, 0, (40, 90), slot=1, queue=20)  # overlaps job 1 on another slot
        + _partition(3, 100, (150, 195), device=1, queue=30)
    )
    s = summarize(events)
    assert s.proofs_done == 3 and s.failed == 0
    assert s.wall_s == pytest.approx(0.2)  # first SUBMIT at 0, last event at 200 ms
    assert s.proofs_per_min == pytest.approx(3 * 60 / 0.2)
    assert s.gpu_busy_by_device == {0: pytest.approx(80 / 200), 1: pytest.approx(45 / 200)}
    assert s.latency_p50_s == pytest.approx(0.095)
    assert s.queue_wait_p50_s == pytest.approx(0.020)
    assert s.stage_p50_s["gpu"] == pytest.approx(0.050)


async def test_perf_timeline_analyses_an_engine_timeline_and_draws_a_gantt(tmp_path, capsys):
    from engine.api import Engine
    from engine.config import EngineConfig, SimulationConfig

    path = tmp_path / "run.jsonl"
    sim = SimulationConfig(witness_rows=64, synth_ms=1, upload_ms=1, stage_host_ms=0, gpu_ms=5, epilogue_ms=0,
                           verify_ms=0)
    async with Engine(EngineConfig(backend="simulated", simulation=sim, timeline=str(path), idle_trim_s=None)) as eng:
        key = await eng.load_key("k")
        await eng.prove(key, partitions=[{} for _ in range(6)])
    tool = _perf_module("timeline")
    png = tmp_path / "gantt.png"
    assert tool.main([str(path), "--gantt", str(png)]) == 0
    out = capsys.readouterr().out
    assert "proofs done      6" in out and "GPU busy" in out
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    assert tool.main([str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["proofs_done"] == 6


@pytest.mark.slow
def test_simulated_sweep_prints_a_table_and_writes_pngs(tmp_path):
    out = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, str(REPO / "perf" / "sweep.py"), "--simulate", "--proofs", "6", "--concurrency", "1,3",
         "--slots", "1", "--modes", "single,split", "--sim-gpu-ms", "5", "--sim-upload-ms", "3",
         "--sim-synth-ms", "2", "--synthesis-workers", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED device" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| s")]
    assert len(rows) == 4 and all("|      6 |" in row for row in rows)
    for name in ("gantt.png", "throughput.png", "sweep.json", "timeline-split-s1-c3.jsonl"):
        assert (out / name).stat().st_size > 0
