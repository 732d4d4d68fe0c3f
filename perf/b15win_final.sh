#!/usr/bin/env bash
# b15win's headline figures for the closing device call (about 40 s; the environment of scripts/final_h200.sh:
# cwd = the repo root, PYTHONPATH and GROTH16_KERNEL_CACHE set): perf/msm.py's BLS12-381 G1 at 2^20 and 2^24
# and G2 at 2^20 with the planner's per-curve windows (msm_costs.PLAN_COSTS_BY_CURVE: c = 16, 20, 16) beside
# the curve-blind plan's (--window base: c = 20, 22, 20), same points and scalars, medians of 5 (CUDA events).
#   OUT=/tmp/out bash perf/b15win_final.sh        (log: $OUT/b15win_final.log, rows: $OUT/b15win_*.json)
set -u
out=${OUT:-/tmp/out}
mkdir -p "$out"
timeout ${T_FINAL:-58} bash -c "
python3 perf/msm.py --curves bls12381 --sizes 20,24 --window base --repeats 5 --json $out/b15win_g1.json 2>&1 \
  | grep '^| curve\|^| bls12381'
python3 perf/msm.py --g2-only --g2-curves bls12381 --sizes 20 --window base --repeats 5 --json $out/b15win_g2.json 2>&1 \
  | grep '^| curve\|^| bls12381'
" 2>&1 | tee "$out/b15win_final.log"
