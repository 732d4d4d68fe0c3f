#!/usr/bin/env bash
# t13tower's figures for the closing device call (about 45 s; BN254 kernels ready, the environment of
# scripts/final_h200.sh: cwd = the repo root, PYTHONPATH, GROTH16_KERNEL_CACHE): perf/pairing_latency.py
# (the tower's operations, the Miller loop and the final exponentiation on one warp and on two; BN254) and
# warm proofs at 2^13 constraints (domain 2^14), whose gpu_check is the final phase this branch cut.
#   OUT=/tmp/out bash perf/t13tower_final.sh      (log: $OUT/t13tower_final.log)
set -u
mkdir -p "$OUT"
{
  timeout 25 python3 perf/pairing_latency.py --iters 1000 --curves bn128
  timeout 30 python3 perf/prove.py --log-constraints 13 --curves bn128 --backend gpu --repeats 5 --workdir ${W:-/tmp}/t13tower
} 2>&1 | tee "$OUT/t13tower_final.log"
