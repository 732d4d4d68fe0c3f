"""The host's copy of a witness into a pinned buffer (the memory phase's first step), by size and threads.

    python perf/copy_pinned.py [--sizes-mib 0.25,2,8,32] [--threads 1,2,4,8] [--repeats 50]

A warm proof at 2^16 constraints spends about half a millisecond before its upload in this copy on the
H200 machine (perf/proof_timeline.py), far below memcpy speed; this says what 1..8 threads make of it
(engine/formats/rows.py splits copies only from PART_BYTES up).  Median GB/s, random data, the source
warm in cache as a proof's witness is.
"""
from __future__ import annotations

import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuda_kernels.driver import Device, PinnedBuffer  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from script_args import Parser, count_list, positive, positive_amount_list, run_main  # noqa: E402


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mib", type=positive_amount_list, default="0.25,2,8,32")
    ap.add_argument("--threads", type=count_list, default="1,2,4,8")
    ap.add_argument("--repeats", type=positive, default=50)
    args = ap.parse_args()
    require_gpu()
    dev = Device(0)
    sizes = [int(float(s) * (1 << 20)) for s in args.sizes_mib.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    pinned = PinnedBuffer(dev, max(sizes))
    pool = ThreadPoolExecutor(max(threads))
    print("| MiB | " + " | ".join(f"{t} thread{'s' if t > 1 else ''} GB/s" for t in threads) + " | pageable 1 thread GB/s |")
    print("|---|" + "---|" * (len(threads) + 1))
    for nbytes in sizes:
        src = np.random.default_rng(nbytes).integers(0, 2**63, nbytes // 8, dtype=np.uint64)
        dst = pinned.view(np.uint64, nbytes // 8)
        page = np.empty_like(src)
        row = []
        for t in threads:
            step = -(-src.size // t)

            def part(lo: int) -> None:
                dst[lo:lo + step] = src[lo:lo + step]

            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                if t == 1:
                    dst[:] = src
                else:
                    list(pool.map(part, range(0, src.size, step)))
                times.append(time.perf_counter() - t0)
            row.append(nbytes / statistics.median(times) / 1e9)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            page[:] = src
            times.append(time.perf_counter() - t0)
        row.append(nbytes / statistics.median(times) / 1e9)
        print(f"| {nbytes / (1 << 20):g} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    pool.shutdown()
    pinned.free()
    dev.close()


if __name__ == "__main__":
    run_main(main)
