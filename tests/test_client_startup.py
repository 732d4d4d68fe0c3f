"""The CLI client's start: `python -m engine prove --server URL ...` loads only what one HTTP proof needs.

Against perf/instant_serve.py (the real service around an engine whose
proofs take no time, answering with the example sudoku proof), so these
tests need no key loaded and no proving.  Every subprocess runs with cwd =
the repo root, so it imports this tree's code."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, instant_server

SUDOKU = EXAMPLES / "bn128" / "sudoku"

# Modules the client command must not load: the engine's numeric side, CUDA, the server's stack, the
# stdlib HTTP client (http.client pulls email and ssl), asyncio, and the other commands' modules.
FORBIDDEN = ("numpy", "cuda", "msgspec", "anyio", "asyncio", "aiohttp", "prometheus_client", "wasmtime", "ssl",
             "http", "email", "urllib", "dataclasses", "engine.api", "engine.formats", "engine.groth16",
             "engine.backends", "engine.witness", "engine.config", "engine.service", "scheduler",
             "engine.commands.serve", "engine.commands.setup", "engine.commands.verify", "engine.commands.cache",
             "engine.commands.witness", "engine.commands.info",
             # cheap alone, not free on a slow machine: typing (4 ms here, most of `import engine`); shutil
             # (argparse's width, with bz2 and lzma; parsing.sized() finds the width without it); argparse
             # itself (a plain `prove --server` line is read by engine/client_argv.py)
             "typing", "shutil", "argparse", "gettext", "locale")

# What the interpreter had before the command (site's own, e.g. an editable install's finder) is not
# the command's.
PROBE = """
import sys
before = set(sys.modules)
import json
from cli import main
code = main(sys.argv[1:])
forbidden = %r
found = sorted(m for m in set(sys.modules) - before if any(m == f or m.startswith(f + ".") for f in forbidden))
print("PROBE", json.dumps({"code": code, "found": found}))
""" % (FORBIDDEN,)


@pytest.fixture(scope="module")
def instant(tmp_path_factory):
    with instant_server(tmp_path_factory) as url:
        yield url


def _client(url: str, out: Path, *extra: str, probe: bool = False) -> subprocess.CompletedProcess:
    argv = ["prove", "--server", url, *extra, f"{SUDOKU}.zkey", f"{SUDOKU}.wtns", str(out / "proof.json"),
            str(out / "public.json")]
    head = [sys.executable, "-c", PROBE] if probe else [sys.executable, "-m", "engine"]
    return subprocess.run(head + argv, cwd=REPO, capture_output=True, text=True, timeout=60)


def test_prove_server_loads_nothing_heavy_and_no_other_command(instant, tmp_path):
    r = _client(instant, tmp_path, probe=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.split("PROBE", 1)[1])
    assert out == {"code": 0, "found": []}, out
    # the files are snarkjs's text of the server's proof, byte for byte
    assert (tmp_path / "proof.json").read_text() == (SUDOKU.parent / "proof.json").read_text()
    assert (tmp_path / "public.json").read_text() == (SUDOKU.parent / "public.json").read_text()


def test_prove_server_json_stamps_split_the_command(instant, tmp_path):
    """--json gives the CLOCK_MONOTONIC stamps perf/serve.py splits the command's wall time at."""
    before = time.monotonic()
    r = _client(instant, tmp_path, "--json")
    after = time.monotonic()
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    stamps = result["monotonic"]
    assert before < stamps["first_request"] < stamps["answered"] < after
    assert result["event"] == "result" and result["curve"] == "bn128" and result["timings"]["total_s"] >= 0
    # the server's read of the upload, apart from the job's own time (perf/serve.py splits wire+service by it)
    upload_s, whole = result["timings"]["upload_s"], stamps["answered"] - stamps["first_request"]
    assert 0 < upload_s < whole and result["timings"]["submitted_at"] - upload_s > 0


@pytest.mark.parametrize("columns", [None, "", "abc", "-3", "0", "37", "200"])
def test_help_width_is_shutils_without_shutil(monkeypatch, columns):
    """parsing.terminal_columns() answers what shutil.get_terminal_size() would (argparse's width)."""
    import shutil

    from engine.commands import parsing

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert parsing.terminal_columns() == shutil.get_terminal_size().columns
    parser = parsing.Parser(prog="x")
    parser.add_argument("--flag", help="word " * 60)
    assert parser.format_help() == _shutil_sized_help("word " * 60)


def _shutil_sized_help(text: str) -> str:
    import argparse

    parser = argparse.ArgumentParser(prog="x")
    parser.add_argument("--flag", help=text)
    return parser.format_help()


def test_prove_server_parser_is_prove_s_own(instant, tmp_path):
    """Built alone, prove's parser still knows every flag: a local-only one is refused by name, a bad
    choice is argparse's usual error, --help is prove's."""
    r = _client(instant, tmp_path, "--r1cs", f"{SUDOKU}.r1cs")
    assert r.returncode == 2 and "--r1cs configures a local proof" in r.stderr
    r = _client(instant, tmp_path, "--priority", "urgent")
    assert r.returncode == 2 and "python -m engine prove: error: argument --priority" in r.stderr
    full = subprocess.run([sys.executable, "-m", "engine", "prove", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    alone = subprocess.run([sys.executable, "-m", "engine", "prove", "--server", instant, "--help"], cwd=REPO,
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode == full.returncode == 0 and alone.stdout == full.stdout


def test_only_command_picks_the_client_path():
    from cli import only_command

    assert only_command(["prove", "--server", "http://h:1", "k", "w", "p", "q"]) == "prove"
    assert only_command(["prove", "k", "--server=http://h:1"]) == "prove"
    assert only_command(["prove", "k", "w", "p", "q"]) is None
    assert only_command(["verify", "--server", "x"]) is None
    assert only_command([]) is None
