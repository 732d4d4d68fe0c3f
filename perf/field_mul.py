"""Throughput of one Fr product per implementation, BN254 (PTX carry chains, C++ u64,
64-bit products, and the Shoup product by a table constant that the NTT uses).

    python perf/field_mul.py

Four independent product chains per thread, enough threads to fill the device, the
second operand loaded from memory (so no product is specialised for known limbs);
products per second against the IMAD ceiling (4 N^2 = 256 multiply-adds a Montgomery
product; the Shoup product needs 3 N^2 + 2 N - 1 = 207).
"""
from __future__ import annotations

from gpu_common import Device, U32, imads_per_mul, imads_per_shoup, launch, measure_imad_rate, random_scalars, time_ms

from engine.algebra.curves import BN254
from engine.backends.gpu import GpuBackend
from needs_gpu import require_gpu
from script_args import Parser, run_main


def main() -> None:
    Parser(description=__doc__.split("\n\n")[0]).parse_args()  # --help here too, and no flag taken unread
    require_gpu()
    backend = GpuBackend()
    dev, stream = backend.device, backend.ctx.compute_stream(0)
    mod = backend.ctx.module(BN254)
    rate = measure_imad_rate(dev, mod, stream)
    blocks, threads, iters = dev.sm_count * 16, 256, 512
    out = dev.alloc(4 * blocks * threads, stream)
    ys_host = random_scalars(BN254, 1024)
    ys = dev.alloc(ys_host.nbytes, stream)
    Device.upload(ys, ys_host, stream)
    print(f"IMAD ceiling {rate / 1e12:.2f} T/s = {rate / imads_per_mul(8) / 1e9:.1f} G Montgomery products/s, "
          f"{rate / imads_per_shoup(8) / 1e9:.1f} G Shoup products/s")
    for name in ("perf_fr_mul_ptx", "perf_fr_mul_c64", "perf_fr_mul_wide", "perf_fr_mul_shoup"):
        ms = time_ms(stream, lambda: launch(mod, name, blocks, threads, stream, out, U32(iters), ys), repeats=5)
        muls = blocks * threads * iters * 4
        print(f"{name}: {muls / (ms / 1000) / 1e9:.1f} G products/s ({ms:.2f} ms)")
    Device.free(out, stream)
    Device.free(ys, stream)


if __name__ == "__main__":
    run_main(main)
