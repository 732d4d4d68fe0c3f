"""Shared-memory blocks of a process that ended without removing them (SIGKILL: the OOM killer, a Ray actor shut
down, a service killed after its stop timeout) are removed by the next process that makes blocks; before, each
such death left its blocks, up to the pool's 48 cached ones of 8 MiB, in /dev/shm (RAM) until a reboot."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from scheduler.shm import ShmBlock, remove_orphans

ROOT = Path(__file__).resolve().parents[1]


def _maker(prefix: str, exit_how: str) -> subprocess.Popen:
    """A process that makes two blocks, prints their paths, then waits, or leaves without releasing them."""
    code = textwrap.dedent(f"""
        import os, sys
        from scheduler.shm import ShmBlock
        blocks = [ShmBlock.create(4096, prefix={prefix!r}) for _ in range(2)]
        print(" ".join(b.path for b in blocks), flush=True)
        if {exit_how!r} == "exit":
            sys.exit(0)
        sys.stdin.read()
    """)
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _prefix() -> str:
    return f"g16wt{uuid.uuid4().hex[:8]}"


def test_blocks_of_a_killed_process_are_removed_by_the_next_maker():
    prefix = _prefix()
    proc = _maker(prefix, "wait")
    paths = proc.stdout.readline().split()
    assert len(paths) == 2 and all(os.path.exists(p) for p in paths)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    mine = ShmBlock.create(4096, prefix=prefix)
    try:
        assert not any(os.path.exists(p) for p in paths), "a killed process's blocks are still there"
        assert not [n for n in os.listdir(os.path.dirname(mine.path)) if n.startswith(prefix) and
                    str(proc.pid) in n], "its owner mark is still there"
    finally:
        mine.release()


def test_blocks_of_a_live_process_are_left_alone():
    prefix = _prefix()
    proc = _maker(prefix, "wait")
    try:
        paths = proc.stdout.readline().split()
        mine = ShmBlock.create(4096, prefix=prefix)
        mine.release()
        assert all(os.path.exists(p) for p in paths)
    finally:
        proc.kill()
        proc.wait()
    assert remove_orphans(os.path.dirname(paths[0]), prefix) == 1  # dead now: its blocks go
    assert not any(os.path.exists(p) for p in paths)


def test_a_process_that_exits_without_releasing_its_blocks_leaves_none():
    prefix = _prefix()
    proc = _maker(prefix, "exit")
    paths = proc.stdout.readline().split()
    assert proc.wait() == 0
    assert paths and not any(os.path.exists(p) for p in paths)
    assert not [n for n in os.listdir(os.path.dirname(paths[0])) if n.startswith(prefix)]
