"""Small inputs that never end: a --config or --token-file given as /dev/zero or as a pipe that writes for ever
(`<(yes)`) must be one error line, not a read that takes all the memory there is.  The commands run under a
memory limit, so that what used to happen ("out of host memory") shows without taking the machine's memory."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO

TINY = FIXTURES / "tiny" / "bn128"


def _env() -> dict:
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *inherited])}


def _memory_limit() -> None:
    import resource  # noqa: PLC0415

    resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))


def _endless(tmp_path: Path, source: str) -> str:
    """/dev/zero, or a FIFO that a thread here writes "y\\n" into for ever (until its reader leaves)."""
    if source == "/dev/zero":
        return source
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)

    def write() -> None:
        fd = os.open(fifo, os.O_WRONLY)
        try:
            while True:
                os.write(fd, b"y\n" * 32768)
        except OSError:  # the reader left (EPIPE)
            pass
        finally:
            os.close(fd)

    threading.Thread(target=write, daemon=True).start()
    return str(fifo)


def _run(tmp_path: Path, *argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], cwd=tmp_path, env=_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                          preexec_fn=_memory_limit)


@pytest.mark.parametrize("source", ["/dev/zero", "pipe"])
def test_an_endless_config_file_is_one_line(tmp_path, source):
    """read_toml read the file whole: all the memory there was."""
    config = _endless(tmp_path, source)
    proc = _run(tmp_path, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", tmp_path / "p.json",
                tmp_path / "q.json", "--backend", "cpu", "--config", config)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"error: {config}: gave more than 1 MiB without ending (not a regular file)"]
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("source", ["/dev/zero", "pipe"])
def test_an_endless_token_file_is_one_line(tmp_path, source):
    """token_file_tokens read the file whole: all the memory there was (the server is never reached)."""
    tokens = _endless(tmp_path, source)
    proc = _run(tmp_path, "prove", "--server", "http://127.0.0.1:9", "--token-file", tokens, TINY / "tiny.zkey",
                TINY / "tiny.wtns", tmp_path / "p.json", tmp_path / "q.json")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"error: {tokens}: the token file gave more than 1 MiB without ending (not a regular file)"]
