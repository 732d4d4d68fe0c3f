"""One cold `prove --backend gpu` in this process under cProfile: where its stages' Python time goes.

    python perf/cli_profile.py ZKEY WTNS [--top 40] [--out prof.out]

Runs cli.main as `python -m engine prove` would (the device started beside the imports), with every module already
byte-compiled; prints the functions by cumulative time within the command (imports included, the interpreter's
start not).  The profiler's overhead inflates Python-heavy stages, not the driver's calls."""
from __future__ import annotations

import cProfile
import marshal
import pstats
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from needs_gpu import require_gpu  # noqa: E402
from script_args import Parser, input_file, output_file, positive, run_main  # noqa: E402
from engine.file_writes import write_file  # noqa: E402 - whole or not at all


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("zkey", type=input_file)
    ap.add_argument("wtns", type=input_file)
    ap.add_argument("--top", type=positive, default=40)
    ap.add_argument("--out", type=output_file)
    args = ap.parse_args()
    require_gpu()
    work = Path(tempfile.mkdtemp())
    prof = cProfile.Profile()
    prof.enable()
    from cli import main as cli_main  # noqa: PLC0415 - its imports are part of the profile

    code = cli_main(["prove", "--backend", "gpu", "--quiet", args.zkey, args.wtns, str(work / "p.json"),
                     str(work / "q.json")])
    prof.disable()
    if args.out:
        prof.create_stats()  # (Profile.dump_stats's own two steps, its file written whole or not at all)
        write_file(args.out, lambda f: marshal.dump(prof.stats, f))
    print(f"exit code {code}")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    run_main(main)
