"""The base field's product builds side by side, both curves: the fused even/odd Montgomery product
(mont_ptx mul_eo) against the split form (field.cuh by_value_split: a squaring split into a^2 and
REDC; gen_mont_split.py), as x = x^2 and x = x y - x w (two products, one reduction where split).
The split test kernel is first checked against Python.  Four independent chains a thread.

    python perf/field_fq.py [--curves bn128,bls12381] [--iters 256] [--blocks-per-sm 4,8]

(Session 32's first call ran this script's predecessor, perf/field_f64.py at commit 3ec0528: the
product on the FP64 pipe, 0.79x the even/odd one on BN254, 0.70x on BLS12-381.)
"""
from __future__ import annotations

import random

import numpy as np
from gpu_common import Device, U32, launch, time_ms

from engine.algebra.curves import curve_by_name
from engine.backends.gpu import GpuBackend
from needs_gpu import require_gpu
from script_args import Parser, count_list, curve_list, positive, run_main  # noqa: E402

OPS = {"fq_sqr": "x^2", "fq_mulsub": "x y - x w"}


def to_words(vals: list[int], words: int) -> np.ndarray:
    out = np.zeros((len(vals), words), dtype=np.uint32)
    for i, v in enumerate(vals):
        for j in range(words):
            out[i, j] = (v >> (32 * j)) & 0xFFFFFFFF
    return out


def from_words(row: np.ndarray) -> int:
    return sum(int(w) << (32 * j) for j, w in enumerate(row))


def check(backend, curve, n: int = 1 << 14, seed: int = 7) -> int:
    """Wrong results of fq_split_test (x y, x^2, x y - z w, each / R mod q) on random operands."""
    q, words = curve.q, curve.n8q // 4
    rr = 1 << (32 * words)
    rng = random.Random(seed)
    av, bv = [rng.randrange(q) for _ in range(n)], [rng.randrange(q) for _ in range(n)]
    a, b = to_words(av, words), to_words(bv, words)
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    mod = backend.ctx.module(curve)
    da, db, do = dev.alloc(a.nbytes, stream), dev.alloc(b.nbytes, stream), dev.alloc(3 * a.nbytes, stream)
    Device.upload(da, a, stream)
    Device.upload(db, b, stream)
    Device.memset32(do, 0xA5A5A5A5, 3 * a.size, stream)  # poisoned: every word must be written
    launch(mod, "fq_split_test", (n + 127) // 128, 128, stream, da, db, U32(n), do)
    out = np.empty((3 * n, words), dtype=np.uint32)
    Device.download(out, do, stream)
    stream.synchronize()
    for buf in (da, db, do):
        Device.free(buf, stream)
    rinv = pow(rr, -1, q)
    bad = 0
    for i in range(n):
        z, w = av[(i + 1) % n], bv[(i + 7) % n]
        want = (av[i] * bv[i] * rinv % q, av[i] * av[i] * rinv % q, (av[i] * bv[i] - z * w) * rinv % q)
        bad += sum(from_words(out[3 * i + k]) != want[k] for k in range(3))
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
        for op, what in OPS.items():
            base = None
            for build in ("eo", "split"):
                name = f"perf_{op}_{build}"
                ms = time_ms(stream, lambda: launch(mod, name, blocks, threads, stream, out, U32(iters), ys),
                             repeats=5)
                rate = blocks * threads * iters * 4 / (ms / 1000) / 1e9
                base = base or rate
                rows.append({"curve": curve.name, "blocks/SM": bps, "op": what, "build": build, "ms": f"{ms:.3f}",
                             "G ops/s": f"{rate:.1f}", "x eo": f"{rate / base:.2f}"})
        Device.free(out, stream)
    Device.free(ys, stream)
    return rows


def main() -> None:
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--curves", type=curve_list, default="bn128,bls12381")
    ap.add_argument("--iters", type=positive, default=256)
    ap.add_argument("--blocks-per-sm", type=count_list, default="4,8")
    args = ap.parse_args()
    require_gpu()
    backend = GpuBackend()
    rows = []
    for name in args.curves.split(","):
        curve = curve_by_name(name)
        bad = check(backend, curve)
        print(f"{curve.name}: fq_split_test against Python, 3 x 16384 results: {bad} wrong")
        rows += chains(backend, curve, args.iters, [int(x) for x in args.blocks_per_sm.split(",")])
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))


if __name__ == "__main__":
    run_main(main)
