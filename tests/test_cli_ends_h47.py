"""The command line's last loose ends (helper 47).

* `prove --ray auto` where no Ray runs passed Ray's own advice through: set "the `--address` flag", which this
  command line does not have (its flag is `--ray ADDRESS`).
* `--no-key-cache` with `--key-cache-dir DIR` was taken, the last one winning, a warning naming only one of them.
* docs/distributed.md named `SynthesisCrashedError` and `Witness`, which `engine` did not export.
* a stop signal inside one of serve's heavy imports (aiohttp's, numpy's) waited for the import's end: now they are
  loaded while a signal still ends the start at once (engine/commands/serve.py's preload).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO
from test_cli_fifo_inputs import _line
from test_serve_start_signals_h37 import IN_AN_IMPORT, _serve

RAY_AUTO = "could not start or join Ray at 'auto': "
NO_RAY_HERE = ("no Ray runs on this node ('auto' joins the cluster that `ray start` started here, or the one "
               "RAY_ADDRESS names): start one with `ray start --head`, or give 'local' (`--ray local`) for a Ray "
               "instance of this process's own")
# Ray finds no instance on this node whatever else runs on it (another test session's Ray): its two ways of looking
NO_RAY_FOUND = """
import ray._private.services as services

def no_gcs():
    return frozenset()

no_gcs.cache_clear = lambda: None  # (as Ray's, cached, has: ray.init and ray.shutdown call it)
services.find_gcs_addresses = no_gcs
services.find_bootstrap_address = lambda temp_dir: None
"""


def _no_gcs() -> frozenset:
    return frozenset()


_no_gcs.cache_clear = lambda: None  # (as Ray's, cached, has: ray.init and ray.shutdown call it)
PROVE = ["prove", str(EXAMPLES / "bn128" / "sudoku.zkey"), str(EXAMPLES / "bn128" / "sudoku.wtns")]


def _cli(tmp_path, *argv: str, before: str = "") -> subprocess.CompletedProcess:
    """`python -m engine ARGV`, after `before` (Python run in the same process first)."""
    code = before + "import runpy, sys\nsys.argv = ['engine', *sys.argv[1:]]\n" \
                    "runpy.run_module('engine', run_name='__main__', alter_sys=True)\n"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------- --ray auto with no Ray on this node


async def test_auto_where_no_ray_runs_is_said_in_the_engines_words(monkeypatch):
    pytest.importorskip("ray")
    import ray._private.services as services  # noqa: PLC0415

    from engine.distributed import RayCluster  # noqa: PLC0415
    from engine.errors import EngineStartError  # noqa: PLC0415

    from test_distributed import cpu_config  # noqa: PLC0415

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(services, "find_gcs_addresses", _no_gcs)
    monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: None)
    with pytest.raises(EngineStartError) as caught:
        async with RayCluster("auto", engines=1, config=cpu_config()):
            pass
    assert str(caught.value) == RAY_AUTO + NO_RAY_HERE, str(caught.value)


@pytest.mark.parametrize("json_flag", [False, True], ids=["text", "json"])
def test_prove_ray_auto_where_no_ray_runs_is_one_line_and_exit_2(tmp_path, json_flag):
    pytest.importorskip("ray")
    out = [str(tmp_path / "proof.json"), str(tmp_path / "public.json")]
    done = _cli(tmp_path, *PROVE[:1], "--ray", "auto", *(["--json"] if json_flag else []), *PROVE[1:], *out,
                before=NO_RAY_FOUND)
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    if json_flag:
        error = json.loads(lines[-1])
        assert all(json.loads(line) for line in lines)  # stderr: JSON objects only
        assert (error["error"], error["message"]) == ("EngineStartError", RAY_AUTO + NO_RAY_HERE)
    else:
        assert lines == ["error: " + RAY_AUTO + NO_RAY_HERE], done.stderr
    assert "--address" not in done.stderr
    assert not any(os.path.exists(path) for path in out)


# ---------------------------------------------------------------- --no-key-cache with --key-cache-dir


@pytest.mark.parametrize("command", ["prove", "serve"])
@pytest.mark.parametrize("flags", [["--no-key-cache", "--key-cache-dir", "keys"],
                                   ["--key-cache-dir=keys", "--no-key-cache"],
                                   ["--key-cache-dir", "", "--no-key-cache"]], ids=["no-first", "dir-first", "empty"])
def test_no_key_cache_with_a_key_cache_dir_is_a_usage_error_naming_both(tmp_path, command, flags):
    """Taken together, the last one winning (a warning named --key-cache-dir alone on a machine without a GPU)."""
    rest = [*PROVE[1:], str(tmp_path / "proof.json"), str(tmp_path / "public.json")] if command == "prove" else \
        ["--port", "0", "--config", str(tmp_path / "absent.toml")]  # (a serve that took the flags stops there)
    done = subprocess.run([sys.executable, "-m", "engine", command, "--backend", "auto", *flags, *rest], cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    last = done.stderr.splitlines()[-1]
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(rf"python -m engine {command}: error: argument --(no-key-cache|key-cache-dir): "
                        r"not allowed with argument --(no-key-cache|key-cache-dir)", last), last
    assert "--no-key-cache" in last and "--key-cache-dir" in last
    assert not (tmp_path / "proof.json").exists()


def test_no_key_cache_with_a_key_cache_dir_under_json_is_a_json_usage_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "engine", "prove", "--json", "--no-key-cache", "--key-cache-dir",
                           "keys", *PROVE[1:], str(tmp_path / "p.json"), str(tmp_path / "q.json")], cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert [json.loads(line) for line in done.stderr.splitlines()] == [
        {"event": "error", "error": "UsageError", "exit_code": 2,
         "message": "argument --key-cache-dir: not allowed with argument --no-key-cache"}]


def test_either_key_cache_flag_alone_still_parses():
    import argparse  # noqa: PLC0415

    from engine.config_flags import add_arguments  # noqa: PLC0415

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["--no-key-cache"]).key_cache_dir == "off"
    assert parser.parse_args(["--key-cache-dir", "keys"]).key_cache_dir == "keys"
    assert parser.parse_args([]).key_cache_dir is None


# ---------------------------------------------------------------- the docs' names importable from engine


def test_every_error_and_witness_type_docs_distributed_names_is_importable_from_engine():
    """`SynthesisCrashedError` (scheduler.synth_pool) and `Witness` (engine.formats.wtns) were not."""
    import engine  # noqa: PLC0415
    from engine.formats.wtns import Witness  # noqa: PLC0415
    from scheduler.synth_pool import SynthesisCrashedError  # noqa: PLC0415

    text = (REPO / "docs" / "distributed.md").read_text()
    errors = text[text.index("* Errors: you get the exception the Engine raised"):text.index("It is never Ray's")]
    witness = text[text.index("A witness is what `Engine.prove` takes"):text.index("It can also be a Ray")]
    named = set(re.findall(r"`([A-Z]\w*Error)`", errors)) | set(re.findall(r"`(Witness)`", witness))
    assert {"SynthesisCrashedError", "Witness"} <= named
    missing = sorted(name for name in named if name not in engine.__all__ or not hasattr(engine, name))
    assert missing == [], missing
    assert (engine.SynthesisCrashedError, engine.Witness) == (SynthesisCrashedError, Witness)
    assert issubclass(engine.SynthesisCrashedError, engine.WitnessGenerationError)


def test_import_engine_stays_free_of_numpy_with_the_new_names():
    code = "import sys, engine; assert 'numpy' not in sys.modules and 'scheduler.synth_pool' not in sys.modules; " \
           "from engine import Witness, SynthesisCrashedError; " \
           "print(SynthesisCrashedError.__module__, Witness.__name__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, ["scheduler.synth_pool", "Witness"]), done.stderr


# ---------------------------------------------------------------- serve's heavy imports before the signals


@pytest.mark.parametrize(("module", "signum"), [("aiohttp.web", signal.SIGTERM), ("numpy", signal.SIGINT)],
                         ids=["aiohttp-SIGTERM", "numpy-SIGINT"])
def test_a_signal_inside_one_of_serves_heavy_imports_ends_it_at_once(tmp_path, module, signum):
    """It waited for the import's end (the exit hooks ran after it: "imported: 1"); serve's heavy imports are now
    loaded while a signal still ends the start at once, with its line and 128 + the signal, no hook run and
    nothing left."""
    code, lines, left = _serve(tmp_path, IN_AN_IMPORT, MODULE=module, SIGNUM=int(signum), SIGNALS=1)
    assert (code, lines, left) == (128 + signum, [_line(signum)], [])
