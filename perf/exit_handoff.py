"""What a process's end costs once it holds a device context, and what engine/exit_handoff.py takes off it.

    python perf/exit_handoff.py [--runs 9] [--device-mib 512] [--pinned-mib 64] [--queues 4]

Each run is a fresh interpreter (standard library and ctypes only, through cuda_kernels/driver_library.py; no numpy,
no bindings) that starts the
driver, retains the primary context (blocking sync, CUDA_DEVICE_MAX_CONNECTIONS work queues), allocates device
memory from the context's pool and pinned host memory, makes 8 streams, touches it all and synchronizes: about
what a small CLI proof holds.  Then it ends in one of four ways:

- `release`: every object freed, the context released (as the CLI's backend close did), then os._exit;
- `exit`: os._exit at once, everything left to the kernel's teardown of the process;
- `handoff`: engine/exit_handoff.hand_off() (a child keeps the device files), then os._exit;
- `release+handoff`: the release, then the hand-off (the part of the end that the release leaves).

The runs go in turns (one of each variant a round), back to back, so a teardown that a child runs after its
parent has gone falls on the next run's start: each run reports its own start (cuInit, context, setup) and the
harness its whole wall (fork to exit, stdout and stderr piped, as a test harness or a shell's $(...) reads them).
Prints the medians per variant; then each variant's runs back to back (a loop of CLI proofs).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from needs_gpu import require_gpu
from script_args import Parser, choice_list, output_file, positive, run_main
from engine.file_writes import write_file  # noqa: E402 - whole or not at all

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import ctypes, os, sys, time
t0 = time.perf_counter()
variant, dev_mib, pin_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, os.environ["EXIT_HANDOFF_ROOT"])
from cuda_kernels.driver_library import _driver_library  # the driver library's one door (standard library only)
lib = _driver_library()
def ok(r, what):
    if r != 0:
        print(json.dumps({"error": f"{what}: {r}"})); os._exit(3)
import json
ok(lib.cuInit(0), "cuInit")
t_init = time.perf_counter()
dev = ctypes.c_int(0)
ok(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
lib.cuDevicePrimaryCtxSetFlags_v2(dev, 4)
ctx = ctypes.c_void_p(0)
ok(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
ok(lib.cuCtxSetCurrent(ctx), "set current")
t_ctx = time.perf_counter()
streams = []
for _ in range(8):
    s = ctypes.c_void_p(0)
    ok(lib.cuStreamCreate(ctypes.byref(s), 1), "stream")
    streams.append(s)
dptr = ctypes.c_uint64(0)
ok(lib.cuMemAllocAsync(ctypes.byref(dptr), ctypes.c_size_t(dev_mib << 20), streams[0]), "alloc async")
ok(lib.cuMemsetD8Async(dptr, ctypes.c_ubyte(0), ctypes.c_size_t(dev_mib << 20), streams[0]), "memset")
host = ctypes.c_void_p(0)
ok(lib.cuMemHostAlloc(ctypes.byref(host), ctypes.c_size_t(pin_mib << 20), 0), "host alloc")
ctypes.memset(host, 1, pin_mib << 20)
ok(lib.cuMemcpyHtoDAsync_v2(dptr, host, ctypes.c_size_t(pin_mib << 20), streams[1]), "copy")
for s in streams:
    ok(lib.cuStreamSynchronize(s), "sync")
t_ready = time.perf_counter()
if variant.startswith("release"):
    lib.cuMemFreeAsync(dptr, streams[0])
    for s in streams:
        lib.cuStreamSynchronize(s); lib.cuStreamDestroy_v2(s)
    lib.cuMemFreeHost(host)
    lib.cuDevicePrimaryCtxRelease_v2(dev)
t_release = time.perf_counter()
sys.stdout.write(json.dumps({"init": t_init - t0, "context": t_ctx - t_init, "setup": t_ready - t_ctx,
                             "release": t_release - t_ready, "ready_at": time.time()}) + "\n")
sys.stdout.flush()
if variant.endswith("handoff"):
    from engine import exit_handoff
    assert exit_handoff.hand_off(), "no hand-off"
os._exit(0)
"""

VARIANTS = ("release", "exit", "handoff", "release+handoff")


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=positive, default=9)
    ap.add_argument("--device-mib", type=int, default=512)
    ap.add_argument("--pinned-mib", type=int, default=64)
    ap.add_argument("--queues", type=positive, default=4)
    ap.add_argument("--variants", type=choice_list(VARIANTS, "variant", "variant_list"), default=",".join(VARIANTS))
    ap.add_argument("--sequence", type=positive, default=8, help="runs of each variant back to back")
    ap.add_argument("--json", type=output_file, help="write every run here")
    args = ap.parse_args()
    require_gpu()
    variants = args.variants.split(",")
    env = {**os.environ, "CUDA_DEVICE_MAX_CONNECTIONS": str(args.queues), "EXIT_HANDOFF_ROOT": str(ROOT)}
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for r in range(args.runs + 1):  # round 0: warm-up (page cache, the driver's first start)
        for v in variants:
            t = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", CHILD, v, str(args.device_mib), str(args.pinned_mib)],
                               env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t
            t_end = time.time()
            if p.returncode:
                raise SystemExit(f"{v}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
            rec = json.loads(p.stdout.strip().splitlines()[-1])
            rec["wall"] = wall
            rec["after_ready"] = t_end - rec.pop("ready_at")  # release + the exit as the harness saw it
            if r:
                runs[v].append(rec)
    keys = ("wall", "init", "context", "setup", "release", "after_ready")
    print(f"{args.runs} rounds in turns, {args.device_mib} MiB device, {args.pinned_mib} MiB pinned, "
          f"{args.queues} work queues; medians, ms")
    print("| variant | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for v in variants:
        med = [statistics.median(x[k] for x in runs[v]) * 1e3 for k in keys]
        print(f"| {v} | " + " | ".join(f"{m:.1f}" for m in med) + " |")
    # back to back: a loop of runs of one variant, each started when the last one's wait returned, so a teardown
    # handed to a child overlaps the next run's start (what a script proving in a loop sees)
    seq = {}
    for v in variants:
        t = time.perf_counter()
        for _ in range(args.sequence):
            subprocess.run([sys.executable, "-c", CHILD, v, str(args.device_mib), str(args.pinned_mib)],
                           env=env, capture_output=True, check=True)
        seq[v] = (time.perf_counter() - t) / args.sequence
    print(f"\nback to back, {args.sequence} runs of each variant: ms a run (fork to exit, the next one's start "
          "included)")
    for v in variants:
        print(f"- {v}: {seq[v] * 1e3:.1f}")
    if args.json:
        write_file(args.json, json.dumps({"turns": runs, "sequence": seq}, indent=1))


if __name__ == "__main__":
    run_main(main)
