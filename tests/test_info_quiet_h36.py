"""`info --quiet`, as every other command's: nothing printed on success (the exit code says the file reads as its
kind), errors still one line; --quiet with --json is a usage error, as elsewhere.  `info --quiet` was a usage error
("unrecognized arguments: --quiet")."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import EXAMPLES, FIXTURES, REPO

BN128 = EXAMPLES / "bn128"
FILES = [BN128 / "sudoku.zkey", BN128 / "sudoku.wtns", BN128 / "sudoku.r1cs", BN128 / "public.json",
         BN128 / "proof.json", BN128 / "verification_key.json", BN128 / "input.json"]


def run_inproc(capsys, *args) -> tuple[int, str, str]:
    from cli import main

    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_info_quiet_prints_nothing_for_a_good_file(capsys, path):
    assert run_inproc(capsys, "info", "--quiet", path) == (0, "", "")


def test_info_quiet_still_plans_a_keys_footprint(capsys):
    """--vram-budget and --proofs are still read (and a bad one refused) where nothing is printed."""
    assert run_inproc(capsys, "info", "--quiet", BN128 / "sudoku.zkey", "--vram-budget", "8GiB", "--proofs", "2") \
        == (0, "", "")
    code, out, err = run_inproc(capsys, "info", "--quiet", BN128 / "sudoku.zkey", "--vram-budget", "lots")
    assert (code, out) == (2, "") and err == "error: --vram-budget: 'lots' is not a size (examples: 8GiB, 512MiB, " \
        "1.5G, 1000000)\n"


@pytest.mark.parametrize("args, words", [
    (["/nonexistent/k.zkey"], "/nonexistent/k.zkey: no such file"),
    ([BN128 / "public.json", "--proofs", "2"], "--proofs plans a key's GPU footprint"),
])
def test_info_quiet_still_reports_errors(capsys, args, words):
    code, out, err = run_inproc(capsys, "info", "--quiet", *args)
    assert (code, out) == (2, "") and err.startswith("error: ") and words in err and err.count("\n") == 1, err


def test_info_quiet_of_a_corrupt_file_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.zkey"
    bad.write_bytes((BN128 / "sudoku.zkey").read_bytes()[:200])
    code, out, err = run_inproc(capsys, "info", "--quiet", bad)
    assert (code, out) == (2, "") and err.startswith(f"error: {bad}: ") and err.count("\n") == 1, err


def test_info_quiet_and_json_together_are_a_usage_error_as_for_every_command():
    p = subprocess.run([sys.executable, "-m", "engine", "info", "--quiet", "--json", str(FILES[0])], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (2, "")
    lines = [json.loads(line) for line in p.stderr.splitlines()]  # --json: stderr holds JSON objects only
    assert [(e["event"], e["error"]) for e in lines] == [("error", "UsageError")]
    assert "--quiet" in lines[0]["message"]


def test_info_json_still_prints_its_one_line(capsys):
    code, out, err = run_inproc(capsys, "info", "--json", FIXTURES / "tiny" / "bn128" / "tiny.r1cs")
    assert (code, err) == (0, "") and json.loads(out)["kind"] == "r1cs" and out.count("\n") == 1


def test_info_help_says_quiet_prints_nothing(capsys):
    with pytest.raises(SystemExit):
        run_inproc(capsys, "info", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "[--quiet | --json]" in text and "--quiet nothing printed on success" in text
