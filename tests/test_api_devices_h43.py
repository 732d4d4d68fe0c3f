"""Devices the machine lacks, said at the engine's start: "devices: [5] not present (this machine has 1 CUDA
device(s))" showed a Python list and a "(s)" and left a caller no way to say where the list came from.  Now one
sentence with the machine's count, and the key and the problem apart (`key`, `problem`) for a caller (the CLI)
that names the flag or the file that gave the list.  A fake device count: no GPU is needed."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

import engine.backends.select as select
from engine.api import Engine
from engine.config import ConfigError, EngineConfig


def _start_error(monkeypatch, devices: list[int], count: int) -> ConfigError:
    monkeypatch.setattr(select, "cuda_device_count", lambda: count)

    async def main() -> None:
        async with Engine(EngineConfig(backend="gpu", devices=devices)):
            pass

    with pytest.raises(ConfigError) as caught:
        asyncio.run(main())
    return caught.value


@pytest.mark.parametrize("devices, count, problem", [
    ([5], 1, "device 5 is not present (this machine has 1 CUDA device)"),
    ([0, 5, 7], 2, "devices 5 and 7 are not present (this machine has 2 CUDA devices)"),
    ([1, 2, 3], 1, "devices 1, 2 and 3 are not present (this machine has 1 CUDA device)"),
    (list(range(12)), 1, "devices 1, 2, 3, 4, 5, 6, 7, 8 and 3 more are not present (this machine has 1 CUDA "
                         "device)"),
])
def test_a_device_the_machine_lacks_is_one_sentence_with_the_machines_count(monkeypatch, devices, count, problem):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    error = _start_error(monkeypatch, devices, count)
    assert str(error) == f"devices: {problem}"
    assert (error.key, error.problem) == ("devices", problem)


def test_cuda_visible_devices_is_named_where_it_hides_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    error = _start_error(monkeypatch, [1], 1)
    assert str(error) == "devices: device 1 is not present (CUDA_VISIBLE_DEVICES='3' leaves this process 1 CUDA device)"


def test_devices_the_machine_has_pass_that_check(monkeypatch):
    """Devices 0 and 1 of 2 get past it, to the backend's own start (here: refused on purpose, to stop there)."""
    made = []

    def backend(name, device=None, **options):
        made.append(device)
        raise ConfigError("stop here")

    monkeypatch.setattr(select, "select_backend", backend)
    assert str(_start_error(monkeypatch, [0, 1], 2)) == "stop here"
    assert made == [0]


FAKE_ONE_GPU = """
import sys
sys.path.insert(0, sys.argv[1])
import engine.backends.select as select
select.cuda_device_count = lambda: 1  # one CUDA device, as far as the engine asks
import cli
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("given, named", [(["--devices", "5"], "--devices"),
                                          (["--config", "engine.toml"], "engine.toml: devices")])
def test_the_command_line_says_the_device_and_the_machines_count(tmp_path, given, named):
    """The CLI's one error line names the value as the user gave it: by the flag, else by the --config file
    (cli._as_given reads the error's `key` and `problem`; the engine's start no longer knows who gave the list)."""
    (tmp_path / "engine.toml").write_text("devices = [5]\n")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    key, witness = EXAMPLES / "bn128" / "sudoku.zkey", EXAMPLES / "bn128" / "sudoku.wtns"
    run = subprocess.run([sys.executable, "-c", FAKE_ONE_GPU, str(REPO), "prove", str(key), str(witness),
                          "proof.json", "public.json", "--backend", "gpu", "--json", *given], cwd=tmp_path,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, env=env)
    assert run.returncode == 2, run.stderr
    error = json.loads(run.stderr.splitlines()[-1])
    assert error["error"] == "ConfigError", error
    assert error["message"] == f"{named}: device 5 is not present (this machine has 1 CUDA device)", error
    assert not (tmp_path / "proof.json").exists()
