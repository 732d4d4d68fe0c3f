"""Two flags that set one value are one or the other: `prove --verify --no-verify` was taken, the last one
winning without a word; now argparse's usage error names both (prove, prove --server, serve), as
--key-cache-dir with --no-key-cache does since c232012."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

PROVE = ["prove", str(EXAMPLES / "bn128" / "sudoku.zkey"), str(EXAMPLES / "bn128" / "sudoku.wtns")]


def _subparser(name: str) -> argparse.ArgumentParser:
    from cli import build_parser  # noqa: PLC0415

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", ["prove", "serve"])
def test_every_pair_of_flags_sharing_a_value_is_mutually_exclusive(command):
    """Any flags that store into one destination sit in one mutually exclusive group (a new pair fails here)."""
    parser = _subparser(command)
    by_dest: dict[str, list[argparse.Action]] = {}
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            by_dest.setdefault(action.dest, []).append(action)
    shared = {dest: actions for dest, actions in by_dest.items() if len(actions) > 1}
    assert "verify" in shared and "key_cache_dir" in shared, sorted(shared)
    for dest, actions in shared.items():
        groups = [g for g in parser._mutually_exclusive_groups if all(a in g._group_actions for a in actions)]
        assert groups, f"{command}: {[a.option_strings[0] for a in actions]} share {dest!r} but may come together"


def _run(tmp_path, command: str, *flags: str) -> subprocess.CompletedProcess:
    rest = [*PROVE[1:], str(tmp_path / "proof.json"), str(tmp_path / "public.json")] if command == "prove" else \
        ["--port", "0", "--config", str(tmp_path / "absent.toml")]  # (a serve that took the flags stops there)
    return subprocess.run([sys.executable, "-m", "engine", command, *flags, *rest], cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("command,flags", [
    ("prove", ["--verify", "--no-verify"]),
    ("prove", ["--no-verify", "--backend", "cpu", "--verify"]),
    # the quick reader of a plain `prove --server` line (engine/client_argv.py) leaves this one to argparse
    ("prove", ["--server", "http://127.0.0.1:9", "--no-verify", "--verify"]),
    ("serve", ["--verify", "--no-verify"]),
], ids=["prove", "prove-apart", "prove-server", "serve"])
def test_verify_with_no_verify_is_a_usage_error_naming_both(tmp_path, command, flags):
    done = _run(tmp_path, command, *flags)
    last = (done.stderr.splitlines() or [""])[-1]  # (nothing at all: the proof was made)
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(rf"python -m engine {command}: error: argument --(no-)?verify: "
                        r"not allowed with argument --(no-)?verify", last), last
    assert "--no-verify" in last and " --verify" in last
    assert not (tmp_path / "proof.json").exists()


def test_verify_with_no_verify_under_json_is_one_json_usage_error(tmp_path):
    done = _run(tmp_path, "prove", "--json", "--server", "http://127.0.0.1:9", "--verify", "--no-verify")
    assert done.returncode == 2
    assert [json.loads(line) for line in done.stderr.splitlines()] == [
        {"event": "error", "error": "UsageError", "message": "argument --no-verify: not allowed with argument --verify",
         "exit_code": 2}]


def test_the_quick_server_reader_leaves_a_verify_flag_to_argparse():
    from engine.client_argv import read_prove_server  # noqa: PLC0415

    line = ["prove", "--server", "http://127.0.0.1:9", "k.zkey", "w.wtns", "p.json", "q.json"]
    assert read_prove_server(line) is not None  # a plain line: read without argparse
    for flags in (["--verify"], ["--no-verify"], ["--verify", "--no-verify"]):
        assert read_prove_server([*line[:3], *flags, *line[3:]]) is None
