"""Shared pieces of the GPU benchmarks: event timing, the measured ceilings, random inputs.

Method (design.md §9): CUDA events around the region, warm-up first, the median
of repeats, random data, and beside each figure its floor from the two
ceilings measured here on the same device in the same run: memory bandwidth
(a large device-to-device copy, bytes read + written) and the 32-bit integer
multiply-add rate (perf_imad in kernels.cu).
"""
from __future__ import annotations

import datetime
import json
import random
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuda_kernels.driver import Device, Event, U32, launch  # noqa: E402
from engine.algebra import ec  # noqa: E402
from engine.algebra.curves import Curve  # noqa: E402
from engine.algebra.limbs import from_ints, g1_to_mont, g2_to_mont  # noqa: E402
from engine.file_writes import write_file  # noqa: E402


def time_ms(stream, fn, repeats: int = 7, warmup: int = 2, before=None) -> float:
    """Median milliseconds of fn() enqueued on `stream`, timed with events; `before()`, when given, is enqueued
    ahead of each timed run, outside the events (perf/ntt.py's queued_ms: work that keeps the GPU busy while
    Python enqueues the run)."""
    for _ in range(warmup):
        fn()
    stream.synchronize()
    times = []
    for _ in range(repeats):
        e0, e1 = Event(timing=True), Event(timing=True)
        if before is not None:
            before()
        e0.record(stream)
        fn()
        e1.record(stream)
        e1.synchronize()
        times.append(e0.elapsed_ms(e1))
        e0.destroy()
        e1.destroy()
    return statistics.median(times)


def measure_bandwidth(dev: Device, stream, nbytes: int = 4 << 30) -> float:
    """Bytes/s of a device-to-device copy, counting bytes read plus bytes written."""
    a, b = dev.alloc(nbytes, stream), dev.alloc(nbytes, stream)
    Device.memset32(a, 0x12345678, nbytes // 4, stream)
    ms = time_ms(stream, lambda: Device.copy(b, a, nbytes, stream), repeats=5)
    Device.free(a, stream)
    Device.free(b, stream)
    return 2 * nbytes / (ms / 1000)


def measure_imad_rate(dev: Device, mod, stream) -> float:
    """Independent 32-bit IMADs per second over the whole device."""
    blocks, threads, iters = dev.sm_count * 8, 256, 4096
    out = dev.alloc(4 * blocks * threads, stream)
    ms = time_ms(stream, lambda: launch(mod, "perf_imad", blocks, threads, stream, out, U32(iters), U32(12345)),
                 repeats=5)
    Device.free(out, stream)
    return blocks * threads * iters * 16 * 8 / (ms / 1000)


def measure_rates(backend, curve) -> dict:
    """The two ceilings of design.md §9 on this device, now: copy bandwidth and IMAD rate."""
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    return {"bw": measure_bandwidth(dev, stream), "imad": measure_imad_rate(dev, backend.ctx.module(curve), stream)}


def imads_per_shoup(limbs32: int) -> int:
    """32-bit multiplies in one Shoup product by a table constant (cuda_kernels/gen_mont_ptx.py):
    the truncated quotient (N(N+1)/2 wide products and N-1 high halves) and two low halves
    (N(N-1)/2 wide products and N low words each), a wide product counting two."""
    n = limbs32
    return 3 * n * n + 2 * n - 1


def imads_per_mul(limbs32: int) -> int:
    """32-bit multiply-adds in one Montgomery product (CIOS: 2N^2 for a*b, 2N^2 for m*p)."""
    return 4 * limbs32 * limbs32


def random_points(curve: Curve, g2: bool, n: int, distinct: int = 1 << 12, seed: int | None = None) -> np.ndarray:
    """n affine points (Montgomery, zkey layout): `distinct` random multiples of the generator,
    repeated to fill n (the scalars are what decides the bucket traffic)."""
    rng = random.Random(seed)
    add = ec.g2_add if g2 else ec.g1_add
    mul = ec.g2_mul if g2 else ec.g1_mul
    gen = curve.g2_gen if g2 else curve.g1_gen
    step = mul(curve, gen, rng.randrange(1, curve.r))
    p = mul(curve, gen, rng.randrange(1, curve.r))
    pts = []
    for _ in range(min(n, distinct)):
        pts.append(p)
        p = add(curve, p, step)
    base = (g2_to_mont if g2 else g1_to_mont)(curve, pts)
    reps = -(-n // base.shape[0])
    return np.ascontiguousarray(np.tile(base, (reps,) + (1,) * (base.ndim - 1))[:n])


def random_scalars(curve: Curve, n: int, seed: int | None = None) -> np.ndarray:
    """Uniform scalars below r, drawn with numpy (fast at 2^24) and reduced."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    top = (curve.r >> 192) & 0xFFFFFFFFFFFFFFFF
    x[:, 3] %= np.uint64(top)  # below r's top limb: always < r
    return x


def table(rows: list[dict], cols: list[str]) -> str:
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    head = " | ".join(c.ljust(widths[c]) for c in cols)
    sep = "-|-".join("-" * widths[c] for c in cols)
    body = "\n".join(" | ".join(str(r[c]).ljust(widths[c]) for c in cols) for r in rows)
    return f"| {head} |\n|-{sep}-|\n" + "\n".join(f"| {ln} |" for ln in body.splitlines())


def report(dev: Device, rates: dict, rows: list[dict], cols: list[str], json_path: str | None) -> None:
    """The closing lines of a benchmark: date, device and the run's ceilings, the table, and
    the rows as JSON where asked."""
    print(f"\n{datetime.date.today()} {dev.name}: bandwidth {rates['bw'] / 1e12:.2f} TB/s (copy, read+write), "
          f"IMAD rate {rates['imad'] / 1e12:.2f} T/s (perf_imad)")
    print(table(rows, cols))
    if json_path:  # whole or not at all (engine/file_writes.py): a run's rows are not to be read half written
        write_file(json_path, json.dumps({"rates": rates, "rows": rows, "device": dev.name}, indent=1))


__all__ = ["time_ms", "report", "measure_bandwidth", "measure_imad_rate", "measure_rates", "imads_per_mul", "imads_per_shoup", "random_points", "random_scalars",
           "table", "from_ints"]
