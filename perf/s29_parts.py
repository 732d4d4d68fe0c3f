"""Session 29's A/B of the witness copy into the pinned buffer on threads at 2^16 (a 2.1 MB witness: one part,
one thread, under rows.PART_BYTES = 4 MiB): the whole warm proof and its stage() for part sizes 4 MiB, 1 MiB
and 512 KiB, interleaved round by round, medians of --repeats proofs each.

    python perf/s29_parts.py --zkey bench.zkey --wtns bench.wtns [--rounds 3] [--repeats 15]
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.formats import rows  # noqa: E402
from host_split import WarmKey  # noqa: E402  (perf/ is on sys.path when run as a script)
from script_args import Parser, input_file, positive, run_main  # noqa: E402

SIZES = (4 << 20, 1 << 20, 512 << 10)


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--zkey", type=input_file, required=True)
    ap.add_argument("--wtns", type=input_file, required=True)
    ap.add_argument("--rounds", type=positive, default=3)
    ap.add_argument("--repeats", type=positive, default=15)
    args = ap.parse_args()
    warm = WarmKey(args.zkey, args.wtns, warmups=0)
    zkey, wit, proof = warm.zkey, warm.wit, warm.proof

    for size in SIZES:  # warm each (the rows pool's threads start on first use)
        rows.PART_BYTES = size
        for _ in range(3):
            proof()
    print(f"domain 2^{zkey.log_domain}, witness {wit.values.nbytes / 1e6:.2f} MB; medians of {args.repeats} (ms)")
    print("| round | part bytes | proof | stage |")
    print("|---|---|---|---|")
    for r in range(1, args.rounds + 1):
        for size in SIZES:
            rows.PART_BYTES = size
            got = [proof() for _ in range(args.repeats)]
            print(f"| {r} | {size} | {statistics.median(g[0] for g in got) * 1e3:.2f} | "
                  f"{statistics.median(g[1] for g in got) * 1e3:.3f} |")
    warm.close()


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
