#!/usr/bin/env bash
# Session 27's fifth measuring call (checkout root, carry [".whl", ".kcache"]): the full-fold MSM's window at proof
# sizes, BN254 G1 and G2, 2^12 .. 2^16 points, c = 6, 7, 8, 9, 10 and 16 beside the planner's (perf/msm.py, random
# scalars), and BLS12-381 G1 at 2^13, 2^14: where the planner's window is not the fastest.
#   OUT=/tmp/out bash perf/s27e_h200.sh
set -u
. scripts/gpu_env.sh || exit 2
timeout 150 python3 perf/msm.py --sizes 12,13,14,15,16 --curves bn128 --g2 --window 6,7,8,9,10,16 --repeats 5 2>&1 \
  | grep "^| bn128\|^| curve" | cut -d'|' -f2-4,9-14
timeout 80 python3 perf/msm.py --sizes 13,14,15 --curves bls12381 --g2 --g2-curves bls12381 --window 7,8,9,10,16 --repeats 5 2>&1 \
  | grep "^| bls\|^| curve" | cut -d'|' -f2-4,9-14
