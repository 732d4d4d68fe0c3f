"""A .wtns witness through the synthesis pool: the values as a mapped array copied into the shared block (the task
before session 38) against a FileSegment the worker sendfiles into it (synth_pool.FileSegment), the main process
touching every page after, as staging does.

    PYTHONPATH=perf python perf/wtns_pool.py WTNS [--repeats 3]

`python -c "..."` in perf/RESULTS.md's session 38 wrote the 2^24 file it was measured on (random values).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import numpy as np  # noqa: E402

from engine.formats.wtns import read_wtns  # noqa: E402
from engine.groth16.kit import synthesise_wtns  # noqa: E402
from scheduler.synth_pool import SynthPool  # noqa: E402
from script_args import Parser, input_file, positive, run_main  # noqa: E402


def mapped(path: str):
    """The old task: the mapped values, copied into the block through both mappings."""
    w = read_wtns(path)
    return {"prime": int(w.prime)}, w.values


async def main(path: str, repeats: int) -> None:
    import wtns_pool  # noqa: PLC0415 - this module by name (PYTHONPATH=perf), so that the workers find `mapped`

    n = read_wtns(path).values.nbytes
    pool = SynthPool(1)
    await pool.start()
    try:
        for fn in (wtns_pool.mapped, synthesise_wtns) * repeats:
            t = time.perf_counter()
            r = await pool.run(fn, (path,), n)
            t1 = time.perf_counter()
            int(r.values.view(np.uint8)[::4096].sum())
            t2 = time.perf_counter()
            r.release()
            print(f"{fn.__name__:16} {n / 2**20:.0f} MiB: pool {t1 - t:.3f} s, main touch {t2 - t1:.3f} s", flush=True)
    finally:
        await pool.close()


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wtns", type=input_file)
    ap.add_argument("--repeats", type=positive, default=3)
    a = ap.parse_args()
    run_main(anyio.run, main, a.wtns, a.repeats)
