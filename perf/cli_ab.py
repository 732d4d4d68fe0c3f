"""Cold CLI proofs of several trees (or settings) measured in turns, so that one machine's drift falls on all.

    python perf/cli_ab.py --zkey Z --wtns W --runs 7 base=/path/to/old/tree new=. [new4=.:CUDA_DEVICE_MAX_CONNECTIONS=4]

Each NAME=TREE[:VAR=VALUE...] runs `python -m engine prove --backend gpu --verbose --quiet` from TREE (first on
PYTHONPATH) with those variables set; one warm-up run each (the key cache, the page cache), then `--runs` rounds
of one run of every entry (`--gap` seconds apart: a run's driver teardown, handed to a child at its exit, would
otherwise slow the next run's cuInit; a user's single command does not meet it).  Prints the median wall clock
(fork to exit) and the median --verbose stages of each, beside one another; every tree is byte-compiled first
(compileall), as an installed package is.  Packages outside the trees (numpy, the bindings) are read as the
interpreter finds them: where they have no bytecode and none may be written (the device image), set
PYTHONPYCACHEPREFIX to a byte-compiled copy (perf/s34f_h200.sh).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cli_start import stages, wall  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from script_args import Parser, input_file, output_dir, positive, run_main  # noqa: E402

PY = sys.executable


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zkey", type=input_file, required=True)
    ap.add_argument("--wtns", type=input_file, required=True)
    ap.add_argument("--runs", type=positive, default=7)
    ap.add_argument("--gap", type=float, default=0.0,
                    help="seconds between runs: the last run's teardown, handed to a child at its exit "
                         "(engine/exit_handoff.py), done before the next run's cuInit")
    ap.add_argument("--out", type=output_dir, default="/tmp/cli-ab")
    ap.add_argument("entries", nargs="+", metavar="NAME=TREE[:VAR=VALUE...]")
    args = ap.parse_args()
    require_gpu()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    entries = {}
    for entry in args.entries:
        name, rest = entry.split("=", 1)
        tree, *settings = rest.split(":")
        tree = str(Path(tree).resolve())
        extra = os.environ.get("PYTHONPATH", "")
        env = {**os.environ, "PYTHONPATH": tree + (os.pathsep + extra if extra else ""),
               "GROTH16_KEY_CACHE": str(out / "keycache")}
        env.update(s.split("=", 1) for s in settings)
        subprocess.run([PY, "-m", "compileall", "-q", "-j0", tree], env=env, capture_output=True)
        cmd = [PY, "-m", "engine", "prove", "--backend", "gpu", "--verbose", "--quiet", args.zkey, args.wtns,
               str(out / f"{name}-proof.json"), str(out / f"{name}-public.json")]
        entries[name] = (cmd, env, tree)
    results = {name: [] for name in entries}
    for name, (cmd, env, tree) in entries.items():
        wall(cmd, env, tree)  # warm-up
    for _ in range(args.runs):
        for name, (cmd, env, tree) in entries.items():
            time.sleep(args.gap)
            t, err = wall(cmd, env, tree)
            results[name].append((t, stages(err)))
    names = list(entries)
    print(f"{args.runs} rounds, median (ms); key {args.zkey}")
    print("| | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    print("| wall (fork to exit) | " + " | ".join(f"{statistics.median(t for t, _ in results[n]) * 1e3:.1f}"
                                              for n in names) + " |")
    keys = [k for k in results[names[0]][0][1]]
    for n in names[1:]:
        keys += [k for k in results[n][0][1] if k not in keys]
    for k in keys:
        cells = []
        for n in names:
            vals = [s[k] for _, s in results[n] if k in s]
            cells.append(f"{statistics.median(vals):.2f}" if len(vals) == len(results[n]) else "")
        print(f"| {k.strip()} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    run_main(main)
