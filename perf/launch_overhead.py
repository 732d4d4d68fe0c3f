"""What one kernel launch, event record and stream wait cost the host, through the engine's driver layer and
through the bare bindings, alone and beside a second Python thread that polls an event (as a proof's waiter
does while the next proof is enqueued).

    python perf/launch_overhead.py [--count 3000] [--curve bn128]

A small proof enqueues ~45 launches and ~40 events on six streams; at the 2^14 domain the host's enqueue
(~1.8 ms) decides when the last stream starts (perf/RESULTS.md, "Session 27").  The kernel launched is
groth16_pairing with an op that does nothing (17 arguments, as the tail's phases) and witness_range_check over
no rows (3 arguments, as a small launch), one block, on an idle stream; medians of 5 rounds, microseconds a
call on the host's clock.
"""
from __future__ import annotations

import ctypes
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuda_kernels import driver  # noqa: E402
from cuda_kernels.driver import Event, U32, launch  # noqa: E402
from engine.algebra.curves import curve_by_name  # noqa: E402
from engine.backends.select import select_backend  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from script_args import Parser, curve_name, positive, run_main  # noqa: E402

NOOP_OP = 99  # groth16_pairing: no branch takes it


def launch_before(module, name, grid, block, stream, *args, shared=0) -> None:
    """driver.launch as it was before session 27 (a ctypes object an argument, an array of their addresses)."""
    if isinstance(grid, int):
        grid = (grid, 1, 1)
    vals = [a if isinstance(a, ctypes._SimpleCData) else driver.Ptr(a.ptr if isinstance(a, driver.DeviceBuffer)
                                                                    else int(a)) for a in args]
    ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
    driver._call(f"cuLaunchKernel({name})", driver.cu.cuLaunchKernel(
        module.function(name), grid[0], grid[1], grid[2], block, 1, 1, shared, stream.handle, ctypes.addressof(ptrs), 0))


def rounds(fn, count: int, stream) -> float:
    out = []
    for _ in range(5):
        stream.synchronize()
        t = time.perf_counter()
        for _ in range(count):
            fn()
        out.append((time.perf_counter() - t) / count * 1e6)
        stream.synchronize()
    return statistics.median(out)


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=positive, default=3000)
    ap.add_argument("--curve", type=curve_name, default="bn128")
    args = ap.parse_args()
    require_gpu()
    backend = select_backend("gpu")
    backend.bind_thread()
    ctx = backend.ctx
    mod = ctx.module(curve_by_name(args.curve))
    stream = ctx.device.stream()
    dev = ctx.device
    buf = dev.alloc(1 << 16, stream)
    stream.synchronize()
    p = buf.ptr
    many = (U32(NOOP_OP), p, p, p, p, p, p, p, p, p, p, p, U32(0), U32(0), U32(0), U32(0), U32(0))
    few = (buf, U32(0), buf)
    fn_many = mod.function("groth16_pairing")
    vals = [a if isinstance(a, ctypes._SimpleCData) else driver.Ptr(int(a)) for a in many]
    prebuilt = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
    addr = ctypes.addressof(prebuilt)
    handle = stream.handle
    ev = Event()
    rows = {
        "launch(), 17 arguments": lambda: launch(mod, "groth16_pairing", 1, 32, stream, *many),
        "launch(), 3 arguments": lambda: launch(mod, "witness_range_check", 1, 32, stream, *few),
        "launch as before, 17 arguments": lambda: launch_before(mod, "groth16_pairing", 1, 32, stream, *many),
        "launch as before, 3 arguments": lambda: launch_before(mod, "witness_range_check", 1, 32, stream, *few),
        "bare cuLaunchKernel, 17 prebuilt": lambda: driver.cu.cuLaunchKernel(fn_many, 1, 1, 1, 32, 1, 1, 0, handle, addr, 0),
        "Event.record": lambda: ev.record(stream),
        "Stream.wait_event": lambda: stream.wait_event(ev),
        "event pool take + give": lambda: ctx.events.give(ctx.events.take()),
    }
    print(f"{dev.name}, {args.curve}, {args.count} calls a round, medians of 5 rounds, us a call")
    print("| call | alone | beside a polling thread |")
    print("|---|---|---|")
    results = {name: [rounds(fn, args.count, stream)] for name, fn in rows.items()}
    stop = threading.Event()
    other = Event()
    other.record(ctx.device.stream())

    def poll() -> None:  # a waiter polling its done event (engine/backends/gpu/waiting.py spins like this)
        backend.bind_thread()
        while not stop.is_set():
            other.query()

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    for name, fn in rows.items():
        results[name].append(rounds(fn, args.count, stream))
    stop.set()
    t.join()
    for name, (alone, beside) in results.items():
        print(f"| {name} | {alone:.2f} | {beside:.2f} |")
    print(f"sys.getswitchinterval() = {sys.getswitchinterval() * 1e3:.1f} ms")


if __name__ == "__main__":
    run_main(main)
