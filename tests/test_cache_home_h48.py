"""The caches' base folder is never relative to the working directory.

Before: `XDG_CACHE_HOME=cache` (relative: the XDG Base Directory spec says such a value is invalid and must be
ignored) and a blank or relative $HOME put the kernels', keys', wasm's and bytecode's caches in a folder of the
working directory, so each folder a command ran in got its own cache.  Now a relative $XDG_CACHE_HOME is ignored
(~/.cache), a blank or relative $HOME is unset (the password database's home), and with no absolute home at all
the bytecode cache is off and the others cache in a private folder of the process, said once as a warning."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import REPO

RELATIVE = ["cache", "./cache", "~/cache", "  /cache"]  # (the last: spaces first, so not absolute either)


def _all(cwd: Path) -> dict[str, Path | None]:
    from cuda_kernels import build
    from engine import bytecode_cache
    from engine.formats import key_cache
    from engine.witness import modcache

    os.chdir(cwd)
    pycache = bytecode_cache.chosen_dir()
    assert bytecode_cache.default_dir() == pycache
    assert key_cache.resolve_dir() == key_cache.default_dir()
    return {"kernels": build.cache_dir(), "keys": key_cache.default_dir(), "wasm": modcache.cache_dir(),
            "pycache": None if pycache is None else Path(pycache)}


@pytest.fixture
def clean(monkeypatch, tmp_path) -> Path:
    """Every cache variable unset, a working directory of the test's (restored after)."""
    for name in ("XDG_CACHE_HOME", "GROTH16_KERNEL_CACHE", "GROTH16_KEY_CACHE", "GROTH16_PYCACHE",
                 "GROTH16_ENGINE_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    return tmp_path


@pytest.mark.parametrize("xdg", RELATIVE)
def test_a_relative_xdg_cache_home_is_ignored_by_every_cache(monkeypatch, clean, xdg):
    monkeypatch.setenv("HOME", str(clean / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    base = clean / "home" / ".cache" / "groth16-engine"
    assert _all(clean / "work") == {name: base / name for name in ("kernels", "keys", "wasm", "pycache")}


def test_an_absolute_xdg_cache_home_is_kept_as_given(monkeypatch, clean):
    spaced = str(clean / "my caches ")
    monkeypatch.setenv("HOME", str(clean / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", spaced)
    assert _all(clean / "work") == {name: Path(spaced) / "groth16-engine" / name
                                    for name in ("kernels", "keys", "wasm", "pycache")}


class _Entry:
    def __init__(self, home: str):
        self.pw_dir = home


@pytest.mark.parametrize("home", ["", "  ", "home", "./home", "~"])
def test_a_blank_or_relative_home_is_unset(monkeypatch, clean, home):
    """The password database's home, as for an unset HOME (expanduser's own fallback)."""
    import pwd

    monkeypatch.setenv("HOME", home)
    monkeypatch.setenv("XDG_CACHE_HOME", "rel")
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: _Entry(str(clean / "db home")))
    base = clean / "db home" / ".cache" / "groth16-engine"
    assert _all(clean / "work") == {name: base / name for name in ("kernels", "keys", "wasm", "pycache")}


def _no_entry(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")


@pytest.mark.parametrize("db", [_no_entry, lambda uid: _Entry(""), lambda uid: _Entry("rel")],
                         ids=["no-entry", "blank-entry", "relative-entry"])
def test_no_absolute_home_at_all_is_no_lasting_cache_and_one_warning(monkeypatch, clean, db):
    """Nothing under the working directory: the bytecode cache is off; keys, wasm and kernels go to one private
    folder of this process (so a server still reuses them), said once (cuda_kernels/cache_home.py)."""
    import pwd

    from cuda_kernels import cache_home

    monkeypatch.setattr(cache_home, "_scratch", [])
    monkeypatch.setenv("HOME", "home")
    monkeypatch.setattr(pwd, "getpwuid", db)
    work = clean / "work"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = _all(work)
        assert _all(work) == first  # the same folder each time
    assert first["pycache"] is None
    for name in ("kernels", "keys", "wasm"):
        assert first[name].is_absolute() and first[name].name == name, first
        assert not first[name].is_relative_to(clean), first
    assert first["keys"].parent == first["wasm"].parent == first["kernels"].parent
    texts = [str(w.message) for w in caught]
    assert len(texts) == 1 and "neither $XDG_CACHE_HOME nor $HOME is an absolute path" in texts[0], texts
    assert list(work.iterdir()) == []


def test_the_cache_command_under_a_relative_xdg_cache_home_names_the_home_s_folder(tmp_path):
    """End to end: `cache path` in another folder named that folder's ./cache/groth16-engine/keys."""
    env = {k: v for k, v in os.environ.items() if k not in ("GROTH16_KEY_CACHE", "GROTH16_PYCACHE")}
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME="cache", PYTHONPATH=str(REPO))
    (tmp_path / "work").mkdir()
    proc = subprocess.run([sys.executable, "-m", "engine", "cache", "path", "--json"], cwd=tmp_path / "work",
                          env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dir"] == str(tmp_path / "home" / ".cache" / "groth16-engine" / "keys")
    assert list((tmp_path / "work").iterdir()) == []
