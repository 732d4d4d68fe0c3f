"""Latency of the pairing's dependent chains on one warp (cycles and ns per operation).

    python perf/pairing_latency.py [--iters 2000] [--curves bn128,bls12381]

The epilogue and the pairing check are chains of dependent field products run by one
warp, so their time is latency, not throughput: this reports, per curve, cycles
(clock64) and nanoseconds (globaltimer) per base-field product (inline and out of
line), per Fq2 product of one lane group, per Fq12 product, cyclotomic squaring,
Fq12 squaring and product by a line (the tower's batches: the whole warp), per G1
XYZZ doubling (one thread's, and the warp's of curve_warp.cuh) and addition (the
warp's), per doubling and addition step of the twist point, per batch of ten Fq2
products, per Miller loop (lines on the fly; on one warp, and on two: one makes the lines, the other
takes them, as the proof's final phase), per final exponentiation (on one warp, and on two:
one squares, the other multiplies the powers of x in) and per Fq inversion (inverse.cuh:
the binary loop and the tail's divsteps), and the SM clock those imply.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuda_kernels.driver import Device  # noqa: E402
from engine.algebra.curves import BLS12_381, BN254  # noqa: E402
from engine.backends.gpu import GpuBackend  # noqa: E402
from engine.backends.gpu import verify as gverify  # noqa: E402
from engine.backends.gpu.epilogue import TOOLS, launch_pairing  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from script_args import Parser, curve_list, positive, run_main  # noqa: E402

MODES = ["fq mul inline", "fq mul out of line", "fq2 mul (lane group)", "fq12 mul", "cyclotomic sqr", "g1 xyzz dbl",
         "fq12 sqr", "fq12 x line", "g2 dbl step", "g2 add step", "batch of 10 fq2 mul", "miller loop",
         "final exp", "g1 xyzz dbl (warp)", "g1 xyzz add (warp)", "fq inverse (binary)", "miller loop (two warps)",
         "final exp (two warps)", "fq inverse (divsteps)"]
TWO_WARPS = {16, 17}  # modes launched with 64 threads (pairing.cuh's two-warp Miller loop)


def main() -> None:
    ap = Parser(description=__doc__)
    ap.add_argument("--iters", type=positive, default=2000)
    ap.add_argument("--curves", type=curve_list, default="bn128,bls12381",
                    help="which curves' chains (each needs its kernels)")
    args = ap.parse_args()
    require_gpu()
    curves = [c for c in (BN254, BLS12_381) if c.name in args.curves.split(",")]
    be = GpuBackend()
    be.bind_thread()
    for curve in curves:
        mod, stream, dev = be.ctx.module(curve), be.ctx.compute_stream(0), be.device
        out = dev.alloc(64, stream)
        consts_host = gverify.pairing_consts(curve)
        consts = dev.alloc(consts_host.nbytes, stream)
        Device.upload(consts, consts_host, stream)
        host = np.zeros(16, dtype=np.uint32)
        for mode, name in enumerate(MODES):
            iters = args.iters if mode in (0, 1, 2, 10) else 3 if mode in (11, 12, 16, 17) else max(args.iters // 20, 10)
            threads = 64 if mode in TWO_WARPS else 32
            for _ in range(2):  # the first launch warms up
                launch_pairing(mod, 1, threads, stream, TOOLS + 16 + mode, consts, (), out, (iters,))
                Device.download(host, out, stream)
                stream.synchronize()
            cycles = int(host[0]) | int(host[1]) << 32
            ns = int(host[2]) | int(host[3]) << 32
            print(f"{curve.name:9s} {name:22s} {cycles / iters:9.0f} cycles {ns / iters:9.1f} ns"
                  f"  ({cycles / max(ns, 1) * 1000:.0f} MHz)", flush=True)
        Device.free(out, stream)
        Device.free(consts, stream)
    be.close()


if __name__ == "__main__":
    run_main(main)
