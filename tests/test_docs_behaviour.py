"""The documents' promises (README.md, docs/*.md, --help) that the code broke, checked by running them (CPU only)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUDOKU = ROOT / "examples" / "bn128"
PROVE_FILES = (SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns")


def run_inproc(capsys, *args) -> tuple[int, str, str]:
    """The command through cli.main in this process (quick)."""
    from cli import main

    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- one engine.toml for serve and prove

SHARED_TOML = 'backend = "cpu"\nsynthesis_workers = 1\n\n[service]\nport = 0\nmax_queued_per_key = 8\n'


def test_load_config_takes_a_top_level_file_with_a_service_table(tmp_path):
    """docs/service.md: the engine's settings at the top level (or [engine]) and the service's in [service], one
    file for both; engine.load_config (and so `prove --config`) refused it: "unknown field `service`"."""
    from engine import load_config

    path = tmp_path / "engine.toml"
    path.write_text(SHARED_TOML)
    config = load_config(path)
    assert (config.backend, config.synthesis_workers) == ("cpu", 1)


def test_prove_config_takes_the_file_serve_takes(capsys, tmp_path):
    from engine.service.settings import load_files

    path = tmp_path / "engine.toml"
    path.write_text(SHARED_TOML)
    engine_config, service_config = load_files(path)  # what serve reads of it
    assert (engine_config.backend, service_config.max_queued_per_key) == ("cpu", 8)
    code, out, err = run_inproc(capsys, "prove", "--config", path, *PROVE_FILES, tmp_path / "p.json",
                                tmp_path / "pub.json", "--quiet")
    assert code == 0, err
    assert (tmp_path / "p.json").stat().st_size > 0


def test_top_level_file_still_refuses_an_unknown_key(tmp_path):
    """Only the service's own table is set aside: a misspelt engine key is still an error naming the file."""
    from engine import ConfigError, load_config

    path = tmp_path / "engine.toml"
    path.write_text(SHARED_TOML.replace("synthesis_workers", "synthesis_worker"))
    with pytest.raises(ConfigError, match=r"engine\.toml: .*synthesis_worker"):
        load_config(path)


# ---------------------------------------------------------------- a bad engine flag is named as the user typed it

@pytest.mark.parametrize("flag, value, problem", [
    ("--synthesis-workers", "0", "need at least 1, got 0"),
    ("--compute-slots", "0", "need at least 1, got 0"),
    ("--host-budget", "lots", "'lots' is not a size"),
    ("--vram-budget", "12 parsecs", "'12 parsecs' is not a size"),
])
def test_bad_engine_flag_is_named_as_typed(capsys, tmp_path, flag, value, problem):
    """`prove --synthesis-workers 0` said "command-line flags: synthesis_workers: need at least 1", naming a
    configuration key the user never wrote instead of the flag."""
    code, out, err = run_inproc(capsys, "prove", *PROVE_FILES, tmp_path / "p.json", tmp_path / "pub.json",
                                "--backend", "gpu" if flag == "--vram-budget" else "cpu", flag, value)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {flag}: {problem}") and err.count("\n") == 1, err
    assert not (tmp_path / "p.json").exists()


# ---------------------------------------------------------------- idle_trim_s: a way to say "never" in a TOML file

def test_idle_trim_can_be_switched_off_from_a_toml_file(tmp_path):
    """A bad idle_trim_s said "must be positive (or absent to never trim)", but TOML has no null and an absent key
    is the default 5 s: a file had no way to turn the trim off.  0 turns it off, as the engine already reads it."""
    from engine import load_config

    path = tmp_path / "engine.toml"
    path.write_text("idle_trim_s = 0\n")
    assert not load_config(path).idle_trim_s


def test_negative_idle_trim_says_how_to_switch_it_off(tmp_path):
    from engine import ConfigError, load_config

    path = tmp_path / "engine.toml"
    path.write_text("idle_trim_s = -1.0\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "idle_trim_s: -1.0 is negative (0: never trim)" in str(info.value)
    assert "absent" not in str(info.value)


# ---------------------------------------------------------------- serve proves for real, or refuses at once

def _serve(*args, timeout: float = 30) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "engine", "serve", "--port", "0", *map(str, args)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_serve_does_not_offer_the_simulated_backend(capsys):
    """`serve --help` offered --backend simulated: a server that loaded real keys and answered every proof with a
    500 (an AttributeError's traceback in its log); `prove` refuses it, as a model that makes no proofs."""
    from cli import build_parser

    parser = build_parser("serve")  # parsed only: a server never starts here, whatever the code does
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["serve", "--backend", "simulated"])
    assert info.value.code == 2
    assert "invalid choice: 'simulated'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--help"])
    assert "simulated" not in capsys.readouterr().out


def test_serve_refuses_a_config_file_with_the_simulated_backend(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text('[engine]\nbackend = "simulated"\n')
    try:
        res = _serve("--config", path, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("serve started with a backend that makes no proofs")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == f"error: {path}: backend 'simulated' makes no real proofs; use auto, cpu or gpu to serve\n"


# ---------------------------------------------------------------- the installed `groth16-engine` command

def _console_script(tmp_path) -> Path:
    """The script pip writes for pyproject's [project.scripts] groth16-engine entry (pip's own template)."""
    import tomllib

    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["groth16-engine"]
    module, func = target.split(":")
    script = tmp_path / "groth16-engine"
    script.write_text(f"import re\nimport sys\nfrom {module} import {func}\nif __name__ == '__main__':\n"
                      f"    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
                      f"    sys.exit({func}())\n")
    return script


def test_console_script_ends_quietly_when_its_reader_leaves(tmp_path):
    """`groth16-engine prove k.zkey w.wtns /dev/stdout /dev/null | head -c0` (the command `pip install .` puts on
    PATH) ended with a BrokenPipeError traceback: it ran cli.main without engine/__main__.py's streams, signals
    and exits, so the README's promises for `python -m engine` (141, quietly) did not hold for it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, _console_script(tmp_path), "prove", *PROVE_FILES, "/dev/stdout",
                             "/dev/null", "--backend", "cpu"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader leaves before the proof is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""


def test_console_script_answers_as_python_m_engine(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = _console_script(tmp_path)
    ok = subprocess.run([sys.executable, script, "verify", SUDOKU / "verification_key.json", SUDOKU / "public.json",
                         SUDOKU / "proof.json"], env=env, capture_output=True, text=True, timeout=60)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "OK!\n", "")
    bad = subprocess.run([sys.executable, script, "info", tmp_path / "nope"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", f"error: {tmp_path / 'nope'}: no such file\n")


# ---------------------------------------------------------------- info --proofs N: any N answers at once

@pytest.mark.parametrize("proofs", ["99999999999999999999", "100000000"])
def test_info_plans_a_huge_proof_count_at_once(tmp_path, proofs):
    """`info k.zkey --proofs 99999999999999999999` never ended: the planner tried every count from N down, one by
    one, for each candidate footprint; only the counts that fit the budget can be chosen."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        res = subprocess.run([sys.executable, "-m", "engine", "info", SUDOKU / "sudoku.zkey", "--proofs", proofs,
                              "--json"], env=env, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"info --proofs {proofs} ran for more than 30 s")
    assert res.returncode == 0, res.stderr
    import json

    footprint = json.loads(res.stdout)["footprint"]
    assert footprint["proofs_in_flight"] == 165  # the 16 GiB default budget's room, as for --proofs 1000000
    assert footprint["summary"].endswith(f"room for 165 of the {int(proofs)} proofs asked for")


# ---------------------------------------------------------------- counts that start threads or processes are bounded

@pytest.mark.parametrize("name, value", [("compute_slots", 100_000_000), ("device_threads", 10**9),
                                         ("synthesis_workers", 100_000)])
def test_a_count_of_threads_or_processes_is_bounded(name, value):
    """`prove --backend cpu --compute-slots 100000000` built and started two threads a slot before any proof: it
    ran for minutes and took the machine's memory until the kernel killed it.  Such a count is one error line."""
    from engine import ConfigError, EngineConfig

    with pytest.raises(ConfigError, match=rf"^{name}: {value} is more than .* at most \d+"):
        EngineConfig(**{name: value})


def test_a_huge_compute_slots_flag_is_one_line_naming_it():
    import argparse

    from engine.config import add_arguments, from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    from engine import ConfigError

    with pytest.raises(ConfigError, match=r"^--compute-slots: 100000000 is more than"):
        from_args(parser.parse_args(["--compute-slots", "100000000"]))
    assert from_args(parser.parse_args(["--compute-slots", "64", "--synthesis-workers", "64"])).compute_slots == 64


# ---------------------------------------------------------------- info --vram-budget "" is no budget at all

@pytest.mark.parametrize("path", [SUDOKU / "sudoku.zkey", SUDOKU / "proof.json"])
def test_info_refuses_an_empty_vram_budget(capsys, path):
    """`info k.zkey --vram-budget "$BUDGET"` with BUDGET unset planned for the default 16 GiB without a word (and
    on a proof.json the flag was ignored): an empty size is refused as every other size that is none."""
    code, out, err = run_inproc(capsys, "info", path, "--vram-budget", "")
    assert code == 2 and out == ""
    expected = ("error: --vram-budget: '' is not a size" if path.suffix == ".zkey" else
                f"error: --vram-budget plans a key's GPU footprint, but {path} is a proof file, not a .zkey")
    assert err.startswith(expected) and err.count("\n") == 1, err


# ---------------------------------------------------------------- prove_files where an event loop runs

def test_prove_files_inside_a_running_loop_says_to_await_aprove_files():
    """README: prove_files proves "without writing any asyncio".  Called where a loop already runs (a notebook's
    cell, an async function) it was asyncio's own "Runner.run() cannot be called from a running event loop",
    chained to a second RuntimeError, and a coroutine never awaited; the line now says what to call there."""
    import asyncio

    from engine import EngineConfig, prove_files

    async def inside() -> None:
        prove_files(*PROVE_FILES[:1], [PROVE_FILES[1]], config=EngineConfig(backend="cpu", synthesis_workers=1))

    with pytest.raises(RuntimeError, match=r"^prove_files: .*await engine\.aprove_files\(") as info:
        asyncio.run(inside())
    assert info.value.__context__ is None and "\n" not in str(info.value)
