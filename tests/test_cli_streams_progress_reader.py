"""Standard streams that fail under a command: the progress stream's reader leaving must not cost the outputs.

`prove ... --json 2>&1 >result.json | head -1` (a script that watches the first progress event) ended the
command with 141 at its next progress line, before the proof was written: the progress stream's loss cost the
proof, although stdout (the result) and the output files were all still writable."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

SUDOKU = EXAMPLES / "bn128"


def _engine_with_stderr_reader_gone(tmp_path, *argv):
    """`python -m engine ARGV` whose stderr is a pipe with no reader, stdout a file: (returncode, stdout)."""
    read, write = os.pipe()
    os.close(read)  # the progress reader is gone before the first line
    out = tmp_path / "stdout.txt"
    try:
        with open(out, "wb") as stdout:
            proc = subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], stdin=subprocess.DEVNULL,
                                  stdout=stdout, stderr=write, timeout=300, cwd=tmp_path,
                                  env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(write)
    return proc.returncode, out.read_text()


@pytest.mark.parametrize("flag", ["--json", "--verbose"])
def test_prove_writes_its_proof_when_the_progress_reader_left(tmp_path, flag):
    code, stdout = _engine_with_stderr_reader_gone(
        tmp_path, "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "p.json", "pub.json", "--backend", "cpu",
        flag)
    assert code == 0, (code, stdout)
    assert json.loads((tmp_path / "p.json").read_text())["protocol"] == "groth16"
    assert json.loads((tmp_path / "pub.json").read_text()) == json.loads((SUDOKU / "public.json").read_text())
    if flag == "--json":
        assert json.loads(stdout.splitlines()[-1])["event"] == "result"


def test_witness_writes_its_file_when_the_progress_reader_left(tmp_path):
    code, stdout = _engine_with_stderr_reader_gone(
        tmp_path, "witness", SUDOKU / "sudoku.wasm", SUDOKU / "input.json", "w.wtns", "--json")
    assert code == 0, (code, stdout)
    assert (tmp_path / "w.wtns").read_bytes() == (SUDOKU / "sudoku.wtns").read_bytes()
    assert json.loads(stdout.splitlines()[-1])["event"] == "result"


def test_an_error_whose_stderr_reader_left_still_exits_non_zero(tmp_path):
    code, stdout = _engine_with_stderr_reader_gone(tmp_path, "info", tmp_path / "missing.zkey")
    assert code == 2 and stdout == "", (code, stdout)
