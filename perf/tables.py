"""A key's fold tables (msm.precompute: c doublings a table a point, one inversion per 16 tables),
built by each build of the base field's product (msm_builds.TABLE_ABI: the plain build, msm_precompute_<G>, the
even/odd one, _<G>e, and the split one, _<G>s), both curves, G1 and
G2: CUDA events, medians, and each build's tables compared byte for byte with the first's.

    python perf/tables.py [--log-n 20] [--curves bn128,bls12381] [--repeats 3]
"""
from __future__ import annotations


import numpy as np
from gpu_common import Device, random_points, time_ms

from engine.algebra.curves import curve_by_name
from engine.backends.gpu import GpuBackend
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_builds
from needs_gpu import require_gpu
from script_args import Parser, choice_list, curve_list, positive, run_main  # noqa: E402


def main() -> None:
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log-n", type=positive, default=20)
    ap.add_argument("--curves", type=curve_list, default="bn128,bls12381")
    ap.add_argument("--builds", type=choice_list(msm_builds.TABLE_ABIS[1:], "table build", "build_list"),
                    default="plain,eo,split")
    ap.add_argument("--repeats", type=positive, default=3)
    args = ap.parse_args()
    require_gpu()
    backend = GpuBackend()
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    n = 1 << args.log_n
    rows = []
    for name in args.curves.split(","):
        curve = curve_by_name(name)
        mod = backend.ctx.module(curve)
        plan = gmsm.plan_msm(n, curve.r.bit_length(), "full", curve=curve.name)
        for group in ("g1", "g2"):
            host = random_points(curve, group == "g2", n, seed=5)
            bases = dev.alloc(plan.fold * host.nbytes, stream)
            first = None
            for build in args.builds.split(","):
                msm_builds.TABLE_ABI = build

                def run():
                    Device.upload(bases, host, stream)
                    gmsm.precompute(mod, group, plan, bases, stream)
                upload = time_ms(stream, lambda: Device.upload(bases, host, stream), repeats=args.repeats)
                ms = time_ms(stream, run, repeats=args.repeats) - upload
                out = np.empty(plan.fold * host.nbytes, dtype=np.uint8)
                Device.download(out, bases, stream)
                stream.synchronize()
                same = "first" if first is None else ("same" if np.array_equal(out, first) else "DIFFERENT")
                first = out if first is None else first
                rows.append(f"{curve.name} | {group} | 2^{args.log_n} | c {plan.c} fold {plan.fold} | {build} | "
                            f"{ms:.2f} ms | {same}")
            msm_builds.TABLE_ABI = None
            Device.free(bases, stream)
    print("curve | group | n | plan | build | tables ms (events, less the upload) | tables against the first build")
    for r in rows:
        print(r)


if __name__ == "__main__":
    run_main(main)
