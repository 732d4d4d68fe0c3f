"""A command's own lines that name a file (`wrote NAME: ...`, info's `file:` and `names:`, verify's reason) on one
line each, whatever the name holds.

A newline in the name split `wrote ...` in two lines, and info printed an input.json's signal names as they were:
a newline started a line of its own, an escape sequence drove the terminal."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import EXAMPLES, REPO

SUDOKU = EXAMPLES / "bn128"
ODD = "k\ney\\"  # a newline and a backslash: shown as k\ney\\ (each escape reads one way)
SHOWN = "k\\ney\\\\"


def _engine(tmp_path, *argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_setup_names_an_odd_key_on_one_line(tmp_path):
    proc = _engine(tmp_path, "setup", SUDOKU / "sudoku.r1cs", ODD + ".zkey")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {SHOWN}.zkey: bn128, domain 2^8,") and proc.stdout.count("\n") == 1
    assert (tmp_path / (ODD + ".zkey")).stat().st_size > 0


def test_bench_circuit_names_an_odd_folder_on_one_line(tmp_path):
    (tmp_path / ODD).mkdir()
    proc = _engine(tmp_path, "bench-circuit", "--constraints", "4", ODD)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {SHOWN}/bench.r1cs and {SHOWN}/bench.wtns: bn128, 4 constraints")
    assert proc.stdout.count("\n") == 1


def test_info_shows_an_odd_name_and_odd_signal_names_one_line_each(tmp_path):
    (tmp_path / (ODD + ".json")).write_text(json.dumps({"a\nb\x1b[31m": 1}))
    proc = _engine(tmp_path, "info", ODD + ".json")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split(None, 1) == ["file:", SHOWN + ".json"]
    assert lines[-1].split(None, 1) == ["names:", "a\\nb\\x1b[31m"]
    assert "\x1b" not in proc.stdout


def test_verify_names_an_odd_proof_on_one_line_with_its_problem(tmp_path):
    proof = json.loads((SUDOKU / "proof.json").read_text())
    proof["pi_a"][0] = "1"  # off the curve
    (tmp_path / (ODD + ".json")).write_text(json.dumps(proof))
    proc = _engine(tmp_path, "verify", SUDOKU / "verification_key.json", SUDOKU / "public.json", ODD + ".json")
    assert (proc.returncode, proc.stdout) == (1, "Invalid proof\n"), proc.stderr
    assert proc.stderr.startswith(f"{SHOWN}.json: ") and proc.stderr.count("\n") == 1, proc.stderr


def test_cache_names_an_odd_folder_on_one_line(tmp_path):
    for action in ("list", "clear"):
        proc = _engine(tmp_path, "cache", action, "--dir", tmp_path / ODD)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"{tmp_path}/{SHOWN}: ") and proc.stdout.count("\n") == 1, proc.stdout
    proc = _engine(tmp_path, "cache", "path", "--dir", tmp_path / ODD)  # for scripts: the name as it is
    assert proc.stdout == f"{tmp_path}/{ODD}\n"
