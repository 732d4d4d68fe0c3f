"""Output names of odd shapes: over NAME_MAX, in a working directory deeper than PATH_MAX, ending in "/", under a
file.

`prove k.zkey w.wtns out/ pub.json` wrote the proof as a file named `out` (the "/" that says "a folder" was
dropped on the way), and `f.txt/p.json` said that the folder f.txt "does not exist" when it is a file.

An output name of 256 bytes was refused only after the proof (minutes at 2^24 on a CPU), although nothing can
be made under it; and in a working directory whose absolute path is over PATH_MAX (4096 bytes), where
relative names work, every relative output was refused as "the folder ... does not exist" (the check, then the
write, went through the absolute path, which the kernel refuses)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

SUDOKU = EXAMPLES / "bn128"
LEVEL = "d" * 200


def test_an_output_name_over_name_max_is_refused_before_any_work(tmp_path):
    name = "p" * 251 + ".json"  # 256 bytes
    proc = subprocess.run([sys.executable, "-m", "engine", "prove", str(SUDOKU / "sudoku.zkey"),
                           str(SUDOKU / "sudoku.wtns"), name, "pub.json", "--backend", "cpu", "--json"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2, proc.stderr
    events = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [e["event"] for e in events] == ["error"], events  # not a stage: no key read, no proof
    assert events[0]["message"] == f"{name}: cannot write: File name too long"
    assert os.listdir(tmp_path) == []


def _deep_fd(tmp_path, make: bool = False) -> int:
    """A descriptor of the folder under tmp_path whose absolute path is over PATH_MAX (24 * 201 bytes)."""
    fd = os.open(tmp_path, os.O_RDONLY)
    for _ in range(24):
        if make:
            os.mkdir(LEVEL, dir_fd=fd)
        new = os.open(LEVEL, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = new
    return fd


def _in_deep(tmp_path, *argv) -> subprocess.CompletedProcess:
    """`python -m engine ARGV` whose working directory is the deep folder (entered by descriptor: no shell's cd,
    nor subprocess's cwd, takes a path that long)."""
    fd = _deep_fd(tmp_path, make=True)
    try:
        return subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120, preexec_fn=lambda: os.fchdir(fd),
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(fd)


def _read_deep(tmp_path, name: str) -> bytes:
    fd = _deep_fd(tmp_path)
    try:
        with open(os.open(name, os.O_RDONLY, dir_fd=fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def test_relative_outputs_in_a_working_directory_deeper_than_path_max(tmp_path):
    proc = _in_deep(tmp_path, "witness", SUDOKU / "sudoku.wasm", SUDOKU / "input.json", "w.wtns")
    assert proc.returncode == 0, proc.stderr[:300]
    assert _read_deep(tmp_path, "w.wtns") == (SUDOKU / "sudoku.wtns").read_bytes()


def _witness(tmp_path, output) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "witness", str(SUDOKU / "sudoku.wasm"),
                           str(SUDOKU / "input.json"), output], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_an_output_name_ending_in_a_slash_is_a_folder_not_a_file(tmp_path):
    for name in ("out/", "out/.", "out/.."):
        proc = _witness(tmp_path, name)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == f"error: {name}: cannot write: there is no folder {name} (a name that ends in " \
                              '"/", "/." or "/.." names a folder, not a file)\n'
        assert os.listdir(tmp_path) == []


def test_an_output_under_a_file_says_that_the_file_is_no_folder(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    proc = _witness(tmp_path, "f.txt/w.wtns")
    assert proc.returncode == 2
    assert proc.stderr == f"error: f.txt/w.wtns: cannot write: {tmp_path}/f.txt is a file, not a folder\n"
    assert (tmp_path / "f.txt").read_text() == "x"


def test_the_api_does_not_write_a_folder_name_as_a_file(tmp_path, monkeypatch):
    """Proof.write("out/", ...) (engine/file_writes.py, under every writer) made a file `out` too."""
    from engine.errors import InputFileError  # noqa: PLC0415
    from engine.file_writes import write_files  # noqa: PLC0415

    monkeypatch.chdir(tmp_path)
    for name in ("out/", "out/.", b"out/"):
        with pytest.raises(InputFileError, match="names a folder, not a file"):
            write_files([(name, "{}")])
        assert os.listdir(tmp_path) == []
