"""The Python API with inputs that never arrive: a key or a witness given as a FIFO that no writer opens.  A
cancelled wait (asyncio.wait_for) must return at once, the engine must go on serving other jobs, and the
script must end when it is done.  Each test names what used to happen.  Run as scripts in a subprocess: what
is tested is the process's own exit."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import FIXTURES, REPO

TINY = FIXTURES / "tiny" / "bn128"


def _script(tmp_path, body: str) -> subprocess.CompletedProcess | None:
    """Run `body` (with ZKEY, WTNS and FIFO defined); None where it did not end within 30 s (killed)."""
    fifo = tmp_path / "never.fifo"
    os.mkfifo(fifo)
    head = f"ZKEY, WTNS, FIFO = {str(TINY / 'tiny.zkey')!r}, {str(TINY / 'tiny.wtns')!r}, {str(fifo)!r}\n"
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *inherited])}
    try:
        return subprocess.run([sys.executable, "-c", head + textwrap.dedent(body)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    except subprocess.TimeoutExpired:  # (subprocess.run kills it)
        return None


def test_a_cancelled_wait_for_a_piped_witness_lets_the_script_end(tmp_path):
    """The job was cancelled and the engine closed, but the thread still blocked in the FIFO's open() was one
    the interpreter's exit waits for: the script never ended."""
    proc = _script(tmp_path, """
        import asyncio
        from engine import Engine, EngineConfig

        async def main():
            async with Engine(EngineConfig(backend="cpu")) as eng:
                key = await eng.load_key(ZKEY)
                try:
                    await asyncio.wait_for(eng.prove(key, FIFO), 0.5)
                except TimeoutError:
                    print("gave up", flush=True)
                await eng.prove(key, WTNS)
                print("served", flush=True)

        asyncio.run(main())
        """)
    assert proc is not None, "the script did not end"
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["gave", "up", "served"]


def test_a_cancelled_load_of_a_piped_key_returns_and_the_engine_serves_on(tmp_path):
    """load_key read the key on a thread whose cancel waits for the read's end: wait_for(load_key(FIFO), 1)
    never returned."""
    proc = _script(tmp_path, """
        import asyncio
        from engine import Engine, EngineConfig

        async def main():
            async with Engine(EngineConfig(backend="cpu")) as eng:
                try:
                    await asyncio.wait_for(eng.load_key(FIFO), 0.5)
                except TimeoutError:
                    print("gave up", flush=True)
                key = await eng.load_key(ZKEY)
                await eng.prove(key, WTNS)
                print("served", flush=True)

        asyncio.run(main())
        """)
    assert proc is not None, "the script did not end"
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["gave", "up", "served"]


def test_the_engine_closes_while_a_piped_key_waits_for_its_writer(tmp_path):
    """The close cancels the load, which waited for the read's end: `async with Engine()` never left."""
    proc = _script(tmp_path, """
        import asyncio
        from engine import Engine, EngineClosedError, EngineConfig

        async def main():
            async with Engine(EngineConfig(backend="cpu")) as eng:
                load = asyncio.create_task(eng.load_key(FIFO))
                await asyncio.sleep(0.3)
            print("closed", flush=True)
            try:
                await load
            except EngineClosedError:
                print("refused", flush=True)

        asyncio.run(main())
        """)
    assert proc is not None, "the script did not end"
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["closed", "refused"]
