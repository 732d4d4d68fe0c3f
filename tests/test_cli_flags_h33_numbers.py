"""A negative number that argparse reads as an option (`--idle-timeout -1.5e3`, `-inf`): the usage error said to
give "a file whose name starts with -" as ./-1.5e3, or nothing; it now says how to give the number."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "GROTH16_KEY_CACHE": "off"})


@pytest.mark.parametrize("argv, flag, value", [
    (["serve", "--idle-timeout", "-1.5e3"], "--idle-timeout", "-1.5e3"),
    (["serve", "--default-deadline", "-inf"], "--default-deadline", "-inf"),
    (["info", "--proofs", "-1e3", str(EXAMPLES / "bn128" / "sudoku.zkey")], "--proofs", "-1e3"),
])
def test_a_negative_number_read_as_an_option_says_how_to_give_it(argv, flag, value):
    p = cli(*argv)
    assert p.returncode == 2, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert f"argument {flag}: expected one argument" in last, last
    assert f"write {flag}={value}" in last and "./" not in last, last


def test_a_file_named_with_a_dash_still_gets_its_hint(tmp_path):
    p = cli("info", "-k.zkey")
    assert p.returncode == 2 and "./-k.zkey" in p.stderr, p.stderr
