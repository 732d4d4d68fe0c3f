#!/usr/bin/env bash
# Session 37, call 4 (carry [".whl", ".kcache"]): BLS12-381's windows under a partial fold (the C2 key's fold 8 on
# the whole H200, whose plans take BN254's terms: c = 22): G1 and G2 at 2^24, random and the bench share, the
# planner's window against 16, 20 and 21.
#   OUT=/tmp/out bash perf/s37d_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) BLS12-381 2^24, fold 8"
timeout 300 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --g2-curves bls12381 --fold 8 --window 16,20,21 \
  --scalars random,witness:0.32,0.31 --breakdown --repeats 3 --json $OUT/msm_f8.json 2>&1 | grep -v "^{" \
  | sed -n '/^Phases/,$p;/DIFFERS\|rror/p'
echo "== $(date +%T) done"
