"""GPU MSM benchmark: G1 on both curves and G2 on BN254, 2^16 .. 2^24 points.

    python perf/msm.py [--sizes 16,18,20,22,24] [--curves bn128,bls12381] [--g2] [--fold full|1|..]

Times the whole MSM as the prover runs it (bucket sort of the scalars, bucket
accumulation, reduction, the final point), with the points resident and
their window tables built beforehand (as a loaded key has them).  The floor
is the larger of (point additions x field products x IMADs per product) over
the measured IMAD rate and (bytes read) over the measured bandwidth.
"""
from __future__ import annotations

import argparse

from gpu_common import Device, imads_per_mul, measure_rates, random_points, random_scalars, report, time_ms

from engine.algebra.curves import curve_by_name
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import GpuBackend

MULS_PER_MADD = {False: 10, True: 10 * 3}  # XYZZ mixed add: 8M + 2S; Fq2 product = 3 Fq products


def bench(backend: GpuBackend, curve, log_n: int, g2: bool, fold, repeats: int, rates) -> dict:
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    mod = backend.ctx.module(curve)
    n = 1 << log_n
    plan = gmsm.plan_msm(n, curve.r.bit_length(), fold)
    layout = gmsm.AccumulateLayout.for_plan(plan, dev.sm_count)
    group = "g2" if g2 else "g1"
    acc = (8 if g2 else 4) * curve.n8q
    pts_host = random_points(curve, g2, n)
    pts = dev.alloc(plan.fold * pts_host.nbytes, stream)
    Device.upload(pts, pts_host, stream)
    gmsm.precompute(mod, group, plan, pts, stream)
    sc_host = random_scalars(curve, n)
    sc = dev.alloc(sc_host.nbytes, stream)
    Device.upload(sc, sc_host, stream)
    sort = gmsm.SortScratch(dev, [plan], stream)
    bs = gmsm.BucketScratch(dev, [(plan, layout)], acc, stream)
    res = dev.alloc(acc, stream)

    def run():
        gmsm.sort_scalars(mod, plan, sc, sort, stream)
        gmsm.accumulate(mod, group, plan, layout, pts, sort, bs, acc, res.ptr, stream)

    ms = time_ms(stream, run, repeats=repeats)
    sort.free(stream)
    bs.free(stream)
    for b in (pts, sc, res):
        Device.free(b, stream)
    stream.synchronize()
    limbs = curve.n8q // 4
    adds = n * plan.windows + 3 * plan.keys
    ops = adds * MULS_PER_MADD[g2] * imads_per_mul(limbs)
    nbytes = n * plan.windows * (4 + pts_host.nbytes // n) + n * 32
    floor_ms = max(ops / rates["imad"], nbytes / rates["bw"]) * 1000
    return {"curve": curve.name, "group": group.upper(), "log2 n": log_n, "c": plan.c, "fold": plan.fold,
            "ms": round(ms, 3), "floor ms": round(floor_ms, 3), "ratio": round(ms / floor_ms, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16,18,20,22,24")
    ap.add_argument("--curves", default="bn128,bls12381")
    ap.add_argument("--g2", action="store_true", help="also G2 on BN254")
    ap.add_argument("--fold", default="full")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", help="write rows here too")
    args = ap.parse_args()
    fold = args.fold if args.fold == "full" else int(args.fold)
    backend = GpuBackend()
    dev = backend.device
    curves = [curve_by_name(c) for c in args.curves.split(",")]
    rates = measure_rates(backend, curves[0])
    rows = []
    for curve in curves:
        for s in args.sizes.split(","):
            rows.append(bench(backend, curve, int(s), False, fold, args.repeats, rates))
            print(rows[-1], flush=True)
    if args.g2:
        bn = curve_by_name("bn128")
        for s in args.sizes.split(","):
            rows.append(bench(backend, bn, int(s), True, fold, args.repeats, rates))
            print(rows[-1], flush=True)
    report(dev, rates, rows, ["curve", "group", "log2 n", "c", "fold", "ms", "floor ms", "ratio"], args.json)

if __name__ == "__main__":
    main()
