#!/usr/bin/env bash
# The MSM's issue-15 figures on the default builds (msm.PRODUCT_ABI_BY_CURVE), for the closing call (about 60 s,
# kernels ready, the environment of scripts/final_h200.sh): BN254 G1 at 2^20 and 2^24 with random scalars and with
# the 0/1 share of SHA-256's witness (0.59 zeros, 0.41 ones), each alone and as a batch of 10 vectors in one pass;
# BLS12-381 G1 and BN254 G2 at 2^24, random.  Each row's result is checked by perf/msm.py against the first's.
#   OUT=/tmp/out bash perf/lead15_final.sh
set -u
mkdir -p "$OUT"
timeout 40 python3 perf/msm.py --sizes 20,24 --curves bn128 --scalars random,witness:0.59,0.41 --batch 10 --repeats 3 \
  --json "$OUT/lead15_g1.json" 2>&1 | grep -v "^{" | tail -14
timeout 30 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --repeats 3 --json "$OUT/lead15_24.json" 2>&1 \
  | grep -v "^{" | tail -6
