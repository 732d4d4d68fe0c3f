#!/usr/bin/env bash
# Written for session 42's last call, which the device refused (then too little device time was left): BLS12-381's
# split G1 accumulation under 3 blocks (perf/s42e_h200.sh measured it in a scratch tree; built since 5b197bb, not the
# default), its MSMs at 2^20/2^24 against the unbounded build, then every GPU test (its own among them:
# test_gpu_msm.py "split-b3") and the GPU proofs for snarkjs.  Run it before making the bound BLS12-381's default.
#   OUT=/tmp/out bash perf/s42f_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) BLS12-381 G1, unbounded and under 3 blocks"
timeout 100 python3 perf/msm.py --sizes 20,24 --curves bls12381 --combos "split:default:0,split:default:3" \
  --repeats 5 2>&1 | grep -E "^\|" | cut -c1-330
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -12 $OUT/log
