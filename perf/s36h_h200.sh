#!/usr/bin/env bash
# Session 36, call 11 (carry [".whl", ".kcache"]): a block-list bucket summed over slices of blocks (msm.HEAVY_SLICES,
# msm_fix_join): every GPU test and the snarkjs proofs (scripts/final_h200.sh STEPS="tests"), then the 0/1 and
# bench-share MSMs at 2^24 with one slice (as before) and 64, phase by phase.
#   OUT=/tmp/out bash perf/s36h_h200.sh
set -u
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh 2>&1 | grep -E "^group|FAILED|ERROR|exit"
. perf/s31_env.sh > /dev/null 2>&1
echo "== $(date +%T) BLS12-381 G1 and G2, BN254 G1, 2^24"
timeout 100 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --g2-curves bls12381 \
  --scalars witness:0.32,0.31,witness:0.59,0.41 --heavy-slices 1,64 --breakdown --repeats 3 \
  --json $OUT/msm_bls.json 2>&1 | grep -A12 "^Phases"
timeout 60 python3 perf/msm.py --sizes 24 --curves bn128 --scalars random,witness:0.59,0.41 --heavy-slices 1,64 \
  --breakdown --repeats 3 --json $OUT/msm_bn.json 2>&1 | grep -A8 "^Phases"
echo "== $(date +%T) done"
