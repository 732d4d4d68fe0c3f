#!/usr/bin/env bash
# h13tail2's figures for the closing device call (about 45 s; BN254 kernels ready, the environment of
# scripts/final_h200.sh: PYTHONPATH, GROTH16_KERNEL_CACHE): perf/pairing_latency.py (the tower's
# operations, the Miller loop and the final exponentiation on one warp and on two; BN254) and warm
# proofs at 2^13 (domain 2^14), whose gpu_check is the tail this branch cut.
#   OUT=/tmp/out bash perf/h13tail2_final.sh      (log: $OUT/h13tail2_final.log)
set -u
mkdir -p "$OUT"
{
  timeout 25 python3 perf/pairing_latency.py --iters 1000 --curves bn128
  timeout 30 python3 perf/prove.py --log-constraints 13 --curves bn128 --backend gpu --repeats 5 --workdir ${W:-/tmp}/h13tail2
} 2>&1 | tee "$OUT/h13tail2_final.log"
