"""Where a batch of k proofs of one key spends its time on the GPU, phase by phase.

    python perf/batch_phases.py --constraints 8189 --batches 1,4,8,16 --repeats 5 --workdir /tmp/bp

Issue 13 item 5 (>= 500 proofs/s at the 2^14 domain): the scheduler hands GpuBackend.compute_batch
up to max_batch staged proofs of one key, and nobody had measured where such a batch's ~57 ms go.
For each k this stages k copies of the bench circuit's witness, runs them as one compute_batch
(compute for k = 1) back to back on an idle device, and reports the CUDA-event phases that
batch.compute_batch records on its compute stream (engine/backends/gpu/batch.BATCH_PHASES, then
gpu_check: the tails' final phase), the host's own time (stage() per proof, the compute_batch call that only
enqueues), the wall time of the whole round and proofs/s of batches run one after another (no
overlap between batches: the scheduler's slots add that).  Every proof's device check must pass.
Medians over --repeats rounds after one warm-up round.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from engine.formats import read_wtns, read_zkey  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from script_args import Parser, count_list, curve_name, output_dir, output_file, positive, run_main  # noqa: E402
from engine.file_writes import write_file  # noqa: E402 - whole or not at all

COLS = ["k", "stage ms/proof", "enqueue ms", "gather", "front", "msm_h", "sort_g1", "msm_b2", "check",
        "device ms", "wall ms", "ms/proof", "proofs/s"]


def bench_key(workdir: Path, constraints: int, curve: str) -> tuple[Path, Path]:
    """The bench circuit's key (setup --backend gpu) and witness, made once in `workdir`."""
    d = workdir / f"{curve}_{constraints}"
    zkey, wtns = d / "bench.zkey", d / "bench.wtns"
    if not zkey.exists():
        run = [sys.executable, "-m", "engine"]
        subprocess.run([*run, "bench-circuit", "--constraints", str(constraints), "--curve", curve, "--quiet", str(d)],
                       check=True)
        subprocess.run([*run, "setup", "--backend", "gpu", str(d / "bench.r1cs"), str(zkey), "--quiet"], check=True)
    return zkey, wtns


def one_round(backend, key, witness: np.ndarray, k: int) -> dict:
    """k proofs staged then computed as one batch; the host's and the device's times (ms)."""
    t0 = time.perf_counter()
    staged = [backend.stage(key, witness) for _ in range(k)]
    t1 = time.perf_counter()
    pendings = backend.compute_batch(staged) if k > 1 else [backend.compute(staged[0])]
    t2 = time.perf_counter()
    cores = [p.wait() for p in pendings]
    t3 = time.perf_counter()
    if not all(c.verified for c in cores):
        raise SystemExit(f"batch of {k}: a proof failed its device check")
    tm = cores[0].timings
    if k == 1:  # compute()'s stages: the same boundaries (its mid phase overlaps B2, its final is gpu_check)
        front = tm["gpu_front"] if "gpu_front" in tm else tm["gpu_evaluate"] + tm["gpu_ntt"]  # beside: the wait
        ph = {"front": front, "gather": 0.0, "msm_h": tm["gpu_msm_h"],
              "sort_g1": tm["gpu_msm_a_b1_c"], "msm_b2": tm["gpu_msm_b2"], "check": tm["gpu_check"]}
    else:
        ph = {name: tm[f"gpu_batch_{name}"] for name in ("gather", "front", "msm_h", "sort_g1", "msm_b2")}
        ph["check"] = tm["gpu_check"]
    row = {name: v * 1000 for name, v in ph.items()}
    row["device ms"] = sum(row.values())
    row.update({"stage ms/proof": (t1 - t0) * 1000 / k, "enqueue ms": (t2 - t1) * 1000, "wall ms": (t3 - t0) * 1000})
    return row


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--constraints", type=positive, default=8189)
    p.add_argument("--curve", type=curve_name, default="bn128")
    p.add_argument("--batches", type=count_list, default="1,4,8,16")
    p.add_argument("--repeats", type=positive, default=5)
    p.add_argument("--workdir", type=output_dir, default="/tmp/batch_phases")
    p.add_argument("--json", type=output_file, default=None)
    args = p.parse_args(argv)
    require_gpu()
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415 - needs the driver

    zkey_path, wtns_path = bench_key(Path(args.workdir), args.constraints, args.curve)
    backend = GpuBackend(0)
    key = backend.load_key(read_zkey(zkey_path))
    witness = np.asarray(read_wtns(wtns_path).values)
    print(f"{args.curve}, {args.constraints} constraints, domain 2^{key.domain.bit_length() - 1}, "
          f"max_batch {backend.max_batch(key)}", flush=True)
    rows = []
    for k in [int(x) for x in args.batches.split(",")]:
        runs = []
        for i in range(args.repeats + 1):
            if backend.maintenance_due():  # pin the proofs' host buffers, as the device worker does when idle
                backend.maintain()
            r = one_round(backend, key, witness, k)
            if i:
                runs.append(r)
        med = {c: statistics.median(r[c] for r in runs) for c in runs[0]}
        med["ms/proof"] = med["wall ms"] / k
        med["proofs/s"] = 1000 * k / med["wall ms"]
        med["k"] = k
        rows.append(med)
        print(f"  k={k}: device {med['device ms']:.2f} ms, wall {med['wall ms']:.2f} ms", flush=True)
    key.close()
    backend.close()
    fmt = {c: (lambda v: str(v)) if c == "k" else (lambda v: f"{v:.2f}") for c in COLS}
    print("| " + " | ".join(COLS) + " |\n|" + "---|" * len(COLS))
    for r in rows:
        print("| " + " | ".join(fmt[c](r[c]) for c in COLS) + " |")
    if args.json:
        write_file(args.json, json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
