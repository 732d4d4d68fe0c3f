"""Cache folders from blank variables: a blank value (spaces only, `VAR="$UNSET "`) is unset, for every cache.

Before: `GROTH16_KERNEL_CACHE="  "` put the CUDA kernels' cache in a folder named by two spaces in the working
directory, and `XDG_CACHE_HOME="  "` did the same for the kernels', the keys' and the bytecode's default folders
(the wasm cache's was fixed before, tests/test_flag_edges_h41.py); `GROTH16_KERNEL_CACHE=~/kernels` was a folder
named "~" where every other cache variable's ~ is the home folder.  A path with spaces in it is kept as given."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

BLANKS = ["", "  ", "\t \n"]


@pytest.fixture
def home(monkeypatch, tmp_path) -> Path:
    """A home folder of the test's, every cache variable unset."""
    for name in ("XDG_CACHE_HOME", "GROTH16_KERNEL_CACHE", "GROTH16_KEY_CACHE", "GROTH16_PYCACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _kernels() -> Path:
    from cuda_kernels import build

    return build.cache_dir()


def _keys() -> Path:
    from engine.formats import key_cache

    assert key_cache.default_dir() == key_cache.resolve_dir()
    return key_cache.default_dir()


def _pycache() -> Path:
    from engine import bytecode_cache

    assert bytecode_cache.default_dir() == bytecode_cache.chosen_dir()
    return Path(bytecode_cache.default_dir())


@pytest.mark.parametrize("where, folder", [(_kernels, "kernels"), (_keys, "keys"), (_pycache, "pycache")],
                         ids=["kernels", "keys", "pycache"])
@pytest.mark.parametrize("blank", BLANKS)
def test_a_blank_xdg_cache_home_is_unset_for_every_cache(monkeypatch, home, blank, where, folder):
    monkeypatch.setenv("XDG_CACHE_HOME", blank)
    assert where() == home / ".cache" / "groth16-engine" / folder


@pytest.mark.parametrize("blank", BLANKS)
def test_a_blank_kernel_cache_is_the_default(monkeypatch, home, blank):
    from cuda_kernels import build

    monkeypatch.setenv("GROTH16_KERNEL_CACHE", blank)
    assert build.cache_dir() == home / ".cache" / "groth16-engine" / "kernels"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xdg"))
    assert build.cache_dir() == home / "xdg" / "groth16-engine" / "kernels"


def test_paths_with_spaces_are_kept_as_given(monkeypatch, home):
    from cuda_kernels import build
    from engine import bytecode_cache
    from engine.formats import key_cache

    spaced = str(home / "my caches ")
    monkeypatch.setenv("XDG_CACHE_HOME", spaced)
    assert build.cache_dir() == Path(spaced) / "groth16-engine" / "kernels"
    assert key_cache.default_dir() == Path(spaced) / "groth16-engine" / "keys"
    assert bytecode_cache.default_dir() == os.path.join(spaced, "groth16-engine", "pycache")
    monkeypatch.setenv("GROTH16_KERNEL_CACHE", str(home / "cu bins"))
    assert build.cache_dir() == home / "cu bins"


def test_the_kernel_cache_s_tilde_is_the_home_folder(monkeypatch, home):
    from cuda_kernels import build

    monkeypatch.setenv("GROTH16_KERNEL_CACHE", "~/kernels")
    assert build.cache_dir() == home / "kernels"


def test_the_cache_command_lists_the_home_folder_s_keys_under_a_blank_xdg_cache_home(tmp_path):
    """End to end: `cache list` under XDG_CACHE_HOME="  " reads ~/.cache's keys (it listed "  /groth16-engine/keys",
    a folder named by spaces in the working directory)."""
    env = {k: v for k, v in os.environ.items() if k != "GROTH16_KEY_CACHE"}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME="  ", PYTHONPATH=str(REPO))
    keys = tmp_path / ".cache" / "groth16-engine" / "keys"
    keys.mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-m", "engine", "cache", "list", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dir"] == str(keys), proc.stdout
    assert sorted(os.listdir(tmp_path)) == [".cache"]
