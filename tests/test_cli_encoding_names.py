"""File names that are not plain ASCII, under standard streams whose encoding cannot take them.

With PYTHONIOENCODING=ascii (or latin-1, or a UTF-8 locale outside Python's UTF-8 mode, whose stdout is strict),
`info ø.zkey` and `info $'\\xff.zkey'` ended in a UnicodeEncodeError traceback; an error line showed the byte
0xff of a name as `\\udcff` (Python's internal surrogate); a literal backslash in a name could not be told from
an escaped control character; and a --json progress line carried `\\xe9` (no JSON escape) on an ASCII stderr
or was dropped (a name with a byte that is not UTF-8)."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO
from engine.progress import JsonProgress

SUDOKU = EXAMPLES / "bn128"


def _engine(tmp_path, *argv, env=None):
    """`python -m engine ARGV` in tmp_path, with bytes argv allowed; stdout and stderr as bytes."""
    return subprocess.run([sys.executable, "-m", "engine", *argv], stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "utf-8"])
def test_info_of_names_the_stdout_encoding_cannot_take(tmp_path, encoding):
    for name in ("ø—.zkey", b"\xff.zkey"):
        shutil.copy(SUDOKU / "sudoku.zkey", tmp_path / os.fsdecode(name))
        proc = _engine(tmp_path, "info", name, env={"PYTHONIOENCODING": encoding})
        assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
        first = proc.stdout.splitlines()[0]
        if isinstance(name, bytes):  # the byte as an escape, as in the error lines (engine.paths.shown)
            assert first.endswith(b" \\xff.zkey"), first
        else:
            assert first.endswith(" ø—.zkey".encode(encoding, "backslashreplace")), first


def test_a_folder_with_a_byte_that_is_not_utf8_is_printed_as_its_bytes(tmp_path):
    """`cache path` is read by scripts ($(python -m engine cache path)): the name must come back whole."""
    folder = os.path.join(os.fsencode(tmp_path), b"keys\xff")
    proc = _engine(tmp_path, "cache", "path", "--dir", folder, env={"PYTHONIOENCODING": "utf-8"})
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stdout == folder + b"\n"


@pytest.mark.parametrize("env", [{}, {"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}])
def test_an_error_line_shows_a_byte_that_is_not_utf8_as_that_byte(tmp_path, env):
    proc = _engine(tmp_path, "info", b"\xff.zkey", env=env)
    assert proc.returncode == 2
    assert proc.stderr == b"error: \\xff.zkey: no such file\n"


def test_a_literal_backslash_is_told_apart_from_a_control_character(tmp_path):
    literal = _engine(tmp_path, "info", "a\\nb.zkey")
    newline = _engine(tmp_path, "info", "a\nb.zkey")
    assert literal.returncode == newline.returncode == 2
    assert newline.stderr == b"error: a\\nb.zkey: no such file\n"
    assert literal.stderr == b"error: a\\\\nb.zkey: no such file\n"


def test_an_output_folder_that_does_not_exist_is_named_on_one_line(tmp_path):
    proc = _engine(tmp_path, "witness", SUDOKU / "sudoku.wasm", SUDOKU / "input.json", b"new\ndir\\x\xff/w.wtns")
    assert proc.returncode == 2
    lines = proc.stderr.decode().splitlines()
    folder = "new\\ndir\\\\x\\xff"  # the newline, the backslash and the byte 0xff, each one way
    assert lines == [f"error: {folder}/w.wtns: cannot write: the folder {tmp_path}/{folder} does not exist"], lines


@pytest.mark.parametrize("encoding", ["ascii", "utf-8"])
def test_a_json_progress_line_is_json_whatever_the_stream_and_the_text(encoding):
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace", write_through=True)
    progress = JsonProgress(stream)
    texts = ["é.wasm: log: hi 7", "\udcff.wasm: log: hi 7", "plain"]
    for text in texts:
        progress.event("log", text=text)
    events = [json.loads(line) for line in raw.getvalue().decode(encoding).splitlines()]
    assert [e["text"] for e in events] == texts


def test_a_usage_error_shows_an_argument_with_control_characters_on_one_line(tmp_path):
    """argparse's "unrecognized arguments: ..." printed the argument as it was: a newline split the line and an
    escape sequence drove the terminal."""
    proc = _engine(tmp_path, "info", "a", b"b\nc\x1b[31m\xff")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == b"python -m engine info: error: unrecognized arguments: b\\nc\\x1b[31m\\xff"


def test_a_file_name_that_starts_with_a_dash_is_explained(tmp_path):
    """`info -k.zkey` said "the following arguments are required: file" although a file was given: argparse read
    it as an option.  The line says so and how to give it."""
    shutil.copy(SUDOKU / "sudoku.zkey", tmp_path / "-k.zkey")
    proc = _engine(tmp_path, "info", "-k.zkey")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (b'python -m engine info: error: the following arguments are required: '
                                            b'file (-k.zkey was read as an option: give a file whose name starts '
                                            b'with "-" as ./-k.zkey, or after --)')
    proc = _engine(tmp_path, "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "-p.json", "pub.json")
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1].endswith(
        b'(-p.json was read as an option: give a file whose name starts with "-" as ./-p.json, or after --)')
    assert _engine(tmp_path, "info", "--", "-k.zkey").returncode == 0
