"""Where the host's share of a warm GPU proof goes, function by function: cProfile over the calls that
`engine.groth16.prover.prove` makes (perf/host_split.py times them as a whole).

    python perf/host_profile.py --zkey bench.zkey --wtns bench.wtns [--repeats 30] [--top 35]

A key loaded once and warmed (as perf/prove.py does); then --repeats proofs of check, stage, compute,
wait and finish under the profiler, printed by own time, then by cumulative time.  The profiler adds
its own cost to every Python call: read the ranks and the shares, not the absolute milliseconds.
"""
from __future__ import annotations

import cProfile
import io
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host_split import WarmKey  # noqa: E402  (perf/ is on sys.path when run as a script)
from script_args import Parser, input_file, positive, run_main  # noqa: E402


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--zkey", type=input_file, required=True)
    ap.add_argument("--wtns", type=input_file, required=True)
    ap.add_argument("--repeats", type=positive, default=30)
    ap.add_argument("--top", type=positive, default=35)
    args = ap.parse_args()
    warm = WarmKey(args.zkey, args.wtns)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.repeats):
        warm.proof()
    prof.disable()
    warm.close()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats(order).print_stats(args.top)
        text = out.getvalue()
        print(f"== {args.repeats} proofs, by {order}")
        print(text[text.find("   ncalls"):].rstrip())


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
