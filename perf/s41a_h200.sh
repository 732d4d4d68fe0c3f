#!/usr/bin/env bash
# Session 41's first device call (carry [".whl", ".kcache"]): session 40's plan (perf/s40_h200.sh) cut in two
# to fit the per-call limit.  This half: the inlined builds against the CPU, then the MSMs over the same points,
# tables and scalars with G1 "split" and "split_inline", both curves, 2^16/2^20/2^24, in two rounds.
#   OUT=/tmp/out bash perf/s41a_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) the builds against the CPU"
python3 -m pytest -q -p no:cacheprovider tests/test_gpu_msm.py -k "product_builds_match_cpu or inlined" 2>&1 | tail -2
for round in 1 2; do
  echo "== $(date +%T) MSMs, round $round"
  timeout 240 python3 perf/msm.py --sizes 16,20,24 --curves bn128,bls12381 --product split,split_inline \
    --repeats 5 2>&1 | tail -14
done
echo "== $(date +%T) done"
