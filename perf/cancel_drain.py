"""Cancellation drain: N jobs submitted, every caller cancelled after T s; how many proofs were still
computed, and how long leaving the `async with Engine()` block took (issue 14 item 2).

    python perf/cancel_drain.py [--jobs 30] [--after 3] [--zkey K --wtns W]

CPU backend, so it runs anywhere (default: the sudoku example; a proof of ~1 s shows more, e.g.
`python -m engine bench-circuit --constraints 4000 D && python -m engine setup D/bench.r1cs D/bench.zkey`).  A proof counts as done when its
compute phase ended (Stage.GPU_END); computes and MSMs are counted in the backend; "drain" is the time from the cancellation to the block's exit.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import anyio

from engine.api import Engine
from engine.backends.cpu import CpuBackend
from engine.config import EngineConfig
from scheduler.timeline import MemorySink, Stage
from script_args import Parser, input_file, positive, run_main  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class CountingCpuBackend(CpuBackend):
    """The CPU backend, counting the computes it starts and the MSMs it runs (a proof has five)."""

    def __init__(self):
        super().__init__()
        self.computes = 0
        self.msms = 0

    def evaluate(self, key, witness):
        self.computes += 1
        return super().evaluate(key, witness)

    def msm_g1(self, curve, bases, scalars):
        self.msms += 1
        return super().msm_g1(curve, bases, scalars)


async def main(jobs: int, after: float, zkey: str, wtns: str) -> dict:
    sink = MemorySink()
    t_cancel = None
    t0 = time.perf_counter()
    backend = CountingCpuBackend()
    async with Engine(EngineConfig(backend="cpu", idle_trim_s=None), backends=[backend], on_event=sink) as eng:
        key = await eng.load_key(zkey)
        tasks = [asyncio.ensure_future(eng.prove(key, wtns)) for _ in range(jobs)]
        await anyio.sleep(after)
        done_before = sum(1 for e in sink if e.stage == Stage.GPU_END)
        started_before, msms_before = backend.computes, backend.msms
        for t in tasks:
            t.cancel()
        t_cancel = time.perf_counter()
        await asyncio.gather(*tasks, return_exceptions=True)
        t_callers = time.perf_counter()
    t_exit = time.perf_counter()
    computed = sum(1 for e in sink if e.stage == Stage.GPU_END)
    return {"jobs": jobs, "cancel_after_s": after, "proofs_done_before_cancel": done_before,
            "computes_in_flight_at_cancel": started_before - done_before,
            "proofs_done_after_cancel": computed - done_before,
            "computes_started_after_cancel": backend.computes - started_before,
            "msms_after_cancel": backend.msms - msms_before, "callers_released_s": round(t_callers - t_cancel, 3),
            "drain_s": round(t_exit - t_cancel, 3), "total_s": round(t_exit - t0, 3)}


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=positive, default=30)
    ap.add_argument("--after", type=float, default=3.0)
    ap.add_argument("--zkey", type=input_file, default=str(EXAMPLES / "bn128" / "sudoku.zkey"))
    ap.add_argument("--wtns", type=input_file, default=str(EXAMPLES / "bn128" / "sudoku.wtns"))
    a = ap.parse_args()
    print(run_main(asyncio.run, main(a.jobs, a.after, a.zkey, a.wtns)))
