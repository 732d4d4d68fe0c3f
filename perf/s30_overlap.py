"""Can the device's start (cuInit, the primary context) run on a thread beside the host's own start?

    python perf/s30_overlap.py [--runs 3]

Each row is a fresh interpreter (wall clock, fork to exit, median of --runs):
- `serial`: the CLI's imports (numpy, the key and witness readers, the prover), then cuInit and the
  context on the main thread, as `prove` did before this session;
- `threaded`: the same two halves, the device's on a thread started first;
- `gil`: inside one process, how many rounds of a pure-Python loop the main thread makes per ms while
  a thread runs cuInit + the context, against the same loop alone (a ratio near 1: the bindings give
  the GIL up inside the driver's calls, so the overlap can work);
- `close`: the context's release (Device.close) after one small allocation, and the interpreter's
  exit after it, against an exit that leaves the context to the process's end (os._exit).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from needs_gpu import require_gpu
from script_args import Parser, count_list, positive, run_main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
IMPORTS = ("import numpy, engine.formats.zkey, engine.formats.wtns, engine.groth16.prover, "
           "engine.groth16.verifier, engine.backends.cpu, engine.config")
DEVICE = "from cuda_kernels import driver as d; d.init(); dev = d.Device(0)"

SERIAL = f"{IMPORTS}\n{DEVICE}\n"
THREADED = f"""import threading
def start():
    global dev
    {DEVICE}
t = threading.Thread(target=start); t.start()
{IMPORTS}
t.join()
"""
# the bindings' import on the main thread first (its file reads would fight the thread for the GIL),
# then only driver calls on the thread, which give the GIL up while they run
THREADED_CALLS = f"""import threading
from cuda_kernels import driver as d
def start():
    global dev
    d.init(); dev = d.Device(0)
t = threading.Thread(target=start); t.start()
{IMPORTS}; import engine.backends.gpu
t.join()
"""
SERIAL_GPU = f"{IMPORTS}; import engine.backends.gpu\n{DEVICE}\n"
CONNECTIONS = """import os, sys, time
os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = sys.argv[1]
from cuda_kernels import driver as d
cu = d.cu
t0 = time.perf_counter(); d.init(); t1 = time.perf_counter()
h = cu.cuDeviceGet(0)[1]
cu.cuDevicePrimaryCtxSetFlags(h, int(cu.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC))
ctx = cu.cuDevicePrimaryCtxRetain(h)[1]; t2 = time.perf_counter()
cu.cuCtxSetCurrent(ctx); t3 = time.perf_counter()
dev = d.Device(0); t4 = time.perf_counter()  # the rest of Device: attributes, the pool
s = dev.stream(); s.synchronize(); s.destroy(); t5 = time.perf_counter()
dev.close(); t6 = time.perf_counter()
cu.cuDevicePrimaryCtxRelease(h); t7 = time.perf_counter()
print(f"cuInit {(t1 - t0) * 1e3:.0f} retain {(t2 - t1) * 1e3:.0f} current {(t3 - t2) * 1e3:.0f} "
      f"Device {(t4 - t3) * 1e3:.0f} stream {(t5 - t4) * 1e3:.0f} pool+release {(t6 - t5) * 1e3:.0f} "
      f"last release {(t7 - t6) * 1e3:.0f} ms", flush=True)
"""
GIL = f"""import threading, time
def spin(seconds):
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    return n / (seconds * 1000)
alone = spin(0.2)
done = []
def start():
    t0 = time.perf_counter()
    {DEVICE}
    done.append(time.perf_counter() - t0)
t = threading.Thread(target=start); t.start()
n, t0 = 0, time.perf_counter()
while not done:
    n += 1
    time.perf_counter()
rate = n / ((time.perf_counter() - t0) * 1000)
print(f"device start on a thread {{done[0] * 1000:.1f}} ms; main loop {{rate:.0f}} rounds/ms beside it, "
      f"{{alone:.0f}} alone ({{rate / alone:.2f}})")
"""
CLOSE = f"""import time, os, sys
{DEVICE}
s = dev.stream()  # the context as a small proof leaves it: a stream, a buffer from the pool freed
buf = dev.alloc(1 << 24, s)
dev.free(buf, s)
t0 = time.perf_counter()
s.synchronize(); s.destroy()
mode = sys.argv[1]
if mode == "close":
    dev.close()
    print(f"close {{(time.perf_counter() - t0) * 1000:.1f}} ms", flush=True)
    sys.stdout.flush()
else:
    print("exit without close", flush=True)
    os._exit(0)
"""


def wall(code: str, *argv: str) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode:
        raise SystemExit(f"failed ({p.returncode}):\n{p.stderr}")
    return dt, p.stdout.strip()


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=positive, default=3)
    ap.add_argument("--connections", type=count_list, default="1,4,8,32",
                    help="CUDA_DEVICE_MAX_CONNECTIONS values to time")
    ap.add_argument("--gil", action="store_true", help="also the GIL probe")
    ap.add_argument("--only-new", action="store_true", help="skip the first rows")
    args = ap.parse_args()
    require_gpu()
    wall(SERIAL)  # page cache and byte code warm
    for label, code, argv in () if args.only_new else (("python -c pass", "pass", ()), ("imports only", IMPORTS, ()),
                              ("device only", DEVICE, ()), ("serial", SERIAL, ()), ("threaded", THREADED, ()),
                              ("close, then exit", CLOSE, ("close",)), ("exit, context left", CLOSE, ("exit",))):
        runs = [wall(code, *argv) for _ in range(args.runs)]
        med = statistics.median(t for t, _ in runs)
        outs = "; ".join(o for _, o in runs if o)
        print(f"| {label} | {med * 1000:.1f} ms | {outs} |")
    for label, code in (("serial, gpu backend imported", SERIAL_GPU), ("threaded, driver calls only", THREADED_CALLS)):
        print(f"| {label} | {statistics.median(wall(code)[0] for _ in range(args.runs)) * 1000:.1f} ms |")
    for conn in args.connections.split(","):
        runs = [wall(CONNECTIONS, conn) for _ in range(args.runs)]
        print(f"| CUDA_DEVICE_MAX_CONNECTIONS={conn} | {statistics.median(t for t, _ in runs) * 1000:.1f} ms | "
              + "; ".join(o for _, o in runs) + " |")
    if args.gil:
        for _ in range(args.runs):
            print("gil:", wall(GIL)[1])


if __name__ == "__main__":
    run_main(main)
