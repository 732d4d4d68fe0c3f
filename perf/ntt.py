"""GPU NTT benchmark, 2^16 .. 2^26, both curves' Fr.

    python perf/ntt.py [--sizes 16,18,20,22,24,26] [--curves bn128,bls12381] [--per-pass]

Each transform is timed three ways, medians of --repeats after warm-up: CUDA events around
the enqueued passes ("ms"); wall clock from the first launch until the host sees an event
recorded after the last pass complete, polled ("wall ms": launch overhead included, as a
runtime that spins on completion, the CUDA runtime's default, would wait); and the same ended
by a stream synchronize ("sync wall ms": the engine's blocking-sync context puts the thread to
sleep, and the wake-up adds up to a few hundred microseconds at the larger sizes).  "sppark
wall ms" is sppark's best ordering of the same forward transform on an H200, from issue 15
(another run, BN254 only, at the sizes it gives); "x sppark" = that over our wall ms.

"NTT queued ms" times the forward transform with its launches queued ahead of the GPU (a device copy
enqueued first; queued_ms): the kernels back to back, as in a proof's pipeline, and as a C++ caller's
launches (sppark's, perf/sppark_ntt.cu) nearly get them.

Times the forward NTT (DIT, bit-reversed -> natural), the inverse (DIF,
natural -> bit-reversed) and the inverse as the prover runs it on each of its
three vectors, with the coset factor g^j/n applied by its last pass (n more
products); no bit-reversal pass.  --per-pass adds each pass's time (events
recorded between the passes).  Floor: the larger of (n/2 log n butterfly
products x the multiply-adds of one twiddle product: 3N^2 + 2N - 1 for the Shoup product of
BN254's Fr, 4N^2 for the Montgomery one of BLS12-381's) over the IMAD rate and
(passes x 2 x n x 32 bytes) over bandwidth.
"""
from __future__ import annotations

import argparse
import statistics
import time

from gpu_common import Device, Event, imads_per_mul, imads_per_shoup, measure_rates, random_scalars, report, time_ms

from engine.algebra.curves import curve_by_name
from engine.backends.gpu import ntt as gntt
from engine.backends.gpu import GpuBackend
from needs_gpu import require_gpu
from script_args import Parser, count_list, curve_list, output_file, positive, run_main, whole_count_list  # noqa: E402


# sppark's best ordering of the forward BN254 NTT on an H200, wall ms (issue 15's table; another run)
SPPARK_WALL_MS = {("bn128", 20): 0.258, ("bn128", 22): 1.023, ("bn128", 24): 4.357}


def wall_ms(stream, fn, repeats: int, warmup: int = 2, poll: bool = True) -> float:
    """Median wall milliseconds of fn() until the host sees it done: an event after it polled
    (poll) or a stream synchronize."""
    for _ in range(warmup):
        fn()
    stream.synchronize()
    times = []
    done = Event()
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        if poll:
            done.record(stream)
            while not done.query():
                pass
        else:
            stream.synchronize()
        times.append((time.perf_counter() - t0) * 1000)
    done.destroy()
    return statistics.median(times)


GATE_BYTES = 512 << 20  # a device copy of this many bytes (~0.25 ms on the H200) before each queued run


def queued_ms(dev, stream, fn, repeats: int, warmup: int = 2) -> float:
    """Median milliseconds of fn() with its launches queued ahead: a device copy enqueued first keeps the GPU
    busy while Python enqueues the events and the passes, so the events time the kernels back to back (a
    pipeline's NTT is queued behind earlier work; "NTT ms" also counts the GPU waiting for Python's launches,
    6-20 us a pass on the H200's hosts, a large part of the small sizes' time)."""
    src, dst = dev.alloc(GATE_BYTES, stream), dev.alloc(GATE_BYTES, stream)
    ms = time_ms(stream, fn, repeats, warmup, before=lambda: Device.copy(dst, src, GATE_BYTES, stream))
    Device.free(src, stream)
    Device.free(dst, stream)
    return ms


def pass_ms(stream, run, passes: int, repeats: int) -> str:
    """Median milliseconds of each pass of run(mark), events recorded between passes."""
    run(None)
    stream.synchronize()
    per = []
    for _ in range(repeats):
        events = [Event(timing=True) for _ in range(passes + 1)]
        run(lambda i: events[i].record(stream))
        events[-1].synchronize()
        per.append([events[i].elapsed_ms(events[i + 1]) for i in range(passes)])
        for e in events:
            e.destroy()
    return " / ".join(f"{statistics.median(p[i] for p in per):.3f}" for i in range(passes))


def bench(backend: GpuBackend, curve, k: int, repeats: int, rates, per_pass: bool = False) -> dict:
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    mod = backend.ctx.module(curve)
    n = 1 << k
    tables = gntt.build_tables(dev, mod, curve, k, stream, coset=True)
    host = random_scalars(curve, n)
    buf = dev.alloc(host.nbytes, stream)
    Device.upload(buf, host, stream)
    inv_ms = time_ms(stream, lambda: gntt.dif(mod, buf, tables, stream, inverse=True), repeats)
    coset_ms = time_ms(stream, lambda: gntt.dif(mod, buf, tables, stream, inverse=True, scale=tables.coset), repeats)
    fwd = lambda: gntt.dit(mod, buf, tables, stream, inverse=False)  # noqa: E731
    fwd_ms = time_ms(stream, fwd, repeats)
    fwd_queued = queued_ms(dev, stream, fwd, repeats)
    fwd_wall = wall_ms(stream, fwd, repeats)
    fwd_sync = wall_ms(stream, fwd, repeats, poll=False)
    inv_wall = wall_ms(stream, lambda: gntt.dif(mod, buf, tables, stream, inverse=True, scale=tables.coset), repeats)
    passes = len(gntt.pass_sizes(k))
    extra = {}
    if per_pass:
        extra["NTT passes ms"] = pass_ms(stream, lambda m: gntt.dit(mod, buf, tables, stream, inverse=False,
                                                                     mark=m), passes, repeats)
        extra["iNTT+coset passes ms"] = pass_ms(stream, lambda m: gntt.dif(mod, buf, tables, stream, inverse=True,
                                                                            scale=tables.coset, mark=m),
                                                passes, repeats)
    tables.free(stream)
    Device.free(buf, stream)
    stream.synchronize()
    per_product = imads_per_shoup(8) if gntt.shoup_twiddles(curve, k) else imads_per_mul(8)
    ops = (n // 2) * k * per_product
    nbytes = passes * 2 * n * 32
    floor_ms = max(ops / rates["imad"], nbytes / rates["bw"]) * 1000
    sp = SPPARK_WALL_MS.get((curve.name, k))
    return {"curve": curve.name, "log2 n": k, "passes": passes, "iNTT ms": round(inv_ms, 3),
            "iNTT+coset ms": round(coset_ms, 3), "iNTT+coset wall ms": round(inv_wall, 3),
            "NTT ms": round(fwd_ms, 3), "NTT queued ms": round(fwd_queued, 3), "NTT wall ms": round(fwd_wall, 3), "NTT sync wall ms": round(fwd_sync, 3), "floor ms": round(floor_ms, 3),
            "ratio": round(fwd_ms / floor_ms, 2), "sppark wall ms": sp if sp else "-",
            "x sppark": round(sp / fwd_wall, 2) if sp else "-", **extra}


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=count_list, default="16,18,20,22,24,26")
    ap.add_argument("--curves", type=curve_list, default="bn128,bls12381")
    ap.add_argument("--repeats", type=positive, default=9)
    ap.add_argument("--per-pass", action="store_true", help="also each pass's time (events between passes)")
    ap.add_argument("--max-pass-levels", type=positive, default=None,
                    help="the passes' MAX_PASS_LEVELS (engine/backends/gpu/ntt.py): more, shorter passes below 10")
    ap.add_argument("--min-blocks", type=int, default=None,
                    help="the passes' MIN_PASS_BLOCKS (engine/backends/gpu/ntt.py; 0: 256-thread blocks always)")
    ap.add_argument("--narrow-max-log", type=whole_count_list, default=None,
                    help="the passes' NARROW_MAX_LOG (engine/backends/gpu/ntt.py), or several, comma-separated: each "
                         "size timed under each in turn (0: the wide passes at every size)")
    ap.add_argument("--json", type=output_file)
    args = ap.parse_args()
    require_gpu()
    narrow_settings = [int(v) for v in args.narrow_max_log.split(",")] if args.narrow_max_log else [None]
    if args.min_blocks is not None:
        gntt.MIN_PASS_BLOCKS = args.min_blocks
    if args.max_pass_levels is not None:
        gntt.MAX_PASS_LEVELS = args.max_pass_levels
    backend = GpuBackend()
    dev = backend.device
    curves = [curve_by_name(c) for c in args.curves.split(",")]
    rates = measure_rates(backend, curves[0])
    rows = []
    for curve in curves:
        for s in args.sizes.split(","):
            for setting in narrow_settings:
                if setting is not None:
                    gntt.NARROW_MAX_LOG = setting
                rows.append(bench(backend, curve, int(s), args.repeats, rates, args.per_pass))
                rows[-1]["passes kind"] = "narrow" if gntt.narrow(int(s)) else "wide"
                print(rows[-1], flush=True)
    cols = ["curve", "log2 n", "passes", "passes kind", "NTT ms", "NTT queued ms", "NTT wall ms", "NTT sync wall ms", "iNTT ms", "iNTT+coset ms", "iNTT+coset wall ms",
            "floor ms", "ratio", "sppark wall ms", "x sppark"]
    if args.per_pass:
        cols += ["NTT passes ms", "iNTT+coset passes ms"]
    report(dev, rates, rows, cols, args.json)


if __name__ == "__main__":
    run_main(main)
