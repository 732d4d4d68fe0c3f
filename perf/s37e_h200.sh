#!/usr/bin/env bash
# Session 37, call 5 (carry [".whl", ".kcache"]): the binned sort without the fine count over the scalars (the bins'
# count, then a count of groups and of keys over the orders before each regrouping): the sort's GPU tests, then
# direct against binned phase by phase, BN254 G1 2^18-2^26 and BLS12-381 G1 2^24.
#   OUT=/tmp/out bash perf/s37e_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) the sort's GPU tests"
timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu_msm_sort.py \
  "tests/test_gpu_msm.py::test_binned_sort_matches_cpu" 2>&1 | tail -3
echo "== $(date +%T) BN254 G1 and BLS12-381 G1"
timeout 200 python3 perf/msm.py --sizes 18,20,22,24,26 --curves bn128 --sort direct,binned --breakdown --repeats 5 \
  --json $OUT/msm_bn.json 2>&1 | grep -v "^{" | sed -n '/^Phases/,$p;/DIFFERS\|rror/p'
timeout 100 python3 perf/msm.py --sizes 24 --curves bls12381 --sort direct,binned --breakdown --repeats 5 \
  --json $OUT/msm_bls.json 2>&1 | grep -v "^{" | sed -n '/^Phases/,$p;/DIFFERS\|rror/p'
echo "== $(date +%T) done"
