"""The GPU benchmarks in perf/ on a machine without a CUDA device: one line naming the script, exit 2.

Twenty of them printed the driver's traceback (DynamicLibNotFoundError, or BackendUnavailableError from the
engine).  CUDA_VISIBLE_DEVICES="" hides any device, so this holds on a GPU machine too.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

ZKEY, WTNS = str(EXAMPLES / "bn128" / "sudoku.zkey"), str(EXAMPLES / "bn128" / "sudoku.wtns")
KEYED = ["--zkey", ZKEY, "--wtns", WTNS]

SCRIPTS = {
    "batch_phases": [], "copy_pinned": [], "exit_handoff": [], "field_fq": [], "field_mul": [], "keyload": [],
    "launch_overhead": [], "msm": [], "ntt": [], "pairing_latency": [], "tables": [], "s30_overlap": [],
    "cli_start": [], "final_phase": KEYED, "proof_timeline": KEYED, "host_split": KEYED, "host_profile": KEYED,
    "s29_parts": KEYED, "cli_ab": [*KEYED, f"main={REPO}"], "cli_profile": [ZKEY, WTNS], "c2": KEYED,
    "tower_probe": ["time", str(REPO)],
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_gpu_benchmark_without_a_device_says_so_in_one_line(script, tmp_path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    r = subprocess.run([sys.executable, str(REPO / "perf" / f"{script}.py"), *SCRIPTS[script]], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and len(lines) == 1, r.stderr[-2000:]
    assert "CUDA device" in lines[0] and script in lines[0], lines


def test_tower_probe_without_a_command_prints_its_usage(tmp_path):
    """It indexed sys.argv[1] first: IndexError, a traceback."""
    r = subprocess.run([sys.executable, str(REPO / "perf" / "tower_probe.py")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr and r.stderr.startswith("usage"), r.stderr[-2000:]


@pytest.mark.snarkjs
def test_witness_memory_runs_from_another_directory(tmp_path):
    """circom2 runs under WASI: given the circuit's absolute path from another directory it found no include
    (CalledProcessError, a traceback); the script now compiles from the repository."""
    r = subprocess.run([sys.executable, str(REPO / "perf" / "witness_memory.py"), "--runs", "1"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout[-1000:], r.stderr[-2000:])
    assert "default" in r.stdout and "bounded" in r.stdout, r.stdout
