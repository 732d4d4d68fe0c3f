"""The last numbers and switches read loosely: serve's and bench-circuit's whole-number flags, serve's seconds,
`Client(spin_ms=...)`, a blank GROTH16_ENGINE_CACHE, GROTH16_EXIT_HANDOFF.

Before: `serve --port ٨٠` listened on 80 and `--running-jobs 1_0` ran 10 jobs (int() reads any script's digits and
underscores), `--idle-timeout ٣` was 3 s, a 5000-digit --port was repeated in full in argparse's error,
`bench-circuit --constraints <400 digits>` was an OverflowError traceback, `Client(spin_ms=inf)` spun a core until
each answer came, `GROTH16_ENGINE_CACHE=""` turned the wasm cache off (a blank GROTH16_KEY_CACHE is the default),
GROTH16_EXIT_HANDOFF took only an exact "0" as off (" 0" and "off" left the hand-off on without a word), a server's
`prove_s_p50` of inf or 1e300 was an OverflowError from the client's next request, and XDG_CACHE_HOME="  " put the
wasm cache in a folder named by two spaces."""
from __future__ import annotations

import json
import os

import pytest

from cli import build_parser
from conftest import EXAMPLES, run_engine
from engine.errors import ConfigError, EngineError

BIG = "9" * 400  # within int()'s 4300 digits, beyond any port, count or circuit
HUGE = "9" * 5000  # beyond them: int() refuses, and argparse's message repeated it


def _usage_error(capsys, argv: list[str]) -> str:
    """argparse's refusal of `argv` (exit 2): its one error line, which must be short."""
    with pytest.raises(SystemExit) as info:
        build_parser(only=argv[0]).parse_args(argv)
    assert info.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "error: argument" in line and len(line) < 200, line
    return line


# ---------------------------------------------------------------- serve's counts and seconds

@pytest.mark.parametrize("flag", ["--port", "--max-queued-per-key", "--running-jobs"])
@pytest.mark.parametrize("value, problem", [("٨٠", "is not a whole number"), ("1_0", "is not a whole number"),
                                            (BIG, "more than any port or count"), (HUGE, "over 4300 digits"),
                                            ("-" + BIG, "is negative")])
def test_serve_count_flags_take_ascii_whole_numbers_only(capsys, flag, value, problem):
    line = _usage_error(capsys, ["serve", f"{flag}={value}"])
    assert f"argument {flag}: " in line and problem in line, line


@pytest.mark.parametrize("flag, value, field", [("--port", "8081", "port"), ("--max-queued-per-key", " 3 ",
                                                 "max_queued_per_key"), ("--running-jobs", "0", "running_jobs")])
def test_serve_count_flags_still_read_plain_numbers(flag, value, field):
    args = build_parser(only="serve").parse_args(["serve", flag, value])
    assert getattr(args, field) == int(value)


def test_serve_count_ranges_are_still_the_service_configs(tmp_path):
    """Within 2^63 a value goes on to ServiceConfig, which names the flag and the value (as before)."""
    proc = run_engine("serve", "--backend", "cpu", "--port", "99999", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip() == "error: --port: 99999 is not a TCP port", proc.stderr


@pytest.mark.parametrize("value", ["٣", "1_0", "+-inf", "３"])
def test_serve_seconds_are_ascii_numbers(value):
    from engine.commands.serve import seconds

    with pytest.raises(ConfigError) as info:
        seconds("--idle-timeout", value)
    assert str(info.value) == f"--idle-timeout: {value} is not a number of seconds"


def test_serve_seconds_still_read_what_they_read():
    from engine.commands.serve import seconds

    assert [seconds("--upload-timeout", v) for v in ("5", " 1.5 ", ".5", "2e1", "0")] == [5.0, 1.5, 0.5, 20.0, 0.0]
    with pytest.raises(ConfigError, match=r"^--drain-timeout: Infinity is not a finite number of seconds"):
        seconds("--drain-timeout", "Infinity")
    with pytest.raises(ConfigError, match=r"^--drain-timeout: '999.*\.\.\. is not a finite number of seconds"):
        seconds("--drain-timeout", HUGE)  # cut, not 5000 digits


# ---------------------------------------------------------------- bench-circuit's sizes and seed

@pytest.mark.parametrize("flag", ["--constraints", "--public", "--seed"])
@pytest.mark.parametrize("value, problem", [("٨٠", "is not a whole number"), ("1_0", "is not a whole number"),
                                            (HUGE, "over 4300 digits"), ("-" + BIG, "is negative")])
def test_bench_circuit_flags_take_ascii_whole_numbers_only(capsys, flag, value, problem):
    argv = ["bench-circuit", "out", f"{flag}={value}"] + ([] if flag == "--constraints" else ["--constraints", "8"])
    line = _usage_error(capsys, argv)
    assert f"argument {flag}: " in line and problem in line, line


@pytest.mark.parametrize("flag", ["--constraints", "--public"])
def test_bench_circuit_sizes_beyond_any_circuit_are_one_short_line(capsys, flag):
    argv = ["bench-circuit", "out", f"{flag}={BIG}"] + (["--constraints", "8"] if flag == "--public" else [])
    line = _usage_error(capsys, argv)
    assert f"argument {flag}: " in line and "more than any circuit holds" in line, line


def test_bench_circuit_a_huge_constraint_count_is_no_traceback(tmp_path):
    """It was OverflowError (engine/groth16/bench_circuit.py's plan() makes the count a float)."""
    proc = run_engine("bench-circuit", tmp_path / "o", "--constraints", BIG, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "more than any circuit holds" in proc.stderr and len(proc.stderr) < 1000, proc.stderr
    assert not (tmp_path / "o").exists()


def test_bench_circuit_seed_takes_a_large_one_and_plain_numbers():
    args = build_parser(only="bench-circuit").parse_args(["bench-circuit", "o", "--constraints", " 8 ", "--public",
                                                          "0", "--seed", BIG])
    assert (args.constraints, args.public, args.seed) == (8, 0, int(BIG))  # numpy takes a seed of any size


# ---------------------------------------------------------------- Client(spin_ms=...)

@pytest.mark.parametrize("spin_ms", [float("inf"), float("nan"), -1, 1000.5, 10 ** 400, 10 ** 5000],
                         ids=["inf", "nan", "-1", "1000.5", "400 digits", "5000 digits"])
def test_client_spin_argument_is_held_to_the_variables_range(spin_ms):
    from engine.client import Client
    from engine.client_wait import SpinSettingError

    with pytest.raises(SpinSettingError) as info:
        Client("http://127.0.0.1:1", spin_ms=spin_ms)
    text = str(info.value)
    assert text.startswith("spin_ms=") and "from 0 to 1000 ms" in text and len(text) < 200, text


@pytest.mark.parametrize("spin_ms", ["3", True, object(), [1]])
def test_client_spin_argument_that_is_no_number_is_one_line(spin_ms):
    from engine.client_wait import SpinSettingError, spin_seconds

    with pytest.raises(SpinSettingError, match=r"^spin_ms=.*: expected a number of milliseconds"):
        spin_seconds(spin_ms)


def test_client_spin_argument_still_takes_its_range(monkeypatch):
    from engine.client_wait import ENV, spin_seconds

    monkeypatch.setenv(ENV, "inf")  # (not read: the argument wins)
    assert [spin_seconds(v) for v in (0, 2.5, 1000)] == [0.0, 0.0025, 1.0]


# ---------------------------------------------------------------- a blank GROTH16_ENGINE_CACHE

@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_engine_cache_is_the_default_not_off(monkeypatch, tmp_path, blank):
    from engine.witness import modcache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(modcache.ENV_VAR, blank)
    assert modcache.cache_dir() == tmp_path / "groth16-engine" / "wasm"


@pytest.mark.parametrize("value", ["off", "OFF", " none ", "0", "false", "no"])
def test_the_engine_cache_is_off_by_the_key_caches_words(monkeypatch, value):
    from engine.witness import modcache

    monkeypatch.setenv(modcache.ENV_VAR, value)
    assert modcache.cache_dir() is None


def test_the_engine_cache_in_a_named_directory(monkeypatch, tmp_path):
    from engine.witness import modcache

    monkeypatch.setenv(modcache.ENV_VAR, str(tmp_path))
    assert modcache.cache_dir() == tmp_path / "wasm"


# ---------------------------------------------------------------- GROTH16_EXIT_HANDOFF, a switch

@pytest.mark.parametrize("value", ["off", "false", "2", "yes", "0 0"])
def test_exit_handoff_refuses_what_is_not_a_switch(monkeypatch, value):
    from engine import exit_handoff

    monkeypatch.setenv(exit_handoff.ENV, value)
    with pytest.raises(ConfigError) as info:
        exit_handoff.check()
    assert isinstance(info.value, EngineError)
    assert str(info.value) == f"GROTH16_EXIT_HANDOFF={value!r}: expected one of 0, 1 (or unset)"


@pytest.mark.parametrize("value, on", [(" 0", False), ("0 ", False), ("1", True), (" 1 ", True), ("", True)])
def test_exit_handoff_reads_zero_and_one_with_spaces_and_blank_as_unset(monkeypatch, value, on):
    from engine import exit_handoff

    monkeypatch.setenv(exit_handoff.ENV, value)
    monkeypatch.setattr(exit_handoff, "process_ends", True)
    assert exit_handoff.enabled() is on and exit_handoff.releases_left_to_exit() is on


@pytest.mark.parametrize("value", [" 0", "1", ""])
def test_exit_handoff_check_passes_a_switch(monkeypatch, value):
    from engine import exit_handoff

    monkeypatch.setenv(exit_handoff.ENV, value)
    exit_handoff.check()
    assert exit_handoff.setting() is {" 0": False, "1": True, "": None}[value]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_bad_exit_handoff_is_the_commands_error_line(monkeypatch, as_json):
    """The command line says a bad GROTH16_EXIT_HANDOFF as its error before the command (exit 2, one line, a JSON
    object with --json); before cli.main asked check(), it quietly meant "off" at the command's end."""
    d = EXAMPLES / "bn128"
    monkeypatch.setenv("GROTH16_EXIT_HANDOFF", "off")
    proc = run_engine("verify", *(["--json"] if as_json else []), d / "verification_key.json", d / "public.json",
                      d / "proof.json")
    said = "GROTH16_EXIT_HANDOFF='off': expected one of 0, 1 (or unset)"
    assert (proc.returncode, proc.stdout) == (2, ""), proc
    if as_json:
        assert json.loads(proc.stderr) == {"event": "error", "error": "ConfigError", "message": said,
                                           "exit_code": 2}, proc.stderr
    else:
        assert proc.stderr == f"error: {said}\n"


def test_exit_handoff_with_a_bad_value_forks_nothing_at_the_exit(monkeypatch):
    """At the exit no error can be said: the hand-off is not made (before, "off" made it); nor does the command's
    question raise (it is asked in a `finally` that must close the backend)."""
    from engine import exit_handoff

    def fork():
        raise AssertionError("forked")

    monkeypatch.setenv(exit_handoff.ENV, "off")
    monkeypatch.setattr(exit_handoff, "process_ends", True)
    monkeypatch.setattr(exit_handoff, "device_fds", lambda fd_dir="", prefix="": [99])  # "holds a device file"
    monkeypatch.setattr(os, "fork", fork)
    assert exit_handoff.releases_left_to_exit() is False
    assert exit_handoff.hand_off() == 0



@pytest.mark.parametrize("seconds", [float("inf"), 1e300, float("nan"), 0, -1])
def test_a_servers_due_time_that_no_proof_takes_is_ignored(seconds):
    """A load answer's prove_s_p50 of inf or 1e300 became the next request's nap: socket.settimeout refused it
    (OverflowError, a traceback from Client.prove)."""
    import socket

    from engine.client_wait import AnswerWait

    wait = AnswerWait(0.001)
    wait.expect("POST /prove", seconds)
    assert wait.due("POST /prove") is None
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b"x")  # the answer, there already
        wait.wait(a, "POST /prove", None)
        assert a.recv(1) == b"x"


def test_a_blank_xdg_cache_home_is_unset_for_the_wasm_cache(monkeypatch, tmp_path):
    """XDG_CACHE_HOME="  " put the cache in a folder named by two spaces in the current directory."""
    from engine.witness import modcache

    monkeypatch.delenv(modcache.ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "  ")
    assert modcache.cache_dir() == tmp_path / ".cache" / "groth16-engine" / "wasm"
