"""Whole proofs, stage by stage, on bench circuits of 2^k constraints (and snarkjs beside them).

    python perf/prove.py --log-constraints 16,20 --curves bn128,bls12381 [--backend gpu] [--repeats 5]
                         [--workdir DIR] [--snarkjs]

For each size: `bench-circuit` (deterministic: seed 0, so every machine gets the
same .r1cs/.wtns bytes), a development key from `setup` (timed), the key
loaded once, then `repeats` proofs after one warm-up, each verified.  Reports
the median per stage: the device's own event times for upload, evaluate, the
six NTTs, the H MSM, the A/B1/C MSMs and the B2 MSM, then on the GPU the tail
after the B2 MSM (gpu_check: pi_b, the last Miller loop, the final
exponentiation) and, beside the stages (overlapped, not in the sum), the tail's
early and mid phases (side_early, side_mid); on the CPU the host's epilogue and
verification; the sum of the device stages, the whole proof (excluding witness
generation) and its ratio to that sum.  Writes
vkey.json, proof.json and public.json beside the key, so that a machine with
node can check them with `snarkjs groth16 verify`; with --snarkjs (node and
npm packages present) also times `snarkjs groth16 prove` on the same files.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.backends.select import select_backend  # noqa: E402
from engine.groth16.bench_circuit import write_bench_circuit  # noqa: E402
from engine.formats import read_wtns, read_zkey  # noqa: E402
from engine.formats.json import write_proof, write_public, write_vkey  # noqa: E402
from engine.groth16.prover import prove  # noqa: E402
from engine.groth16.setup import select_setup_ops, setup_file  # noqa: E402
from engine.groth16.verifier import vk_from_zkey  # noqa: E402
from engine.progress import stage_seconds  # noqa: E402
import sort_flags  # noqa: E402  (perf/sort_flags.py)
from script_args import (  # noqa: E402
    Parser, count_list, curve_list, input_file, output_dir, output_file, positive, run_main,
)
from engine.file_writes import write_file  # noqa: E402 - whole or not at all

STAGE_ORDER = ["gpu_upload", "gpu_evaluate", "gpu_ntt", "gpu_front", "gpu_msm_h", "gpu_msm_a_b1_c", "gpu_msm_b2",
               "gpu_check", "side_early", "side_mid", "side_front", "side_b2", "side_pi_b", "side_products", "side_h", "evaluate",
               "quotient", "msm_h", "msm_a", "msm_b1", "msm_b2", "msm_c", "epilogue", "verify"]


def run_size(curve: str, log_c: int, backend_name: str, repeats: int, workdir: Path, with_snarkjs: bool) -> dict:
    d = workdir / f"{curve}_2^{log_c}"
    r1cs, wtns, _ = write_bench_circuit(d, curve, 1 << log_c, n_public=2, seed=0)
    zkey_path = d / "bench.zkey"
    ops = select_setup_ops(backend_name, notes=open(os.devnull, "w"))
    t = time.perf_counter()
    setup_file(r1cs, zkey_path, ops)
    setup_s = time.perf_counter() - t
    ops.close()
    row = run_files(zkey_path, wtns, backend_name, repeats, d, with_snarkjs, f"2^{log_c}")
    row["setup s"] = round(setup_s, 2)
    return row


def run_files(zkey_path: Path, wtns: str, backend_name: str, repeats: int, d: Path, with_snarkjs: bool,
              label: str) -> dict:
    """Time proofs of given files (a bench circuit's, or any .zkey/.wtns such as the examples')."""
    d.mkdir(parents=True, exist_ok=True)
    zkey = read_zkey(zkey_path)
    wit = read_wtns(wtns)
    backend = select_backend(backend_name)
    t = time.perf_counter()
    key = backend.load_key(zkey)
    load_s = time.perf_counter() - t
    # warm proofs are of the loaded key: its fold tables, which build behind a usable key, done first
    # (proofs beside them run the fold-1 plans: the closing call's 2^22 row read 442 ms so)
    getattr(key, "synchronize", lambda: None)()
    vk = vk_from_zkey(zkey)
    runs = []
    for i in range(repeats + 1):
        # as the Engine's device worker does while the device is idle: pin the host buffers the key's
        # proofs want (witness upload, results), else the witness goes up from pageable memory
        if getattr(backend, "maintenance_due", lambda: False)():
            backend.maintain()
        t = time.perf_counter()
        proof = prove(zkey, wit.values, backend, key, vk=vk)
        total = time.perf_counter() - t
        if i:  # the first proof warms caches and pools
            runs.append({**proof.timings, "total": total})
    write_vkey(d / "vkey.json", vk)
    write_proof(d / "proof.json", proof)
    write_public(d / "public.json", proof.public)
    key.close()
    backend.close()
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    row = {"curve": zkey.curve.name, "constraints": label, "domain": f"2^{zkey.log_domain}", "backend": backend.name,
           "key load s": round(load_s, 3), "proof ms": round(med["total"] * 1000, 1)}
    for k in STAGE_ORDER:
        if k in med:
            row[k] = round(med[k] * 1000, 2)
    gpu = [statistics.median(sum(v for k, v in stage_seconds(r).items() if k.startswith("gpu_")) for r in runs)]
    if gpu[0]:  # the device's own time for the whole proof, and how much the host adds to it
        row["gpu sum ms"] = round(gpu[0] * 1000, 2)
        row["proof/gpu"] = round(med["total"] / gpu[0], 3)
    if with_snarkjs:
        row["snarkjs ms"] = snarkjs_prove_ms(zkey_path, wtns, d)
    return row


def snarkjs_prove_ms(zkey: Path, wtns: str, d: Path) -> float | None:
    exe = ROOT / "node_modules" / ".bin" / "snarkjs"
    if not exe.exists() or shutil.which("node") is None:
        return None
    times = []
    for _ in range(2):
        t = time.perf_counter()
        subprocess.run([str(exe), "groth16", "prove", str(zkey), wtns, str(d / "sj_proof.json"),
                        str(d / "sj_public.json")], check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return round(min(times) * 1000, 1)


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-constraints", type=count_list, default="16,20")
    ap.add_argument("--curves", type=curve_list, default="bn128,bls12381")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--repeats", type=positive, default=5)
    ap.add_argument("--workdir", type=output_dir, default="/tmp/groth16-bench")
    ap.add_argument("--snarkjs", action="store_true", help="also time snarkjs groth16 prove on the same files")
    ap.add_argument("--files", type=input_file, nargs=2, action="append", metavar=("ZKEY", "WTNS"),
                    help="time these files instead of bench circuits (repeatable)")
    ap.add_argument("--narrow-max-log", type=int, default=None,
                    help="the NTT's NARROW_MAX_LOG (engine/backends/gpu/ntt.py; 0: the wide passes at every size)")
    sort_flags.add(ap)
    ap.add_argument("--json", type=output_file, help="write the rows here")
    args = ap.parse_args()
    sort_flags.apply(args)
    if args.narrow_max_log is not None:
        from engine.backends.gpu import ntt as gntt  # noqa: PLC0415

        gntt.NARROW_MAX_LOG = args.narrow_max_log
    rows = []
    for zkey, wtns in args.files or []:
        d = Path(args.workdir) / Path(zkey).stem
        rows.append(run_files(Path(zkey), wtns, args.backend, args.repeats, d, args.snarkjs, Path(zkey).name))
        print(json.dumps(rows[-1]), flush=True)
    for curve in ([] if args.files else args.curves.split(",")):
        for k in args.log_constraints.split(","):
            rows.append(run_size(curve, int(k), args.backend, args.repeats, Path(args.workdir), args.snarkjs))
            print(json.dumps(rows[-1]), flush=True)
    print(f"\n{datetime.date.today()}  python perf/prove.py {' '.join(sys.argv[1:])}")
    cols = [c for c in rows[0] if all(c in r for r in rows)] + [c for c in ("setup s",) if c not in rows[0]
                                                                     and all(c in r for r in rows)]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    if args.json:
        write_file(args.json, json.dumps(rows, indent=1))


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
