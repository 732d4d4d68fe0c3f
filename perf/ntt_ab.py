"""A/B of NTT kernel builds in one device run: the NTT kernels alone (ntt.cuh), compiled here with
NVRTC under several build switches, timed there side by side on the same input.

    python perf/ntt_ab.py build DIR                       # here (no GPU): DIR/<curve>-<variant>.cubin
    python perf/ntt_ab.py run DIR [--sizes 20,22,24]      # there: every CUBIN in DIR
    python perf/ntt_ab.py plans DIR --builds bn128=eo3,bls12381=eo4 --plans 24=10-10-4/8-8-8,...
                                                          # there: pass plans of one build a curve

Variants: "old" (NTT_EO_PRODUCTS=0: the carry-chain / 64-bit-product twiddle products), "eo4",
"eo3", "eo2" (even/odd products, built for 4, 3 or 2 blocks of 256 threads an SM), "eo4bf",
"eo3bf" (the same with NTT_BRANCH_FREE=1: no skip of twiddle-1 products), "mo4", "mo3" (even/odd
products on Montgomery twiddles, the `_m` passes: what BN254 runs from 2^21, ntt.SHOUP_MAX_LOG).  Each row:
forward NTT (DIT) and inverse with the coset factor (DIF), CUDA-event medians; every variant's
outputs are compared with the first variant's on the same random input (a mismatch is printed
and fails the run).
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path
from needs_gpu import require_gpu
from script_args import Parser, count_list, curve_name, output_dir, positive, run_main

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SOURCE = r'''
#include "params.cuh"
#include "field.cuh"
#include "ntt.cuh"
typedef fp<FR_P> fr_t;
typedef ntt_kernels<fr_t> NTT;
#include "ntt_entry.cuh"
'''
VARIANTS = {"old": (0, 4, 0, True), "eo4": (1, 4, 0, True), "eo3": (1, 3, 0, True), "eo2": (1, 2, 0, True),
            "eo4bf": (1, 4, 1, True), "eo3bf": (1, 3, 1, True), "mo4": (1, 4, 0, False),
            "mo3": (1, 3, 0, False)}  # (NTT_EO_PRODUCTS, blocks an SM, NTT_BRANCH_FREE, Shoup twiddles)
CURVES = ("bn128", "bls12381")


def plan_list(text: str) -> dict[int, list[list[int]]]:
    """--plans k=a-b-c/d-e-f,k=...: each pass a count of at least 1 and each plan's passes adding up to its k,
    read at the parse (int() after the device's set-up was a ValueError's traceback, a sum off an assert's)."""
    spec = {}
    for item in (i.strip() for i in text.split(",")):
        k, _, plans_text = item.partition("=")
        try:
            log_n = positive(k.strip())
            options = [[positive(x.strip()) for x in p.split("-")] for p in plans_text.split("/")]
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"{item!r} is no k=a-b-c/d-e-f (counts of at least 1)") from None
        bad = [p for p in options if sum(p) != log_n]
        if bad:
            raise argparse.ArgumentTypeError(f"{item!r}: the plan {'-'.join(map(str, bad[0]))} adds up to "
                                             f"{sum(bad[0])}, not {log_n}")
        spec[log_n] = options
    return spec


def build_list(text: str) -> dict[str, str]:
    """--builds curve=variant,...: a curve (an alias too) and a variant `build` makes, as the engine names the
    curve (the CUBIN's name): a typo was a KeyError or a missing file after the device's set-up."""
    builds = {}
    for item in (i.strip() for i in text.split(",")):
        curve, eq, variant = (part.strip() for part in item.partition("="))
        if not eq or variant not in VARIANTS:
            raise argparse.ArgumentTypeError(f"{item!r} is no curve=variant (a variant of: {', '.join(VARIANTS)})")
        builds[curve_name(curve)] = variant
    return builds


def variant_params(params: str, blocks: int) -> str:
    """params.cuh with both pass forms' blocks an SM (NTT_MIN_BLOCKS, NTT_MIN_BLOCKS_M) set to
    `blocks`; a variant's twiddle form is its tables' (the `_m` kernels for Montgomery ones)."""
    return re.sub(r"#define (NTT_MIN_BLOCKS(?:_M)?) \d+", rf"#define \1 {blocks}", params)


def build(out: Path, names: list[str]) -> None:
    from cuda_kernels import build as kb  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu.params import params_header  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    for c in CURVES:
        params = params_header(curve_by_name(c))
        for name in names:
            eo, blocks, branch_free, _ = VARIANTS[name]
            p = variant_params(params, blocks)
            opts = [f"--include-path={kb.SOURCE_DIR}".encode(), *(o.encode() for o in kb.DEFAULT_OPTIONS),
                    f"-DNTT_EO_PRODUCTS={eo}".encode(), f"-DNTT_BRANCH_FREE={branch_free}".encode()]
            cubin, _ = kb.compile_source(SOURCE.encode(), "ntt_ab.cu", {"params.cuh": p.encode()}, "sm_90", opts)
            (out / f"{c}-{name}.cubin").write_bytes(cubin)
            print(f"built {c}-{name}", flush=True)


def run(where: Path, sizes: list[int], repeats: int) -> int:
    import numpy as np  # noqa: PLC0415
    from gpu_common import Device, random_scalars, time_ms  # noqa: PLC0415

    from cuda_kernels.driver import Module  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415
    from engine.backends.gpu import ntt as gntt  # noqa: PLC0415

    backend = GpuBackend()
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    backend.ctx.bind_thread()
    bad = 0
    for c in CURVES:
        curve = curve_by_name(c)
        mods = {}
        for name in VARIANTS:
            path = where / f"{c}-{name}.cubin"
            if path.exists():
                mods[name] = Module(path.read_bytes())
                for fn in ("ntt_dif_pass", "ntt_dit_pass", "ntt_dif_pass_m", "ntt_dit_pass_m"):
                    mods[name].allow_shared(fn, 64 * 1024)
        for k in sizes:
            n = 1 << k
            host = random_scalars(curve, n, seed=k)
            buf = dev.alloc(host.nbytes, stream)
            ref = None
            cells = []
            for name, mod in mods.items():
                tables = gntt.build_tables(dev, mod, curve, k, stream, coset=True, shoup=VARIANTS[name][3])
                fwd = time_ms(stream, lambda: gntt.dit(mod, buf, tables, stream, inverse=False), repeats)
                inv = time_ms(stream, lambda: gntt.dif(mod, buf, tables, stream, inverse=True, scale=tables.coset),
                              repeats)
                Device.upload(buf, host, stream)  # the same input for every variant's checked result
                gntt.dif(mod, buf, tables, stream, inverse=True, scale=tables.coset)
                gntt.dit(mod, buf, tables, stream, inverse=False)
                got = np.empty_like(host)
                Device.download(got, buf, stream)
                stream.synchronize()
                tables.free(stream)
                if ref is None:
                    ref = got
                same = bool(np.array_equal(got, ref))
                bad += not same
                cells.append(f"{name} {fwd:.3f}/{inv:.3f}{'' if same else ' MISMATCH'}")
            Device.free(buf, stream)
            stream.synchronize()
            print(f"{c} 2^{k} NTT/iNTT+coset ms: " + " | ".join(cells), flush=True)
    return 1 if bad else 0


def plans(where: Path, builds: dict[str, str], plan_spec: dict[int, list[list[int]]], repeats: int) -> int:
    """Each pass plan (DIT order; the inverse runs it mirrored) of one build a curve, timed like
    run(); the outputs of every plan compared with the first one's."""
    import numpy as np  # noqa: PLC0415
    from gpu_common import Device, random_scalars, time_ms  # noqa: PLC0415

    from cuda_kernels.driver import Module  # noqa: PLC0415
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415
    from engine.backends.gpu import ntt as gntt  # noqa: PLC0415

    backend = GpuBackend()
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    backend.ctx.bind_thread()
    default = gntt.pass_sizes
    bad = 0
    for c, variant in builds.items():
        curve = curve_by_name(c)
        mod = Module((where / f"{c}-{variant}.cubin").read_bytes())
        for fn in ("ntt_dif_pass", "ntt_dit_pass", "ntt_dif_pass_m", "ntt_dit_pass_m"):
            mod.allow_shared(fn, 64 * 1024)
        for k, options in plan_spec.items():
            host = random_scalars(curve, 1 << k, seed=k)
            buf = dev.alloc(host.nbytes, stream)
            tables = gntt.build_tables(dev, mod, curve, k, stream, coset=True, shoup=VARIANTS[variant][3])
            ref, cells = None, []
            for plan in options:
                assert sum(plan) == k, plan
                gntt.pass_sizes = lambda _k, dif=False, p=plan: list(p[::-1] if dif else p)
                try:
                    fwd = time_ms(stream, lambda: gntt.dit(mod, buf, tables, stream, inverse=False), repeats)
                    inv = time_ms(stream, lambda: gntt.dif(mod, buf, tables, stream, inverse=True,
                                                           scale=tables.coset), repeats)
                    Device.upload(buf, host, stream)
                    gntt.dif(mod, buf, tables, stream, inverse=True, scale=tables.coset)
                    gntt.dit(mod, buf, tables, stream, inverse=False)
                finally:
                    gntt.pass_sizes = default
                got = np.empty_like(host)
                Device.download(got, buf, stream)
                stream.synchronize()
                ref = got if ref is None else ref
                same = bool(np.array_equal(got, ref))
                bad += not same
                cells.append(f"{'-'.join(map(str, plan))} {fwd:.3f}/{inv:.3f}{'' if same else ' MISMATCH'}")
            tables.free(stream)
            Device.free(buf, stream)
            stream.synchronize()
            print(f"{c}-{variant} 2^{k} plan NTT/iNTT+coset ms: " + " | ".join(cells), flush=True)
    return 1 if bad else 0


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["build", "run", "plans"])
    ap.add_argument("dir")
    ap.add_argument("--builds", type=build_list, default="bn128=eo3,bls12381=eo4", help="plans: curve=variant,...")
    ap.add_argument("--variants", default="old,eo4,eo3,eo2", help="build: which of " + ",".join(VARIANTS))
    ap.add_argument("--plans", type=plan_list, default="24=10-10-4/4-10-10/8-8-8/7-7-10/10-7-7",
                    help="plans: k=a-b-c/d-e-f,k=...")
    ap.add_argument("--sizes", type=count_list, default="20,22,24")
    ap.add_argument("--repeats", type=positive, default=9)
    args = ap.parse_args()
    if args.mode == "build":
        try:
            output_dir(args.dir)
        except argparse.ArgumentTypeError as e:
            ap.error(f"argument dir: {e}")
        unknown = [v for v in args.variants.split(",") if v not in VARIANTS]
        if unknown:
            ap.error(f"argument --variants: no variant {', '.join(map(repr, unknown))} (one of: {', '.join(VARIANTS)})")
        return build(Path(args.dir), args.variants.split(","))
    if not Path(args.dir).is_dir():
        ap.error(f"argument dir: {args.dir!r} is not a folder (what `ntt_ab.py build DIR` wrote)")
    if args.mode == "plans":
        cubins = [f"{c}-{v}.cubin" for c, v in args.builds.items()]
        missing = [name for name in cubins if not (Path(args.dir) / name).is_file()]
        if missing:
            ap.error(f"argument dir: {args.dir!r} holds no {', '.join(missing)} (`ntt_ab.py build DIR` writes them)")
        require_gpu()
        sys.exit(plans(Path(args.dir), args.builds, args.plans, args.repeats))
    require_gpu()
    sys.exit(run(Path(args.dir), [int(s) for s in args.sizes.split(",")], args.repeats))


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
