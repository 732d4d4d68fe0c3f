"""The command line's surface: --version, the program's name, flags named as typed, config files whose engine keys
sit in two places, export-vkey's --quiet/--json, info on a .wtns of an unsupported prime, simulation bounds.

Subprocesses run with cwd = the repo root, so they import this tree's code."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO

SUDOKU = EXAMPLES / "bn128" / "sudoku"
PYPROJECT_VERSION = next(line.split('"')[1] for line in (REPO / "pyproject.toml").read_text().splitlines()
                         if line.startswith("version"))


def cli(*argv: str, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


PROBE = """
import json, sys
from cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "cuda", "msgspec", "asyncio", "wasmtime")
               or m.startswith("engine.commands."))
print(json.dumps({"code": code, "heavy": heavy}))
"""


def test_version_prints_the_package_version_and_exits_0():
    p = cli("--version")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["groth16-engine", PYPROJECT_VERSION], p.stdout
    assert p.stderr == ""


def test_version_loads_no_command_and_nothing_heavy():
    p = subprocess.run([sys.executable, "-c", PROBE, "--version"], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"code": 0, "heavy": []}, out


def test_version_is_listed_in_help():
    p = cli("--help")
    assert p.returncode == 0 and "--version" in p.stdout, p.stdout


@pytest.mark.parametrize("body", ["import engine.__main__\n", "from cli import main\nsys.exit(main())\n"])
def test_help_names_the_program_as_it_was_run(tmp_path, body):
    """The installed script (`groth16-engine`: engine.__main__:main, an older install's cli:main) showed
    `usage: python -m engine`."""
    script = tmp_path / "groth16-engine"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\n{body}")
    script.chmod(0o755)
    p = subprocess.run([str(script), "info", "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: groth16-engine info"), p.stdout[:80]
    p = cli("info", "--help")
    assert p.stdout.startswith("usage: python -m engine info"), p.stdout[:80]


@pytest.mark.parametrize("argv, flag", [(["--port", "99999"], "--port"), (["--max-queued-per-key", "0"],
                                                                          "--max-queued-per-key"),
                                        (["--drain-timeout", "-1"], "--drain-timeout"),
                                        (["--max-body", "lots"], "--max-body")])
def test_serve_flag_errors_name_the_flag(argv, flag):
    from engine.config import ConfigError
    from engine.service.settings import ServiceConfig, with_flags

    names = {"--port": "port", "--max-queued-per-key": "max_queued_per_key", "--drain-timeout": "drain_timeout_s",
             "--max-body": "max_body"}
    value = {"--port": 99999, "--max-queued-per-key": 0, "--drain-timeout": -1.0, "--max-body": "lots"}[flag]
    with pytest.raises(ConfigError) as info:
        with_flags(ServiceConfig(), **{names[flag]: value})
    assert str(info.value).startswith(f"{flag}: "), str(info.value)
    assert "service." not in str(info.value) and "command-line flags" not in str(info.value)


def test_serve_port_flag_error_on_the_command_line():
    p = cli("serve", "--port", "99999")
    assert p.returncode == 2
    assert p.stderr.strip() == "error: --port: 99999 is not a TCP port", p.stderr


@pytest.mark.parametrize("text", ['backend = "cpu"\n[engine]\nverify = true\n',
                                  'verify = false\nbackend = "cpu"\n[engine]\nlock_mode = "single"\n[service]\n'])
def test_config_with_engine_keys_in_two_places_is_refused(tmp_path, text):
    from engine.config import ConfigError, load
    from engine.service.settings import load_files

    path = tmp_path / "engine.toml"
    path.write_text(text)
    for read in (load, load_files):
        with pytest.raises(ConfigError) as info:
            read(path)
        message = str(info.value)
        assert message.startswith(f"{path}: ") and "backend" in message and "[engine]" in message, message
        assert "\n" not in message


def test_prove_config_with_engine_keys_in_two_places_exits_2(tmp_path):
    (tmp_path / "c.toml").write_text('backend = "cpu"\n[engine]\nverify = true\n')
    p = cli("prove", "--config", str(tmp_path / "c.toml"), f"{SUDOKU}.zkey", f"{SUDOKU}.wtns",
            str(tmp_path / "p.json"), str(tmp_path / "q.json"), "--quiet")
    assert p.returncode == 2 and p.stderr.startswith("error: ") and "backend" in p.stderr, p.stderr
    assert len(p.stderr.splitlines()) == 1
    assert not (tmp_path / "p.json").exists()


def test_config_with_only_an_engine_table_or_only_top_level_keys_still_reads(tmp_path):
    from engine.config import load
    from engine.service.settings import load_files

    (tmp_path / "a.toml").write_text('[engine]\nbackend = "cpu"\n[service]\nport = 0\n')
    (tmp_path / "b.toml").write_text('backend = "cpu"\n[service]\nport = 0\n')
    for name in ("a.toml", "b.toml"):
        assert load(tmp_path / name).backend == "cpu"
        engine_config, service_config = load_files(tmp_path / name)
        assert (engine_config.backend, service_config.port) == ("cpu", 0)


def test_export_vkey_takes_quiet_and_json(tmp_path):
    p = cli("export-vkey", "--quiet", f"{SUDOKU}.zkey", str(tmp_path / "v.json"))
    assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), p.stderr
    assert (tmp_path / "v.json").read_bytes() == (EXAMPLES / "bn128" / "verification_key.json").read_bytes()
    p = cli("export-vkey", "--json", f"{SUDOKU}.zkey", str(tmp_path / "w.json"))
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result["event"] == "result" and result["vkey"] == str(tmp_path / "w.json") and result["curve"] == "bn128"
    assert result["public_signals"] == 16
    p = cli("export-vkey", "--json", str(tmp_path / "missing.zkey"), str(tmp_path / "x.json"))
    assert p.returncode == 2
    error = json.loads(p.stderr.strip().splitlines()[-1])
    assert error["event"] == "error" and "missing.zkey" in error["message"], p.stderr


def _wtns_of_prime(path: Path, prime: int) -> None:
    values = [1, 2, 3]
    head = (32).to_bytes(4, "little") + prime.to_bytes(32, "little") + len(values).to_bytes(4, "little")
    data = b"".join(v.to_bytes(32, "little") for v in values)
    path.write_bytes(b"wtns" + (2).to_bytes(4, "little") + (2).to_bytes(4, "little")
                     + (1).to_bytes(4, "little") + len(head).to_bytes(8, "little") + head
                     + (2).to_bytes(4, "little") + len(data).to_bytes(8, "little") + data)


PALLAS = 0x40000000000000000000000000000000224698FC094CF91B992D30ED00000001  # circom --prime pallas


def _r1cs_of_prime(path: Path, prime: int) -> None:
    """A header-only .r1cs (no constraints) over `prime`: 3 wires, 1 public output."""
    head = (32).to_bytes(4, "little") + prime.to_bytes(32, "little") + b"".join(
        n.to_bytes(4, "little") for n in (3, 1, 0, 1)) + (0).to_bytes(8, "little") + (0).to_bytes(4, "little")
    path.write_bytes(b"r1cs" + (1).to_bytes(4, "little") + (2).to_bytes(4, "little")
                     + (1).to_bytes(4, "little") + len(head).to_bytes(8, "little") + head
                     + (2).to_bytes(4, "little") + (0).to_bytes(8, "little"))


def test_info_describes_a_wtns_and_an_r1cs_of_another_prime_alike_naming_it(tmp_path):
    """A .wtns of a prime no supported curve has (`witness` writes them for every circom prime of 32 bytes) showed
    "curve: -", naming no prime, while an .r1cs of that prime was refused: both are described, the prime named."""
    _wtns_of_prime(tmp_path / "w.wtns", PALLAS)
    _r1cs_of_prime(tmp_path / "c.r1cs", PALLAS)
    for name in ("w.wtns", "c.r1cs"):
        p = cli("info", "--json", str(tmp_path / name))
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        assert (out["curve"], out["prime"], out["prime_name"]) == (None, str(PALLAS), "pallas"), out
        p = cli("info", str(tmp_path / name))
        assert p.returncode == 0, p.stderr
        assert "curve:" in p.stdout and "pallas" in p.stdout.split("curve:")[1].splitlines()[0], p.stdout
    assert json.loads(cli("info", "--json", str(tmp_path / "c.r1cs")).stdout)["wires"] == 3


def test_proving_or_setup_with_an_r1cs_of_another_prime_is_still_refused(tmp_path):
    _r1cs_of_prime(tmp_path / "c.r1cs", PALLAS)
    p = cli("setup", "--quiet", str(tmp_path / "c.r1cs"), str(tmp_path / "k.zkey"))
    assert p.returncode == 2 and "pallas" in p.stderr and "not supported" in p.stderr, p.stderr


def test_simulation_devices_are_bounded():
    from engine.config import ConfigError, SimulationConfig

    assert SimulationConfig(devices=8).devices == 8
    with pytest.raises(ConfigError, match=r"simulation\.devices: 100000000 is more than"):
        SimulationConfig(devices=100_000_000)


@pytest.mark.parametrize("argv", [["prove", "--config", ""], ["prove", "--timeline", ""], ["serve", "--config", ""],
                                  ["serve", "--token-file", ""], ["serve", "--timeline", ""]])
def test_an_empty_file_name_is_refused_naming_the_flag(tmp_path, argv):
    """`prove --config ''` proved without a word (the empty name read as no file); `--timeline ''` said "cannot
    write: there is no folder  (...)" with no name, `serve --token-file ''` "cannot read the token file"."""
    flag = argv[1]
    p = cli(*argv, "--backend", "cpu", f"{SUDOKU}.zkey", f"{SUDOKU}.wtns", str(tmp_path / "p.json"),
            str(tmp_path / "q.json")) if argv[0] == "prove" else cli(*argv, "--backend", "cpu", "--port", "0")
    assert p.returncode == 2, p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert flag in line and "empty" in line, p.stderr
    assert not (tmp_path / "p.json").exists()


def test_empty_names_in_a_config_file_are_refused(tmp_path):
    from engine.config import ConfigError, EngineConfig, load
    from engine.service.settings import load_files

    (tmp_path / "a.toml").write_text('backend = "cpu"\ntimeline = ""\n')
    with pytest.raises(ConfigError, match=r"a\.toml: timeline: an empty file name"):
        load(tmp_path / "a.toml")
    (tmp_path / "b.toml").write_text('[service]\ntoken_file = ""\n')
    with pytest.raises(ConfigError, match=r"token_file: an empty file name"):
        load_files(tmp_path / "b.toml")
    with pytest.raises(ConfigError, match="timeline: an empty file name"):
        EngineConfig(timeline="")
    with pytest.raises(ConfigError, match="empty name"):
        load("")


def test_serve_empty_host_is_named_visibly():
    """`serve --host ''` (every interface) said "--host : serving beyond loopback ...", the value invisible."""
    from engine.config import ConfigError
    from engine.service.settings import ServiceConfig, check_exposure

    with pytest.raises(ConfigError, match=r"^--host '': serving beyond loopback"):
        check_exposure(ServiceConfig(host=""), [])


@pytest.mark.parametrize("argv, name", [
    (["prove", "--backend", "cpu", "--r1cs", "", f"{SUDOKU}.zkey", f"{SUDOKU}.wtns", "P", "Q"], "--r1cs"),
    (["prove", "--backend", "cpu", "--wasm", "", "--input", "", f"{SUDOKU}.zkey", "P", "Q"], "--wasm"),
    (["prove", "--backend", "cpu", "", f"{SUDOKU}.wtns", "P", "Q"], "circuit.zkey"),
    (["info", ""], "file"), (["export-vkey", f"{SUDOKU}.zkey", ""], "verification_key.json"),
    (["witness", "", "", "W"], "circuit.wasm"), (["verify", "", "", ""], "verification_key.json")])
def test_an_empty_positional_or_file_option_is_a_usage_error(tmp_path, argv, name):
    """`prove --r1cs ''` proved without the check it asks for (exit 0); `info ''` said "no such file", naming
    nothing; `export-vkey k.zkey ''` "cannot write: there is no folder  (...)"."""
    argv = [str(tmp_path / a) if a in ("P", "Q", "W") else a for a in argv]
    p = cli(*argv)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines()[-1].endswith(f"error: argument {name}: an empty name is not a file"), p.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [["--version"], ["--version", "info"]])
def test_version_into_a_full_device_is_one_error_line(argv):
    """`--version > /dev/full` was an InputFileError traceback."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "engine", *argv], cwd=REPO, stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip() == "error: standard output: cannot write: No space left on device", p.stderr


def test_version_falls_back_to_pyproject_where_not_installed(monkeypatch):
    import importlib.metadata

    import cli

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert cli.version() == PYPROJECT_VERSION


@pytest.mark.parametrize("at", [0, 2])
def test_prove_server_empty_positional_is_a_usage_error(tmp_path, at):
    """`prove --server URL '' w p q` (the client's plain-line reader) asked the server first ("cannot reach the
    prover server"), and an empty output said "cannot write: there is no folder  (...)"."""
    files = [f"{SUDOKU}.zkey", f"{SUDOKU}.wtns", str(tmp_path / "p.json"), str(tmp_path / "q.json")]
    files[at] = ""
    p = cli("prove", "--server", "http://127.0.0.1:9", *files)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1].endswith("an empty name is not a file"), p.stderr
