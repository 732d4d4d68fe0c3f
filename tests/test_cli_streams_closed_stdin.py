"""An input named /dev/stdin (or /dev/fd/0) when the command was started without a standard input (`<&-`).

engine/__main__ opens /dev/null on a closed descriptor 0, and the input was then read as that device: "is not a
file or a pipe (a device or a socket)", "not valid JSON", "the file is empty", none of which names the problem."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

SUDOKU = EXAMPLES / "bn128"


def _engine_without_stdin(tmp_path, *argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, preexec_fn=lambda: os.close(0),
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("name", ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"])
@pytest.mark.parametrize("argv", [
    ["prove", SUDOKU / "sudoku.zkey", "{}", "p.json", "pub.json", "--backend", "cpu"],
    ["prove", SUDOKU / "sudoku.zkey", "--wasm", SUDOKU / "sudoku.wasm", "--input", "{}", "p.json", "pub.json"],
    ["witness", SUDOKU / "sudoku.wasm", "{}", "w.wtns"],
    ["verify", SUDOKU / "verification_key.json", "{}", SUDOKU / "proof.json"],
    ["export-vkey", "{}", "vk.json"],
    ["setup", "{}", "k.zkey"],
    ["info", "{}"],
], ids=["prove", "prove --input", "witness", "verify", "export-vkey", "setup", "info"])
def test_an_input_on_a_closed_stdin_is_named_as_such(tmp_path, argv, name):
    proc = _engine_without_stdin(tmp_path, *[name if a == "{}" else a for a in argv])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"error: {name}: cannot read: standard input is closed\n"
    assert os.listdir(tmp_path) == []


def test_an_open_stdin_is_still_read(tmp_path):
    with open(SUDOKU / "public.json", "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "engine", "verify", str(SUDOKU / "verification_key.json"),
                               "/dev/stdin", str(SUDOKU / "proof.json")], stdin=stdin, capture_output=True, text=True,
                              timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (proc.returncode, proc.stdout) == (0, "OK!\n"), proc.stderr
