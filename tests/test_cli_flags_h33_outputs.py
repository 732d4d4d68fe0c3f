"""verify's and cache's output modes: `--quiet` and `--json` as every other command takes them (they were usage
errors), verify's plain output still snarkjs's.

Subprocesses run with cwd = the repo root, so they import this tree's code."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO

BN = EXAMPLES / "bn128"
VK, PUBLIC, PROOF = (str(BN / name) for name in ("verification_key.json", "public.json", "proof.json"))


def cli(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def wrong_public(tmp_path_factory) -> str:
    """public.json with its first signal changed: a proof of other signals, `Invalid proof` (exit 1)."""
    signals = json.loads(Path(PUBLIC).read_text())
    signals[0] = str(int(signals[0]) + 1)
    path = tmp_path_factory.mktemp("verify") / "public.json"
    path.write_text(json.dumps(signals))
    return str(path)


def test_verify_plain_output_stays_snarkjs_s(wrong_public):
    p = cli("verify", VK, PUBLIC, PROOF)
    assert (p.returncode, p.stdout, p.stderr) == (0, "OK!\n", ""), p.stderr
    p = cli("verify", VK, wrong_public, PROOF)
    assert (p.returncode, p.stdout) == (1, "Invalid proof\n"), p.stderr


def test_verify_quiet_prints_nothing_for_a_valid_proof_and_the_verdict_for_an_invalid_one(wrong_public):
    p = cli("verify", "--quiet", VK, PUBLIC, PROOF)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), p.stderr
    p = cli("verify", "--quiet", VK, wrong_public, PROOF)
    assert (p.returncode, p.stdout) == (1, "Invalid proof\n"), p.stderr


def test_verify_json_gives_the_verdict_as_one_json_result_line(wrong_public):
    p = cli("verify", "--json", VK, PUBLIC, PROOF)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 1, p.stdout
    result = json.loads(lines[0])
    assert result["event"] == "result" and result["valid"] is True, result
    assert (result["curve"], result["public_signals"]) == ("bn128", 16), result
    assert all(json.loads(line)["event"] != "error" for line in p.stderr.splitlines()), p.stderr
    p = cli("verify", "--json", VK, wrong_public, PROOF)
    assert p.returncode == 1, p.stderr
    result = json.loads(p.stdout)
    assert result["event"] == "result" and result["valid"] is False, result


def test_verify_json_error_is_a_json_object_on_stderr(tmp_path):
    missing = str(tmp_path / "nope.json")
    p = cli("verify", "--json", VK, missing, PROOF)
    assert p.returncode == 2 and p.stdout == "", p.stdout
    lines = [json.loads(line) for line in p.stderr.strip().splitlines()]  # every line JSON (stages, the error)
    assert [line["event"] for line in lines].count("error") == 1, p.stderr
    error = lines[-1]
    assert error["event"] == "error" and error["exit_code"] == 2 and missing in error["message"], error


def test_verify_quiet_and_json_together_are_a_usage_error():
    p = cli("verify", "--quiet", "--json", VK, PUBLIC, PROOF)
    assert p.returncode == 2, p.stderr
    assert json.loads(p.stderr)["error"] == "UsageError", p.stderr


def test_cache_quiet_prints_nothing_on_success(tmp_path):
    where = tmp_path / "keys"
    where.mkdir()
    for action in ("clear", "list", "path"):
        p = cli("cache", action, "--quiet", "--dir", str(where))
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), (action, p.stdout, p.stderr)


def test_cache_quiet_still_prints_an_error(tmp_path):
    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    p = cli("cache", "list", "--quiet", "--dir", str(not_dir))
    assert p.returncode == 2 and p.stderr.startswith("error: ") and "is not a directory" in p.stderr, p.stderr


def test_cache_quiet_and_json_together_are_a_usage_error(tmp_path):
    p = cli("cache", "list", "--quiet", "--json", "--dir", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert json.loads(p.stderr)["error"] == "UsageError", p.stderr


@pytest.mark.parametrize("argv, env, source", [(["--dir", "off"], {}, "--dir off"),
                                               ([], {"GROTH16_KEY_CACHE": "none"}, "$GROTH16_KEY_CACHE=none")])
def test_cache_off_names_what_turned_it_off(argv, env, source):
    """It said "(--dir or $GROTH16_KEY_CACHE says so)" whichever of them it was."""
    p = cli("cache", "list", *argv, env=env)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip() == f"error: {source}: the key cache is off: nothing to show", p.stderr


def test_cache_json_results_have_every_command_s_shape(tmp_path):
    """Every other command's --json result is {"event": "result", ...}; cache's had no "event"."""
    for action in ("list", "clear", "path"):
        p = cli("cache", action, "--json", "--dir", str(tmp_path))
        assert p.returncode == 0, p.stderr
        result = json.loads(p.stdout)
        assert result["event"] == "result" and result["dir"] == str(tmp_path), (action, result)


def test_cache_of_a_directory_that_does_not_exist_says_so(tmp_path):
    """`cache list --dir /typo` said "0 entries" and `clear` "removed 0 file(s)", as of an empty cache."""
    where = tmp_path / "typo"
    for action in ("list", "clear"):
        p = cli("cache", action, "--dir", str(where))
        assert p.returncode == 0 and "no such directory" in p.stdout, (action, p.stdout, p.stderr)
    p = cli("cache", "list", "--json", "--dir", str(where))
    assert json.loads(p.stdout)["exists"] is False, p.stdout
    p = cli("cache", "list", "--json", "--dir", str(tmp_path))
    assert json.loads(p.stdout)["exists"] is True, p.stdout
