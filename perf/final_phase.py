"""A small proof's tail phases timed inside the proof and again alone, on the same device buffers.

    python perf/final_phase.py --zkey bench.zkey --wtns bench.wtns [--repeats 9] [--again 3]

In a proof, the final phase (three Miller loops and the final exponentiation, groth16_check.cuh) takes
longer than perf/pairing_latency.py's chains of the same operations on a quiet device.  This launches each
tail phase again right after the proof's own final phase, on its stream, over the proof's own results
(every phase rewrites the same values: the proof and its verdict stay as they were), when nothing else runs:
the final phase (pi_b given or not, as the proof ran it), pi_b alone, the mid phase's products, the join and
the early phase, each `--again` times.  Medians over the proofs (after a warm-up), ms (CUDA events).
"""
from __future__ import annotations

import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# the proofs take the small path with the mid phase's products as scalar products (op 4 and the join of op 5),
# so that the phases run again alone rewrite exactly what the proof wrote (proof_streams.products_beside)
os.environ["GROTH16_PRODUCTS_BESIDE"] = "0"

import engine.backends.gpu.epilogue as gepi  # noqa: E402
from cuda_kernels.driver import Event  # noqa: E402
from engine.backends.select import select_backend  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from engine.formats import read_wtns, read_zkey  # noqa: E402
from script_args import Parser, input_file, positive, run_main  # noqa: E402

TIMES: dict[str, list[float]] = defaultdict(list)
PENDING: list[tuple[str, Event, Event]] = []


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--zkey", type=input_file, required=True)
    ap.add_argument("--wtns", type=input_file, required=True)
    ap.add_argument("--repeats", type=positive, default=9)
    ap.add_argument("--again", type=int, default=3)
    args = ap.parse_args()
    require_gpu()
    real_final = gepi.launch_final
    phases = [("pi_b alone", gepi.launch_pi_b), ("mid products", gepi.launch_mid_products),
              ("join", gepi.launch_join), ("early", gepi.launch_early)]

    def timed(name, fn, *a, **k):
        stream = a[2]
        e0 = Event(True).record(stream)
        fn(*a, **k)
        PENDING.append((name, e0, Event(True).record(stream)))

    def final(mod, tail, stream, batch=None, pi_b_given=False):
        timed("final phase, in the proof", real_final, mod, tail, stream, batch, pi_b_given=pi_b_given)
        for _ in range(args.again):
            timed("final phase, again alone", real_final, mod, tail, stream, batch, pi_b_given=pi_b_given)
        for name, fn in phases:
            for _ in range(args.again):
                timed(f"{name}, again alone", fn, mod, tail, stream)

    gepi.launch_final = final  # launch.py calls it through the module
    zkey, wit = read_zkey(args.zkey), read_wtns(args.wtns)
    backend = select_backend("gpu")
    key = backend.load_key(zkey)
    key.synchronize()
    for i in range(args.repeats + 1):
        PENDING.clear()
        core = backend.prove_core(key, wit.values)
        assert core.verified, "the device check failed"
        for name, e0, e1 in PENDING:
            if i:
                TIMES[name].append(e0.elapsed_ms(e1))
            e0.destroy(), e1.destroy()
        if i:
            TIMES["gpu_check (the pipeline's)"].append(core.timings.get("gpu_check", float("nan")) * 1e3)
    key.close()
    backend.close()
    print(f"{zkey.curve.name} domain 2^{zkey.log_domain}, medians of {args.repeats} proofs, ms")
    print("| phase | median | min |\n|---|---|---|")
    for name, xs in TIMES.items():
        print(f"| {name} | {statistics.median(xs):.3f} | {min(xs):.3f} |")


if __name__ == "__main__":
    run_main(main)
