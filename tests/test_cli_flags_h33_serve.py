"""serve's numeric flags and [service] keys that took nonsense (an infinite deadline or timeout), and the exposure
check that named --host for a host the configuration file gave.

Subprocesses run with cwd = the repo root, so they import this tree's code; a server that starts anyway is
stopped by the test's timeout and counted as the failure it is."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO


def serve(*argv: str, cwd=REPO) -> tuple[int, str]:
    """serve's exit code and stderr; a server that started (the flag accepted) is stopped and reported."""
    p = subprocess.Popen([sys.executable, "-m", "engine", "serve", "--backend", "cpu", "--port", "0", *argv],
                         cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "GROTH16_KEY_CACHE": "off"})
    try:
        out, err = p.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return -1, "started anyway: " + err
    return p.returncode, err


@pytest.mark.parametrize("flag, value", [
    ("--default-deadline", "inf"), ("--upload-timeout", "1e400"), ("--drain-timeout", "Infinity"),
    ("--idle-timeout", "-inf"), ("--default-deadline", "nan"), ("--upload-timeout", "-1"),
    ("--idle-timeout", "soon"),
])
def test_a_seconds_flag_that_is_not_a_finite_number_is_one_line_naming_flag_and_value(flag, value):
    code, err = serve(f"{flag}={value}")  # (`--flag -inf` is argparse's "expected one argument")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {flag}: {value} "), err


@pytest.mark.parametrize("key", ["default_deadline_s", "drain_timeout_s", "upload_timeout_s", "idle_timeout_s",
                                 "job_ttl_s"])
def test_a_seconds_key_of_the_service_table_that_is_infinite_is_refused_naming_file_and_key(tmp_path, key):
    from engine.config import ConfigError
    from engine.service.settings import ServiceConfig, load_files

    path = tmp_path / "e.toml"
    path.write_text(f"[service]\n{key} = inf\n")
    with pytest.raises(ConfigError) as info:
        load_files(path)
    assert str(info.value).startswith(f"{path}: service.{key}: inf is not a finite"), str(info.value)
    with pytest.raises(ConfigError, match=f"^service.{key}: inf is not a finite number of seconds"):
        ServiceConfig(**{key: float("inf")})


def test_a_job_ttl_of_zero_is_refused():
    """job_ttl_s = 0 dropped every detached job's result before its owner could fetch it (a 404 for each)."""
    from engine.config import ConfigError
    from engine.service.settings import ServiceConfig

    with pytest.raises(ConfigError, match="^service.job_ttl_s: 0"):
        ServiceConfig(job_ttl_s=0)


def test_exposure_names_the_configuration_file_that_gave_the_host(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text('[service]\nhost = "0.0.0.0"\n')
    code, err = serve("--config", str(path))
    assert code == 2, err
    assert err.strip() == (f"error: {path}: [service] host = '0.0.0.0': serving beyond loopback needs a token file "
                           "(token_file in [service], or --token-file): every request would be anonymous"), err


def test_exposure_names_the_flag_where_the_flag_gave_the_host(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text('[service]\nhost = "127.0.0.1"\n')
    code, err = serve("--config", str(path), "--host", "0.0.0.0")
    assert code == 2, err
    assert err.strip().startswith("error: --host 0.0.0.0: serving beyond loopback needs"), err


@pytest.mark.parametrize("host", ["no such host", "256.1.1.1"])
def test_a_host_that_names_no_address_is_said_so_not_asked_for_a_token(host, tmp_path):
    """It said "serving beyond loopback needs --token-file"; given one, the server then failed to bind, with a
    line that named neither the flag nor the file that gave the host."""
    code, err = serve("--host", host)
    assert code == 2, err
    assert err.startswith(f"error: --host {host}: names no address to listen on"), err
    assert "token" not in err, err
    tokens = tmp_path / "tokens"
    tokens.write_text("t" * 32 + "\n")
    path = tmp_path / "engine.toml"
    path.write_text(f'[service]\nhost = "{host}"\ntoken_file = "{tokens}"\n')
    code, err = serve("--config", str(path))
    assert code == 2, err
    assert err.startswith(f"error: {path}: [service] host = '{host}': names no address to listen on"), err


def test_a_token_file_of_the_configuration_that_cannot_be_read_names_the_file_and_key(tmp_path):
    """It said "tok: cannot read the token file", naming neither the configuration nor that a relative name is
    read from the current directory (not the configuration's)."""
    path = tmp_path / "engine.toml"
    path.write_text('[service]\ntoken_file = "tok"\n')
    (tmp_path / "tok").write_text("x" * 32 + "\n")
    code, err = serve("--config", str(path))  # run from the repo root: no ./tok there
    assert code == 2, err
    assert err.startswith(f"error: {path}: [service] token_file = 'tok': "), err
    assert "cannot read the token file" in err and "current directory" in err, err


@pytest.mark.parametrize("value, shown", [("0", "'0'"), ("0.4", "'0.4'"), (0, "0")])
def test_a_max_body_below_one_byte_names_the_value(value, shown):
    """It said "--max-body: must be at least 1 byte", naming no value (`0.4` is 0 bytes once parsed)."""
    from engine.config import ConfigError
    from engine.service.settings import ServiceConfig, with_flags

    with pytest.raises(ConfigError, match=f"^--max-body: {shown} is less than 1 byte"):
        with_flags(ServiceConfig(), max_body=value)


@pytest.mark.parametrize("flag", ["--host-budget", "--vram-budget"])
def test_a_budget_of_zero_bytes_is_refused_before_the_server_starts(flag):
    """A server with `--host-budget 0` started, then failed every proof ("one witness needs 7.0 KiB of host memory
    but the host budget is 0 B"); no key or witness fits in 0 bytes."""
    argv = [flag, "0"] + (["--backend", "gpu"] if flag == "--vram-budget" else [])  # (the GPU's flag: checked first)
    code, err = serve(*argv)
    assert code == 2, err
    assert err.startswith(f"error: {flag}: 0 bytes"), err


def test_a_huge_count_is_no_overflow_traceback():
    """The finiteness check of the seconds took running_jobs too: float(10**400) raised an OverflowError."""
    from engine.service.settings import ServiceConfig, with_flags

    assert with_flags(ServiceConfig(), running_jobs=10**400).running_jobs == 10**400
