""""-" as a file name on the command line.  snarkjs has no such convention and the engine reads and writes
files: "-" as an input was "error: -: no such file" (no hint that /dev/stdin works), and as an output it silently
wrote a file named "-" in the working directory, which the next `info -` then read.  Each is now refused before
any work with one line that names the way that works (/dev/stdin, /dev/stdout, ./- for a file named "-")."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, REPO

TINY = FIXTURES / "tiny" / "bn128"
INPUT = FIXTURES / "tiny" / "input.json"
ZKEY, WTNS, WASM, VKEY = TINY / "tiny.zkey", TINY / "tiny.wtns", TINY / "tiny.wasm", TINY / "verification_key.json"
PROOF, PUBLIC = TINY / "proof.json", TINY / "public.json"


def _run(tmp_path, argv: list, stdin_path=None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with open(stdin_path or os.devnull, "rb") as stdin:
        return subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], cwd=tmp_path, env=env, stdin=stdin,
                              capture_output=True, text=True, timeout=timeout)


INPUTS = {
    "prove-key": (["prove", "-", WTNS, "p.json", "q.json"], ZKEY),
    "prove-witness": (["prove", ZKEY, "-", "p.json", "q.json"], WTNS),
    "prove-witness-engine": (["prove", ZKEY, "-", "p.json", "q.json", "--backend", "cpu", "--compute-slots", "1"],
                             WTNS),
    "prove-witness-server": (["prove", ZKEY, "-", "p.json", "q.json", "--server", "http://127.0.0.1:9"], WTNS),
    "prove-input": (["prove", ZKEY, "--wasm", WASM, "--input", "-", "p.json", "q.json"], INPUT),
    "verify-vkey": (["verify", "-", PUBLIC, PROOF], VKEY),
    "verify-proof": (["verify", VKEY, PUBLIC, "-"], PROOF),
    "witness-input": (["witness", WASM, "-", "w.wtns"], INPUT),
    "export-vkey": (["export-vkey", "-", "vk.json"], ZKEY),
}


@pytest.mark.parametrize("case", sorted(INPUTS))
def test_dash_as_an_input_is_refused_with_the_way_to_read_stdin(tmp_path, case):
    argv, source = INPUTS[case]
    result = _run(tmp_path, argv, source)
    lines = result.stderr.splitlines()
    assert (result.returncode, len(lines)) == (2, 1), result.stderr
    assert lines[0].startswith("error: -: ") and "/dev/stdin" in lines[0], lines
    assert os.listdir(tmp_path) == []


def test_dash_for_info_says_to_give_the_files_path(tmp_path):
    result = _run(tmp_path, ["info", "-"], ZKEY)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("error: -: ") and "give the file's path" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


OUTPUTS = {
    "prove-proof": ["prove", ZKEY, WTNS, "-", "q.json"],
    "prove-public": ["prove", ZKEY, WTNS, "p.json", "-"],
    "prove-public-server": ["prove", ZKEY, WTNS, "p.json", "-", "--server", "http://127.0.0.1:9"],
    "witness": ["witness", WASM, INPUT, "-"],
    "export-vkey": ["export-vkey", ZKEY, "-"],
}


@pytest.mark.parametrize("case", sorted(OUTPUTS))
def test_dash_as_an_output_is_refused_not_written_as_a_file_named_dash(tmp_path, case):
    result = _run(tmp_path, OUTPUTS[case])
    lines = result.stderr.splitlines()
    assert (result.returncode, len(lines)) == (2, 1), result.stderr
    assert lines[0].startswith("error: -: ") and "/dev/stdout" in lines[0], lines
    assert os.listdir(tmp_path) == []


def test_a_file_named_dash_is_still_read_as_dot_slash_dash(tmp_path):
    (tmp_path / "-").write_bytes(ZKEY.read_bytes())
    result = _run(tmp_path, ["info", "./-", "--json"])
    assert result.returncode == 0 and '"kind": "zkey"' in result.stdout, result.stderr


SERVE = {
    "config": (["--config", "-"], "/dev/stdin"),
    "token-file": (["--token-file", "-"], "/dev/stdin"),
    "timeline": (["--timeline", "-"], "/dev/stdout"),  # was a file named "-", written while it served
}


@pytest.mark.parametrize("case", sorted(SERVE))
def test_dash_for_serves_files_is_refused_before_it_listens(tmp_path, case):
    flags, device = SERVE[case]
    result = _run(tmp_path, ["serve", "--backend", "cpu", "--host", "127.0.0.1", "--port", "0", *flags], timeout=30)
    lines = result.stderr.splitlines()
    assert (result.returncode, len(lines)) == (2, 1), result.stderr
    assert lines[0].startswith("error: -: ") and device in lines[0], lines
    assert os.listdir(tmp_path) == []
