#!/usr/bin/env bash
# Session 42, call 5 (carry [".whl", ".kcache"]): the final code, with BLS12-381's split G1 accumulation under 3 blocks
# by default (perf/s42e_h200.sh measured it in a scratch tree): its MSMs at 2^20/2^24 against the unbounded build,
# then every GPU test and the GPU proofs for snarkjs.
#   OUT=/tmp/out bash perf/s42f_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) BLS12-381 G1, unbounded and the default"
timeout 100 python3 perf/msm.py --sizes 20,24 --curves bls12381 --combos "split:default:0,default:default" \
  --repeats 5 2>&1 | grep -E "^\|" | cut -c1-330
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -12 $OUT/log
