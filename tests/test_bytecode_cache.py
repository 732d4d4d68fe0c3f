"""The CLI keeps its modules' bytecode in its own cache where Python may not write it beside them
(engine/bytecode_cache.py): later commands read it instead of compiling every module again."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import bytecode_cache

ROOT = Path(__file__).resolve().parents[1]
WTNS = ROOT / "examples" / "bn128" / "sudoku.wtns"


def test_chosen_dir_follows_the_setting(tmp_path):
    assert bytecode_cache.chosen_dir({"XDG_CACHE_HOME": str(tmp_path)}) == str(
        tmp_path / "groth16-engine" / "pycache")
    assert bytecode_cache.chosen_dir({"GROTH16_PYCACHE": str(tmp_path / "here")}) == str(tmp_path / "here")
    for off in ("off", "OFF", "0", "none", " no "):
        assert bytecode_cache.chosen_dir({"GROTH16_PYCACHE": off}) is None


@pytest.fixture
def interpreter_flags(monkeypatch):
    """Restore the interpreter's bytecode settings whatever a test does to them."""
    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
    monkeypatch.setattr(sys, "pycache_prefix", sys.pycache_prefix)


def test_enable_only_where_bytecode_may_not_be_written_and_no_prefix_is_set(tmp_path, interpreter_flags):
    env = {"GROTH16_PYCACHE": str(tmp_path)}
    sys.dont_write_bytecode, sys.pycache_prefix = False, None
    assert bytecode_cache.enable(env) is None and sys.pycache_prefix is None  # Python writes beside them

    sys.dont_write_bytecode, sys.pycache_prefix = True, "/the/users/prefix"
    assert bytecode_cache.enable(env) is None and sys.pycache_prefix == "/the/users/prefix"
    assert sys.dont_write_bytecode

    sys.dont_write_bytecode, sys.pycache_prefix = True, None
    assert bytecode_cache.enable({"GROTH16_PYCACHE": "off"}) is None
    assert sys.pycache_prefix is None and sys.dont_write_bytecode

    assert bytecode_cache.enable(env) == str(tmp_path)
    assert sys.pycache_prefix == str(tmp_path) and not sys.dont_write_bytecode


def _cli(tmp_path: Path, **extra: str) -> tuple[list[str], list[str]]:
    """Run a light CLI command under `python -v` with bytecode writing off; the bytecode files it wrote and
    the ones it read."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "GROTH16_PYCACHE")}
    env.update(PYTHONDONTWRITEBYTECODE="1", XDG_CACHE_HOME=str(tmp_path), **extra)
    run = subprocess.run([sys.executable, "-v", "-m", "engine", "info", str(WTNS)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "wtns" in run.stdout
    lines = run.stderr.splitlines()
    wrote = [ln.split("'")[1] for ln in lines if ln.startswith("# created '") and ln.endswith(".pyc'")]
    read = [ln.split("'")[1] for ln in lines if ln.startswith("# code object from '")]
    return wrote, read


def test_the_cli_writes_bytecode_into_its_cache_once_and_reads_it_after(tmp_path):
    cache = tmp_path / "groth16-engine" / "pycache"
    wrote, _ = _cli(tmp_path)
    assert wrote, "the first command wrote no bytecode"
    assert all(Path(p).is_relative_to(cache) for p in wrote), [p for p in wrote if cache.as_posix() not in p]
    assert any("engine" in p and "cli" in Path(p).name for p in wrote)  # the CLI's own modules among them

    again, read = _cli(tmp_path)
    assert again == []  # nothing compiled the second time
    from_cache = {p for p in read if Path(p).is_relative_to(cache)}
    assert set(wrote) <= from_cache


def test_off_writes_nothing(tmp_path):
    wrote, read = _cli(tmp_path, GROTH16_PYCACHE="off")
    assert wrote == []
    assert not (tmp_path / "groth16-engine").exists()
    assert not [p for p in read if str(tmp_path) in p]


def test_a_cache_that_cannot_be_written_leaves_the_command_as_it_was(tmp_path):
    """A cache directory that cannot be made (here a path through a file): Python compiles the modules from
    source as it would without the cache, and the command succeeds."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    wrote, read = _cli(tmp_path, GROTH16_PYCACHE=str(blocker / "pycache"))
    assert wrote == []
    assert not [p for p in read if str(blocker) in p]
    assert blocker.read_text() == "not a directory"


@pytest.mark.parametrize("cut", ["header", "half"])
@pytest.mark.parametrize("which", ["cli", "commands/info"])
def test_a_damaged_file_in_the_cache_is_cleared_and_the_command_runs(tmp_path, which, cut):
    """CPython writes a .pyc with one unchecked write(): a disk that filled meanwhile left a truncated file,
    and every later command failed with "EOFError: marshal data too short" until the cache was deleted.  Cut in
    the middle of its code it is "EOF read where object expected" (or "bad marshal data"), which was not taken
    for damage: a traceback on every later command."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "GROTH16_PYCACHE")}
    env.update(PYTHONDONTWRITEBYTECODE="1", GROTH16_PYCACHE=str(tmp_path / "pycache"))

    def info() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "engine", "info", str(WTNS)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    assert info().returncode == 0  # fills the cache
    (pyc,) = (tmp_path / "pycache").rglob(f"{Path(which).name}.cpython-*.pyc")
    assert pyc.parent.name == (Path(which).parent.name or ROOT.name)  # the checkout's own module, not a namesake
    data = pyc.read_bytes()
    pyc.write_bytes(data[:40] if cut == "header" else data[:len(data) // 2])  # the header whole, the code cut short
    run = info()
    assert run.returncode == 0 and "wtns" in run.stdout, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith("warning: the bytecode cache ") and "cleared, running the command again" in run.stderr
    again = info()  # the cache refilled with whole files
    assert again.returncode == 0 and again.stderr == ""


def test_a_file_size_limit_leaves_the_cache_unwritten(tmp_path):
    """Under `ulimit -f` a .pyc larger than the limit was written cut at the limit (Python ignores SIGXFSZ and does
    not check its write), and every later command read the damaged file (anyio's backend at 64 KiB: a traceback on
    every proof through the Engine).  Under a finite limit the CLI keeps no bytecode cache."""
    import resource  # noqa: PLC0415

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "GROTH16_PYCACHE")}
    env.update(PYTHONDONTWRITEBYTECODE="1", GROTH16_PYCACHE=str(tmp_path / "pycache"))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 10, 16 << 10))

    run = subprocess.run([sys.executable, "-m", "engine", "info", str(WTNS)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120, preexec_fn=limited)
    assert run.returncode == 0, run.stderr[-2000:]
    assert not list((tmp_path / "pycache").rglob("*.pyc"))


def test_every_cut_of_a_pyc_is_taken_for_damage():
    """A .pyc cut in the middle of an object reads as "EOF read where object expected" (CI's anyio backend cut at
    64 KiB), which the check for "marshal data" missed."""
    assert bytecode_cache.damaged(EOFError("EOF read where object expected"))
    assert bytecode_cache.damaged(EOFError("marshal data too short"))
    assert bytecode_cache.damaged(ValueError("bad marshal data (unknown type code)"))
    assert not bytecode_cache.damaged(ValueError("invalid literal for int()"))
