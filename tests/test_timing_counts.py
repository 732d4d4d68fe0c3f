"""A proof's timings hold two counts (gpu_batch, gpu_fold) beside its seconds: sums of stages skip them and
--verbose prints them as counts (a fold of 13 once read as 13000 ms, and perf/prove.py's GPU sum as 29 s)."""
from __future__ import annotations

from engine.progress import COUNTS, format_timings, stage_seconds


def test_counts_are_not_seconds():
    timings = {"gpu_upload": 0.0005, "gpu_msm_h": 0.002, "gpu_fold": 13, "gpu_batch": 4}
    assert stage_seconds(timings) == {"gpu_upload": 0.0005, "gpu_msm_h": 0.002}
    assert sum(stage_seconds(timings).values()) == 0.0025
    table = format_timings({**timings, "  gpu_fold": 1})
    rows = [line.split() for line in table.splitlines()[1:]]
    assert ["gpu_fold", "13"] in rows and ["gpu_fold", "1"] in rows and ["gpu_upload", "0.50", "ms"] in rows
    assert {"gpu_batch", "gpu_fold"} <= COUNTS


def test_the_pipeline_puts_no_other_count_in_timings():
    """Every non-duration key the GPU pipeline writes is in COUNTS (the pipeline's own source)."""
    import re
    from pathlib import Path

    from conftest import REPO

    text = (REPO / "engine" / "backends" / "gpu" / "pipeline.py").read_text()
    keys = set(re.findall(r'timings\["(gpu_\w+)"\] = (?!.*elapsed_ms|check)', text))
    assert keys <= COUNTS, keys - COUNTS
