"""Ctrl-C while the synthesis pool starts its workers (a CLI `prove --wasm` through the Engine, interrupted in its
first seconds on a busy machine): the interrupt landed inside a restart thread's `start()`, the thread stayed in
the pool's list unstarted, and the pool's close joined it: "RuntimeError: cannot join thread before it is
started", printed by asyncio.run's shutdown as three "unhandled exception" warnings beside "interrupted"."""
from __future__ import annotations

import asyncio
import threading

import pytest

from scheduler.synth_pool import SynthPool


def test_an_interrupt_in_a_workers_start_leaves_the_pools_close_quiet(monkeypatch):
    real_start = threading.Thread.start
    interrupted = []

    def start(self):
        if self.name.startswith("synth-restart") and not interrupted:
            interrupted.append(self)
            raise KeyboardInterrupt  # the Ctrl-C that came while the thread started
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)

    async def main():
        pool = SynthPool(1)
        with pytest.raises(KeyboardInterrupt):
            await pool.start()
        await pool.close()  # raised RuntimeError: cannot join thread before it is started
        assert not pool._restarts

    asyncio.run(main())
    assert interrupted
