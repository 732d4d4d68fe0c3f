"""Temporary files of the on-disk caches that a killed writer left: the next run removes them.

engine/witness/modcache.py wrote `<key>.cwasm.<PID>.tmp` and cuda_kernels/build.py mkstemp `tmpXXXX.tmp` (a
CUBIN, the NVRTC memo) beside their entries; a process killed between the write and the rename (SIGKILL, the
OOM killer, the CLI's watchdog) left them for good, a compiled circuit each (megabytes).  A writer is
simulated killed by os._exit in place of its rename.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import wasmtime

from conftest import EXAMPLES, REPO

WASM = (EXAMPLES / "bn128" / "sudoku.wasm").read_bytes()


def _killed_before_rename(tmp_path, body: str) -> None:
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        os.replace = lambda *a: os._exit(137)  # killed between its write and its rename
        """) + textwrap.dedent(body)
    env = dict(os.environ, GROTH16_ENGINE_CACHE=str(tmp_path / "cache"), GROTH16_KERNEL_CACHE=str(tmp_path / "k"))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 137, proc.stderr


def test_a_killed_wasm_cache_writers_file_is_removed_by_the_next_run(tmp_path, monkeypatch):
    _killed_before_rename(tmp_path, f"""
        import wasmtime
        from engine.witness import modcache
        modcache.compile_and_store(wasmtime.Engine(), open({str(EXAMPLES / "bn128" / "sudoku.wasm")!r}, "rb").read(),
                                   "test")
        """)
    cache = tmp_path / "cache" / "wasm"
    assert [n for n in os.listdir(cache) if n.endswith(".tmp")], os.listdir(cache)  # (what the kill left)
    monkeypatch.setenv("GROTH16_ENGINE_CACHE", str(tmp_path / "cache"))
    from engine.witness import modcache  # noqa: PLC0415

    monkeypatch.setattr(modcache, "_swept", set(), raising=False)
    assert modcache.lookup(wasmtime.Engine(), b"\0asm other", "test") is None  # a run that only looks
    assert os.listdir(cache) == []


def test_a_killed_kernel_cache_writers_file_is_removed_by_the_next_run(tmp_path, monkeypatch):
    _killed_before_rename(tmp_path, """
        from cuda_kernels import build
        build.nvrtc_version = lambda: (13, 5)
        build._nvrtc_compile = lambda params, arch, options: (b"\\x7fELF" + bytes(4096), "")
        build.compile_cubin("// params")
        """)
    kernels = tmp_path / "k"
    assert [n for n in os.listdir(kernels) if n.endswith(".tmp")], os.listdir(kernels)
    monkeypatch.setenv("GROTH16_KERNEL_CACHE", str(kernels))
    from cuda_kernels import build  # noqa: PLC0415

    monkeypatch.setattr(build, "_swept", set(), raising=False)
    monkeypatch.setattr(build, "nvrtc_version", lambda: (13, 5))
    assert build.cached_cubin("// other params") is None  # a run that only looks
    assert [n for n in os.listdir(kernels) if n.endswith(".tmp")] == []


def test_a_live_writers_file_and_an_old_writers_fresh_one_are_left_alone(tmp_path, monkeypatch):
    """A temporary file that a running writer holds (its lock), or that one of an older version (no lock) made
    a moment ago, is not a leftover; nor is a file of another program (the cache set to a shared folder)."""
    from cuda_kernels import build  # noqa: PLC0415

    kernels = tmp_path / "k"
    kernels.mkdir()
    fresh_old_style = kernels / "tmpabc12345.tmp"
    fresh_old_style.write_bytes(b"partial")
    stale_old_style = kernels / "tmpdef45678.tmp"
    foreign = [kernels / "notes.tmp", kernels / ".editor.swp.tmp", kernels / ".x.txt.abcd1234.tmp"]
    for path in [stale_old_style, *foreign]:
        path.write_bytes(b"partial")
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    live = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from cuda_kernels import build
        real_write = build.os.write
        def write_then_wait(fd, data):
            n = real_write(fd, data)
            print("writing", flush=True)
            time.sleep(30)
            return n
        build.os.write = write_then_wait
        build.write_cache_file(Path({str(kernels / "x.cubin")!r}), b"cubin")
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "writing"
        monkeypatch.setattr(build, "_swept", set(), raising=False)
        build.remove_dead_temporaries(kernels)
        left = sorted(os.listdir(kernels))
    finally:
        live.kill()
        live.wait()
    assert stale_old_style.name not in left
    assert all(path.name in left for path in foreign), left
    assert fresh_old_style.name in left
    assert [n for n in left if n.startswith(".x.cubin.")], left  # the live writer's
