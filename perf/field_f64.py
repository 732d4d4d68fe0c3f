"""The base field's Montgomery product on the FP64 pipe (cuda_kernels/mont_f64.cuh) beside the
even/odd IMAD product (mont_ptx mul_eo), both curves: checked against Python on random and edge
operands, then throughput of four independent product chains a thread, all even/odd, all FP64,
or mixed (the two pipes side by side), at several block counts.

    python perf/field_f64.py [--curves bn128,bls12381] [--iters 256]
"""
from __future__ import annotations

import argparse
import random

import numpy as np
from gpu_common import Device, U32, launch, time_ms

from engine.algebra.curves import curve_by_name
from engine.backends.gpu import GpuBackend

CHAINS = {"eo": "perf_fq_mul_eo", "f64": "perf_fq_mul_f64", "mix 2+2": "perf_fq_mul_mix"}


def to_words(vals: list[int], words: int) -> np.ndarray:
    out = np.zeros((len(vals), words), dtype=np.uint32)
    for i, v in enumerate(vals):
        for j in range(words):
            out[i, j] = (v >> (32 * j)) & 0xFFFFFFFF
    return out


def from_words(row: np.ndarray) -> int:
    return sum(int(w) << (32 * j) for j, w in enumerate(row))


def check(backend, curve, n: int = 1 << 16, seed: int = 7) -> int:
    """Mismatches of fq_mul_f64_test against a b R^-1 mod q (edges crossed with edges, then random)."""
    q, words = curve.q, curve.n8q // 4
    rr = 1 << (32 * words)
    edge = [0, 1, 2, q - 1, q - 2, (q - 1) // 2, rr % q, (rr * rr) % q, (1 << (32 * words - 3)) % q]
    rng = random.Random(seed)
    pairs = [(a, b) for a in edge for b in edge]
    pairs += [(rng.randrange(q), rng.randrange(q)) for _ in range(n - len(pairs))]
    a = to_words([x for x, _ in pairs], words)
    b = to_words([y for _, y in pairs], words)
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    mod = backend.ctx.module(curve)
    da, db, do = dev.alloc(a.nbytes, stream), dev.alloc(b.nbytes, stream), dev.alloc(a.nbytes, stream)
    Device.upload(da, a, stream)
    Device.upload(db, b, stream)
    Device.memset32(do, 0xA5A5A5A5, a.size, stream)  # poisoned: every word must be written
    launch(mod, "fq_mul_f64_test", (len(pairs) + 255) // 256, 256, stream, da, db, U32(len(pairs)), do)
    out = np.empty_like(a)
    Device.download(out, do, stream)
    stream.synchronize()
    for buf in (da, db, do):
        Device.free(buf, stream)
    rinv = pow(rr, -1, q)
    bad = 0
    for i, (x, y) in enumerate(pairs):
        if from_words(out[i]) != x * y * rinv % q:
            bad += 1
            if bad <= 3:
                print(f"  mismatch {curve.name}: a={x:#x} b={y:#x} got {from_words(out[i]):#x}")
    return bad


def chains(backend, curve, iters: int, blocks_per_sm: list[int]) -> list[dict]:
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    mod = backend.ctx.module(curve)
    words = curve.n8q // 4
    rng = random.Random(3)
    ys_host = to_words([rng.randrange(curve.q) for _ in range(1024)], words)
    ys = dev.alloc(ys_host.nbytes, stream)
    Device.upload(ys, ys_host, stream)
    rows = []
    for bps in blocks_per_sm:
        blocks, threads = dev.sm_count * bps, 256
        out = dev.alloc(4 * blocks * threads, stream)
        base = None
        for label, name in CHAINS.items():
            ms = time_ms(stream, lambda: launch(mod, name, blocks, threads, stream, out, U32(iters), ys), repeats=5)
            rate = blocks * threads * iters * 4 / (ms / 1000) / 1e9
            base = base or rate
            rows.append({"curve": curve.name, "blocks/SM": bps, "chains": label, "ms": f"{ms:.3f}",
                         "G products/s": f"{rate:.1f}", "x eo": f"{rate / base:.2f}"})
        Device.free(out, stream)
    Device.free(ys, stream)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--curves", default="bn128,bls12381")
    ap.add_argument("--iters", type=int, default=256)
    ap.add_argument("--blocks-per-sm", default="4,8,16")
    args = ap.parse_args()
    backend = GpuBackend()
    rows = []
    for name in args.curves.split(","):
        curve = curve_by_name(name)
        bad = check(backend, curve)
        print(f"{curve.name}: fq_mul_f64_test against Python, 65536 products (81 edge pairs): {bad} wrong")
        rows += chains(backend, curve, args.iters, [int(x) for x in args.blocks_per_sm.split(",")])
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))


if __name__ == "__main__":
    main()
