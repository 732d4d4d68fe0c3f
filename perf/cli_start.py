"""A cold CLI proof end to end, stage by stage, beside its floor (interpreter + cuInit + context).

    python perf/cli_start.py [--workdir DIR] [--runs 5] [--domain-log 14] [--zkey Z --wtns W]

Makes a bench circuit whose key has a domain of exactly 2^14 (`bench-circuit`
with N = 2^14 - 3 constraints, `setup --backend gpu`) unless --zkey/--wtns are
given, then times whole processes (wall clock, fork to exit), each a fresh
interpreter: `python -c pass`; the same importing cuda_kernels/driver.py (the
CUDA bindings and numpy); with cuInit; with the device's context made and
released (the floor: interpreter + cuInit + context, nothing else of ours); cuInit and the context through the driver
library alone (ctypes: what the CLI's head start does beside its imports); then `python -m engine prove --backend gpu --verbose` (the
first run fills the key cache; the median of the rest is the cold CLI figure)
and the same with --no-key-cache.  Prints the median --verbose stages of the
prove runs beside the wall times.

Before timing, every module the CLI imports is byte-compiled (`compileall` over
this tree and the writable PYTHONPATH entries), as an installed package is: a
machine whose Python does not write .pyc files (PYTHONDONTWRITEBYTECODE, a
read-only tree) would otherwise compile every source in every process.  Then
one `-X importtime` run lists the slowest imports of `prove`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from engine.commands.prove import ONE_PROOF_QUEUES  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from script_args import Parser, input_file, output_dir, output_file, positive, run_main  # noqa: E402
from engine.file_writes import write_file  # noqa: E402 - whole or not at all

PY = sys.executable

# through cuda_kernels/driver.py (it imports numpy), with the work queues the CLI asks for ({queues})
FLOOR = {k: v.replace("{queues}", str(ONE_PROOF_QUEUES)) for k, v in {
    "python -c pass": "pass",
    "+ import cuda_kernels.driver": "import cuda_kernels.driver",
    # as the CLI imports it (engine/__main__ starts OpenBLAS with one thread unless the user set a number)
    "+ import cuda_kernels.driver, OpenBLAS 1 thread": (
        "import os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); import cuda_kernels.driver"),
    "+ cuInit": "from cuda_kernels import driver as d; d.prefer_connections({queues}); d.init()",
    "+ context (the floor)": "from cuda_kernels import driver as d; d.prefer_connections({queues}); dev = d.Device(0); dev.close()",
    # the driver's own share alone: cuInit and the context through the library itself (ctypes), as the CLI's
    # head start makes them beside its imports (engine/backends/device_start.py); with the import row above,
    # the floor of a CLI that overlaps the two is about max(this, the import row)
    "cuInit + context, the driver library alone (ctypes)": (
        "import os; os.environ.setdefault('CUDA_DEVICE_MAX_CONNECTIONS', '{queues}');"
        " from cuda_kernels.driver_library import DriverStart; s = DriverStart(0); assert s.wait(); s.release()"),
}.items()}


def wall(cmd: list[str], env: dict, cwd: str | Path = ROOT) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return dt, p.stderr


def stages(stderr: str) -> dict[str, float]:
    out = {}
    for line in stderr.splitlines():
        m = re.match(r"^(  +)(\S.*?)\s+([0-9.]+) ms$", line)  # sub-stages (deeper indent) too
        if m:
            out[" " * (len(m.group(1)) - 2) + m.group(2)] = float(m.group(3))
    return out


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=output_dir)
    ap.add_argument("--runs", type=positive, default=5)
    ap.add_argument("--domain-log", type=positive, default=14)
    ap.add_argument("--zkey", type=input_file)
    ap.add_argument("--wtns", type=input_file)
    ap.add_argument("--json", type=output_file)
    args = ap.parse_args()
    require_gpu()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="cli-start-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
           "GROTH16_KEY_CACHE": str(work / "keycache")}
    zkey, wtns = args.zkey, args.wtns
    if not zkey:
        n = (1 << args.domain_log) - 3
        wall([PY, "-m", "engine", "bench-circuit", "--constraints", str(n), "--quiet", str(work)], env)
        zkey, wtns = str(work / "bench.zkey"), str(work / "bench.wtns")
        wall([PY, "-m", "engine", "setup", "--backend", "gpu", "--quiet", str(work / "bench.r1cs"), zkey], env)
    dirs = [str(ROOT / d) for d in ("engine", "scheduler", "cuda_kernels", "cli.py")]
    dirs += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and os.access(p, os.W_OK)
             and Path(p).resolve() != ROOT]
    subprocess.run([PY, "-m", "compileall", "-q", "-j0", *dirs], cwd=ROOT, env=env, capture_output=True)
    flags = subprocess.run([PY, "-c", "import sys; print(sys.flags.dont_write_bytecode)"], env=env,
                           capture_output=True, text=True).stdout.strip()
    print(f"byte-compiled {len(dirs)} paths first; this Python's dont_write_bytecode = {flags}")
    rows = {}
    for label, code in FLOOR.items():
        times = [wall([PY, "-c", code], env)[0] for _ in range(args.runs)]
        rows[label] = statistics.median(times)
    prove = [PY, "-m", "engine", "prove", "--backend", "gpu", "--verbose", "--quiet", zkey, wtns,
             str(work / "proof.json"), str(work / "public.json")]
    results = {}
    for label, extra in (("prove (key cache)", []), ("prove --no-key-cache", ["--no-key-cache"])):
        runs = [wall(prove + extra, env) for _ in range(args.runs + 1)]
        first = runs[0][0]
        rest = runs[1:]
        med = statistics.median(t for t, _ in rest)
        st = [stages(e) for _, e in rest]
        names = [k for k in st[0] if all(k in s for s in st)]
        results[label] = {"first run s": round(first, 3), "median s": round(med, 3),
                          "stages ms": {k: round(statistics.median(s[k] for s in st), 2) for k in names}}
        rows[label] = med
    imp = subprocess.run([PY, "-X", "importtime", *prove[1:]], cwd=ROOT, env=env, capture_output=True, text=True)
    top = []
    for line in imp.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\s*)(\S+)", line)
        if m and len(m.group(2)) <= 2:  # top-level and first-level imports
            top.append((int(m.group(1)), m.group(3)))
    print("slowest imports of prove (cumulative ms): "
          + ", ".join(f"{name} {us / 1000:.1f}" for us, name in sorted(top, reverse=True)[:12]))
    print(f"python {sys.version.split()[0]}, {args.runs} runs each (median); key {zkey}")
    print("| process | wall ms |\n|---|---|")
    for label, t in rows.items():
        print(f"| {label} | {t * 1000:.1f} |")
    for label, r in results.items():
        print(f"\n{label}: first run {r['first run s'] * 1000:.1f} ms, median {r['median s'] * 1000:.1f} ms")
        for k, v in r["stages ms"].items():
            print(f"  {k:<32} {v:9.2f} ms")
    if args.json:
        write_file(args.json, json.dumps({"floor_s": rows, "prove": results}, indent=1))


if __name__ == "__main__":
    run_main(main)
