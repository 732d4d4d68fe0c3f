"""GPU MSM benchmark: G1 on both curves and G2 on BN254, 2^16 .. 2^26 points.

    python perf/msm.py [--sizes 16,18,20,22,24] [--curves bn128,bls12381] [--g2] [--fold full|1|..]
                       [--accumulation xyzz,affine] [--scalars random,witness:Z,O] [--batch K]
                       [--affine THREADSxM,...]

Times the whole MSM as the prover runs it (bucket sort of the scalars, bucket
accumulation, reduction, the final point), with the points resident and
their window tables built beforehand (as a loaded key has them).  The floor
is the larger of (field products x IMADs per product) over the measured IMAD
rate and (bytes read) over the measured bandwidth; products count 6 a
batch-affine addition, 10 a mixed XYZZ one (Fq2 products as 3), 10 per reduction
addition (3 a bucket), with the affine rounds' additions taken from the plan's
bounds.  `--scalars witness:Z,O` draws Z zeros and O ones (fractions), the rest
uniform (perf/witness_share.py measures real circuits' shares); its rows carry
the ratio to random scalars of the same size.  `--batch K` also times K vectors
against the same bases in one pass, beside one.  `--affine 128x8,256x4` sweeps
the affine rounds' block size and slots a thread.
"""
from __future__ import annotations

import argparse

import numpy as np
from gpu_common import Device, imads_per_mul, measure_rates, random_points, random_scalars, report, time_ms

from engine.algebra.curves import curve_by_name
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import GpuBackend

PRODUCTS = {"xyzz": 10, "affine": 6}  # per addition; an Fq2 product counts 3 Fq products


def witness_scalars(curve, n: int, zero: float, one: float, seed: int = 7) -> np.ndarray:
    x = random_scalars(curve, n, seed)
    u = np.random.default_rng(seed + 1).random(n)
    x[u < zero + one] = 0
    x[(u >= zero) & (u < zero + one), 0] = 1
    return x


def bench(backend: GpuBackend, curve, log_n: int, g2: bool, fold, repeats: int, rates, accumulation: str,
          scalars: str, batch: int = 1) -> dict:
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    mod = backend.ctx.module(curve)
    n = 1 << log_n
    plan = gmsm.plan_msm(n, curve.r.bit_length(), fold, accumulation=accumulation, batch=batch)
    layout = gmsm.AccumulateLayout.for_plan(plan, dev.sm_count)
    group = "g2" if g2 else "g1"
    acc = (8 if g2 else 4) * curve.n8q
    pts_host = random_points(curve, g2, n)
    pts = dev.alloc(plan.fold * pts_host.nbytes, stream)
    Device.upload(pts, pts_host, stream)
    gmsm.precompute(mod, group, plan, pts, stream)
    if scalars == "random":
        sc_host = np.concatenate([random_scalars(curve, n, seed=j) for j in range(batch)])
    else:
        z, o = (float(v) for v in scalars.split(":")[1].split(","))
        sc_host = np.concatenate([witness_scalars(curve, n, z, o, seed=7 + j) for j in range(batch)])
    sc = dev.alloc(sc_host.nbytes, stream)
    Device.upload(sc, sc_host, stream)
    sort = gmsm.SortScratch(dev, [plan], stream)
    bs = gmsm.BucketScratch(dev, [(plan, layout)], acc, stream)
    res = dev.alloc(batch * acc, stream)

    def run():
        gmsm.run_msm(mod, group, plan, layout, pts, sc, sort, bs, acc, res.ptr, stream)

    ms = time_ms(stream, run, repeats=repeats)
    sort.free(stream)
    bs.free(stream)
    for b in (pts, sc, res):
        Device.free(b, stream)
    stream.synchronize()
    limbs = curve.n8q // 4
    bounds = plan.entry_bounds()
    products = (PRODUCTS["affine"] * (bounds[0] - bounds[-1]) + PRODUCTS["xyzz"] * (bounds[-1] + 3 * plan.keys))
    ops = products * (3 if g2 else 1) * imads_per_mul(limbs)
    nbytes = plan.max_entries * (4 + pts_host.nbytes // n) + batch * n * 32
    floor_ms = max(ops / rates["imad"], nbytes / rates["bw"]) * 1000
    return {"curve": curve.name, "group": group.upper(), "log2 n": log_n, "batch": batch, "scalars": scalars,
            "acc": accumulation, "aff": "x".join(map(str, gmsm.affine_shape())) if plan.affine_rounds else "",
            "c": plan.c,
            "fold": plan.fold, "rounds": plan.affine_rounds, "Mprod": round(products * (3 if g2 else 1) / 1e6, 1),
            "ms": round(ms, 3), "floor ms": round(floor_ms, 3), "ratio": round(ms / floor_ms, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16,18,20,22,24")
    ap.add_argument("--curves", default="bn128,bls12381")
    ap.add_argument("--g2", action="store_true", help="also G2 on BN254")
    ap.add_argument("--g2-only", action="store_true", help="only G2 on BN254")
    ap.add_argument("--fold", default="full")
    ap.add_argument("--accumulation", default=gmsm.default_accumulation(), help="comma list of xyzz, affine")
    ap.add_argument("--scalars", default="random", help="comma list: random, witness:ZERO,ONE")
    ap.add_argument("--batch", type=int, default=1, help="also time this many vectors in one pass")
    ap.add_argument("--affine", default="", help="comma list of THREADSxM for the affine rounds")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", help="write rows here too")
    args = ap.parse_args()
    fold = args.fold if args.fold == "full" else int(args.fold)
    backend = GpuBackend()
    dev = backend.device
    curves = [curve_by_name(c) for c in args.curves.split(",")]
    rates = measure_rates(backend, curves[0])
    shapes = [tuple(int(v) for v in a.split("x")) for a in args.affine.split(",") if a] or [
        (gmsm.AFFINE_THREADS, gmsm.AFFINE_PER_THREAD)]
    scalar_kinds = args.scalars.replace("random", "random;").replace(",witness", ";witness").strip(";").split(";")
    scalar_kinds = [s.strip(",") for s in scalar_kinds if s.strip(",")]
    groups = [] if args.g2_only else [(c, False) for c in curves]
    if args.g2 or args.g2_only:
        groups.append((curve_by_name("bn128"), True))
    rows = []
    for curve, g2 in groups:
        for s in args.sizes.split(","):
            for accumulation in args.accumulation.split(","):
                for threads, m in shapes if accumulation == "affine" else shapes[:1]:
                    gmsm.AFFINE_THREADS, gmsm.AFFINE_PER_THREAD = threads, m
                    base = None
                    for kind in scalar_kinds:
                        for batch in sorted({1, args.batch}):
                            row = bench(backend, curve, int(s), g2, fold, args.repeats, rates, accumulation, kind,
                                        batch)
                            if kind == "random" and batch == 1:
                                base = row["ms"]
                            if base:
                                row["x random"] = round(row["ms"] / base, 3)
                            rows.append(row)
                            print(row, flush=True)
    cols = ["curve", "group", "log2 n", "batch", "scalars", "acc", "aff", "c", "fold", "rounds", "Mprod", "ms",
            "floor ms", "ratio", "x random"]
    for r in rows:
        r.setdefault("x random", "")
    report(dev, rates, rows, cols, args.json)


if __name__ == "__main__":
    main()
