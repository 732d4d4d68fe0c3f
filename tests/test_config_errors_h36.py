"""Every way a configuration file (and the flags and the Python API that set the same keys) can be wrong is one line
in the engine's words: the file, the key as written, the problem.  msgspec's own words ("Expected `int`, got `str`
- at `$.x`", "Object contains unknown field") were shown for a wrong type, an unknown key or a table where a value
goes; a float size, allowed from Python, was refused from TOML; an empty file, an empty key_cache_dir and a simulated
device that every worker then failed on were taken without a word."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO
from engine.config import ConfigError, EngineConfig, SimulationConfig, load
from engine.errors import EngineError

SUDOKU = EXAMPLES / "bn128" / "sudoku"
MSGSPEC_WORDS = re.compile(r"Expected `|\$\.|Object contains|got `")


def _error(tmp_path, text: str, name: str = "engine.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load(path)
    message = str(info.value)
    assert isinstance(info.value, EngineError)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    assert not MSGSPEC_WORDS.search(message), message
    return message[len(f"{path}: "):]


@pytest.mark.parametrize("text, words", [
    # a wrong type, at the top level, under [engine] and in the simulation table
    ('synthesis_workers = "two"', "synthesis_workers: expected a whole number, got the string 'two'"),
    ('[engine]\nsynthesis_workers = "two"', "synthesis_workers: expected a whole number, got the string 'two'"),
    ("synthesis_workers = 2.5", "synthesis_workers: expected a whole number, got the number 2.5"),
    ("synthesis_workers = true", "synthesis_workers: expected a whole number, got true"),
    ("synthesis_workers = [2]", "synthesis_workers: expected a whole number, got an array [2]"),
    ("[engine.synthesis_workers]\nn = 2", "synthesis_workers: expected a whole number, got a table {'n': 2}"),
    ("verify = 1", "verify: expected true or false, got the whole number 1"),
    ("backend = 3", "backend: expected one of auto, cpu, gpu, simulated, got the whole number 3"),
    ("timeline = 1979-05-27", "timeline: expected a file name (a string), got the date 1979-05-27"),
    ('devices = "0,1"', "devices: expected an array of device indices such as [0, 1], got the string '0,1'"),
    ("devices = [0.5]", "devices: expected an array of device indices such as [0, 1], got an array [0.5]"),
    ("compute_slots = 1.5", 'compute_slots: expected a whole number or "auto", got the number 1.5'),
    ('idle_trim_s = "5"', "idle_trim_s: expected a number, got the string '5'"),
    ("idle_trim_s = " + "9" * 400, "idle_trim_s: a number of about 400 digits is out of range"),
    ('[engine.simulation]\ngpu_ms = "fast"', "simulation.gpu_ms: expected a number, got the string 'fast'"),
    ("[engine.simulation]\ndevices = 1.5", "simulation.devices: expected a whole number, got the number 1.5"),
    ("simulation = 3", "simulation: expected a table, got the whole number 3"),
    ("engine = 5", "engine: expected the [engine] table, got the whole number 5"),
    ("service = 5", "service: expected the [service] table, got the whole number 5"),  # was set aside
    # unknown keys: the nearest known one, else the table's keys; a key that is not bare stays on its line
    ("synthesis_worker = 3", "synthesis_worker: not a key of the engine's configuration (did you mean "
                             "synthesis_workers?)"),
    ("[engine]\nbogus = 1", "bogus: not a key of the engine's configuration (its keys: backend, devices,"),
    ("[engine.simulation]\ngpu = 1", "simulation.gpu: not a key of the simulation table (did you mean "
                                     "simulation.gpu_ms?)"),
    ('"a\\nb" = 1', '"a\\nb": not a key of the engine\'s configuration'),
    # sizes: a float is bytes, as from Python; nan, inf, 2^63 and more, a bool or a table are not
    ("vram_budget = nan", "vram_budget: nan is not a size"),
    ("host_budget = inf", "host_budget: inf is larger than any memory (at most 2^63 bytes)"),
    ("vram_budget = 99999999999999999999", "vram_budget: 99999999999999999999 is larger than any memory"),
    ("vram_budget = -1.5e9", "vram_budget: -1500000000.0 is negative"),
    ("vram_budget = true", 'vram_budget: expected a size (bytes, or a string such as "8GiB"), got true'),
    ("vram_budget = {gib = 8}", "vram_budget: expected a size (bytes, or a string such as \"8GiB\"), got a table"),
    ("vram_budget = 0.4", "vram_budget: 0 bytes holds no key or witness"),
    ("[engine.simulation]\nvram = nan", "simulation.vram: nan is not a size"),
    # out of range: what a simulated device's workers then failed on (tracebacks in worker processes)
    ("[engine.simulation]\nvram = 0", "simulation.vram: 0 bytes holds no key or proof"),
    ("[engine.simulation]\ngpu_ms = inf", "simulation.gpu_ms: inf is too large (at most 86400000, a day)"),
    ("[engine.simulation]\nsynth_ms = 1e300", "simulation.synth_ms: 1e+300 is too large"),
    ("[engine.simulation]\nconcurrency_gain = inf", "simulation.concurrency_gain: inf is too large"),
    ("[engine.simulation]\nwitness_rows = 0", "simulation.witness_rows: 0 is not a witness's count of values"),
    ("[engine.simulation]\nwitness_rows = -1", "simulation.witness_rows: -1 is not a witness's count of values"),
    ("[engine.simulation]\nwitness_rows = 4294967297", "simulation.witness_rows: 4294967297 is not a witness's"),
    ("[engine.simulation]\nseed = -1", "simulation.seed: -1 is negative"),
    # empty names and empty files: the defaults were taken without a word
    ('key_cache_dir = ""', "key_cache_dir: an empty directory name (leave it out for $GROTH16_KEY_CACHE"),
    ('key_cache_dir = "  "', "key_cache_dir: an empty directory name"),
    ("", "is empty, a configuration file without settings"),
    ("\n  \n", "is empty, a configuration file without settings"),
])
def test_a_bad_configuration_file_is_one_line_in_the_engines_words(tmp_path, text, words):
    assert _error(tmp_path, text + "\n").startswith(words)


@pytest.mark.parametrize("text", ['vram_budget = 16e9\nhost_budget = 2e9', "# only a comment\n",
                                  'compute_slots = "Auto"', "[engine.simulation]\nvram = 4e9\nseed = 7"])
def test_what_a_file_may_say_still_reads(tmp_path, text):
    """A float size is bytes, as from Python (`EngineConfig(vram_budget=16e9)`); a file of comments is a choice
    of the defaults, not an empty one; "Auto" is taken as --compute-slots takes it."""
    path = tmp_path / "engine.toml"
    path.write_text(text + "\n")
    config = load(path)
    assert (config.vram_budget, config.host_budget) == ((16_000_000_000, 2_000_000_000) if "16e9" in text
                                                        else (None, None))
    assert config.compute_slots == "auto" and config.simulation.vram == (4_000_000_000 if "4e9" in text else 8 << 30)


def test_a_size_flag_takes_what_the_file_takes():
    """`vram_budget = 16e9` is 16 GB in a file; `--vram-budget 16e9` was "not a size"."""
    import argparse

    from engine.config import add_arguments, from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    config = from_args(parser.parse_args(["--vram-budget", "16e9", "--host-budget", "1.5e3 MiB"]))
    assert (config.vram_budget, config.host_budget) == (16_000_000_000, 1500 << 20)
    with pytest.raises(ConfigError, match=r"^--vram-budget: '1e400' is larger than any memory"):
        from_args(parser.parse_args(["--vram-budget", "1e400"]))


@pytest.mark.parametrize("fields, words", [
    ({"simulation": {"bogus": 1}}, "simulation.bogus: not a key of the simulation table"),
    ({"simulation": 5}, "simulation: expected a table, got the whole number 5"),
    ({"vram_budget": True}, 'vram_budget: expected a size (bytes, or a string such as "8GiB"), got true'),
    ({"vram_budget": [8]}, 'vram_budget: expected a size (bytes, or a string such as "8GiB"), got an array [8]'),
    ({"vram_budget": 2 ** 70}, "vram_budget: 1180591620717411303424 is larger than any memory"),
    ({"synthesis_workers": 10 ** 5000}, "synthesis_workers: a number of about 5000 digits is more than"),
    ({"key_cache_dir": ""}, "key_cache_dir: an empty directory name"),
])
def test_the_python_api_says_the_same(fields, words):
    """EngineConfig(...) from Python: the same words as a file's (a 5000-digit count was a ValueError from repr)."""
    with pytest.raises(ConfigError) as info:
        EngineConfig(**fields)
    assert str(info.value).startswith(words) and not MSGSPEC_WORDS.search(str(info.value)), str(info.value)


def test_a_simulation_config_from_python_is_refused_like_a_files():
    with pytest.raises(ConfigError, match=r"^simulation\.seed: -1 is negative$"):
        SimulationConfig(seed=-1)
    with pytest.raises(ConfigError, match=r"^simulation\.upload_ms: inf is too large"):
        SimulationConfig(upload_ms=float("inf"))


def test_a_name_no_file_can_have_is_said_as_one(tmp_path):
    """A NUL in the name was "holds a number too long to read (over 4300 digits)"; a bytes name was shown as b'...'."""
    with pytest.raises(ConfigError, match=r"^'a\\x00b\.toml': a name with a NUL character names no file$"):
        load("a\0b.toml")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(tmp_path))}/none\.toml: no such configuration file$"):
        load(bytes(tmp_path / "none.toml"))


def test_serve_reads_the_engine_part_with_the_same_words(tmp_path):
    from engine.service.settings import load_files

    path = tmp_path / "engine.toml"
    path.write_text('[engine]\nsynthesis_workers = "two"\n[service]\nport = 0\n')
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: synthesis_workers: expected a whole number"):
        load_files(path)


def _prove(tmp_path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "prove", *flags, f"{SUDOKU}.zkey", f"{SUDOKU}.wtns",
                           str(tmp_path / "p.json"), str(tmp_path / "q.json")], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_prove_config_with_a_bad_key_exits_2_with_one_line(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text('synthesis_workers = "two"\n')
    p = _prove(tmp_path, "--config", str(path))
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == f"error: {path}: synthesis_workers: expected a whole number, got the string 'two'\n"
    p = _prove(tmp_path, "--json", "--config", str(path))
    assert p.returncode == 2 and [json.loads(line)["event"] for line in p.stderr.splitlines()] == ["error"]
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("flags", [["--key-cache-dir", ""], ["--key-cache-dir", " ", "--synthesis-workers", "1"]])
def test_an_empty_key_cache_dir_flag_is_refused(tmp_path, flags):
    """`--key-cache-dir "$UNSET"` used the default directory, even where $GROTH16_KEY_CACHE named another (on prove's
    direct path and through the Engine alike)."""
    p = _prove(tmp_path, *flags)
    assert p.returncode == 2 and p.stderr.startswith("error: --key-cache-dir: an empty directory name"), p.stderr
    assert p.stderr.count("\n") == 1


@pytest.mark.parametrize("value, words", [("9" * 5000, "a number of over 4300 digits; must be >= 1"),
                                          ("x" * 5000, "expected a whole number >= 1")])
def test_a_long_environment_value_is_cut_in_its_error(monkeypatch, value, words):
    """GROTH16_WITNESS_MAX_WINDOW of 5000 digits was a 5000-character line saying "expected a whole number"."""
    from engine.env_setting import config_error, integer

    monkeypatch.setenv("GROTH16_X", value)
    with pytest.raises(ConfigError) as info:
        integer("GROTH16_X", None, config_error, least=1)
    assert len(str(info.value)) < 100 and words in str(info.value), str(info.value)


@pytest.mark.parametrize("text, words", [
    ('[service]\nport = "80"', "service.port: expected a whole number, got the string '80'"),
    ("[service]\nprot = 80", "service.prot: not a key of the service table (did you mean service.port?)"),
    ("[service]\nmax_body = 1.5", 'service.max_body: expected a size (bytes, or a string such as "1GiB"), got the '
                                  "number 1.5"),
    ("[service]\ntoken_file = 5", "service.token_file: expected a file name (a string), got the whole number 5"),
])
def test_the_service_table_is_said_in_the_engines_words_too(tmp_path, text, words):
    """serve's [service] table (engine/service/settings.py) was still msgspec's: "[service]: Expected `int`, got
    `str` - at `$.port`", "Object contains unknown field `prot`"."""
    from engine.service.settings import load_files

    path = tmp_path / "engine.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_files(path)
    assert str(info.value) == f"{path}: {words}"
