"""perf/sweep.py --cpu and perf/timeline_gaps.py on a simulated run: the device-thread calls stamped in the
timeline (CALL_START/CALL_END), each thread group's CPU time, and the analysis's tables from them."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO


def test_a_sweeps_timelines_give_the_gaps_tables(tmp_path):
    out = tmp_path / "sweep"
    run = subprocess.run(
        [sys.executable, str(REPO / "perf" / "sweep.py"), "--simulate", "--proofs", "12", "--concurrency", "4",
         "--slots", "1", "--modes", "split", "--sim-gpu-ms", "2", "--sim-synth-ms", "1", "--sim-upload-ms", "0.5",
         "--sim-epilogue-ms", "0", "--sim-verify-ms", "0", "--cpu", "--no-plots", "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=REPO)
    assert run.returncode == 0, run.stderr
    assert "| MainThread | 1 |" in run.stdout and "(synthesis workers)" in run.stdout
    assert not (out / "gantt.png").exists()  # --no-plots
    extras = json.loads((out / "extras-split-s1-c4.json").read_text())
    assert extras["cpu"]["wall_s"] > 0 and "MainThread" in extras["cpu"]["threads"]
    lines = (out / "timeline-split-s1-c4.jsonl").read_text().splitlines()
    calls = [json.loads(x) for x in lines if '"CALL_' in x]
    stage = [c for c in calls if c["detail"] == "stage"]
    assert len(stage) == 2 * 12 and all(c["t_ns"] > 0 for c in stage)  # a start and an end a proof
    gaps = subprocess.run([sys.executable, str(REPO / "perf" / "timeline_gaps.py"), str(out)],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert gaps.returncode == 0, gaps.stderr
    text = gaps.stdout
    assert "### split-s1-c4" in text and "12 proofs in" in text and "proofs/s" in text
    assert "| stage: on device thread |" in text and "| thread group |" in text


def test_a_bad_or_empty_timeline_is_one_error_line_not_a_traceback(tmp_path):
    """A line of an unknown stage (load_events' ValidationError) and a run with no proof (min() of nothing) were
    tracebacks; each is now `error: FILE: ...` and exit 2, the empty file's warning first."""
    timeline = tmp_path / "timeline-a.jsonl"
    cases = (('{"stage":"SUBMT","job":1,"partition":0,"t_ns":5}\n',
              [f"error: {timeline}: line 1: unknown stage 'SUBMT' (did you mean SUBMIT?)"]),
             ("", [f"warning: timeline {timeline}: holds no events (a run killed before its first line?)",
                   f"error: {timeline}: no proof submitted in it: nothing to analyse"]))
    for text, lines in cases:
        timeline.write_text(text)
        gaps = subprocess.run([sys.executable, str(REPO / "perf" / "timeline_gaps.py"), str(tmp_path)],
                              capture_output=True, text=True, timeout=60, cwd=REPO)
        assert (gaps.returncode, gaps.stdout, gaps.stderr.splitlines()) == (2, "", lines), gaps.stderr
