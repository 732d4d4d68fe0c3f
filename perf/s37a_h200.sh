#!/usr/bin/env bash
# Session 37, call 1 (carry [".whl", ".kcache"]): the binned sort finished by two regrouping passes
# (cuda_kernels/msm_regroup.cuh) against msm_place and the direct placement: the sort's GPU tests, then
# perf/msm.py phase by phase, BN254 G1 2^22-2^26 and BLS12-381 G1/G2 2^24, random and 0/1 scalars.
#   OUT=/tmp/out bash perf/s37a_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) the sort's GPU tests"
timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu_msm_sort.py \
  "tests/test_gpu_msm.py::test_binned_sort_matches_cpu" 2>&1 | tail -4
echo "== $(date +%T) BN254 G1"
timeout 200 python3 perf/msm.py --sizes 22,24,26 --curves bn128 --sort direct,place,regroup --breakdown --repeats 5 \
  --json $OUT/msm_bn.json 2>&1 | grep -v "^{" | sed -n '/^Phases/,$p;/DIFFERS\|rror/p'
timeout 60 python3 perf/msm.py --sizes 24 --curves bn128 --scalars witness:0.59,0.41,witness:0.32,0.31 \
  --sort direct,place,regroup --breakdown --repeats 5 --json $OUT/msm_bn_w.json 2>&1 | grep -v "^{" | sed -n '/^Phases/,$p;/DIFFERS\|rror/p'
echo "== $(date +%T) BLS12-381 G1 and G2"
timeout 200 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --g2-curves bls12381 --sort direct,place,regroup \
  --breakdown --repeats 3 --json $OUT/msm_bls.json 2>&1 | grep -v "^{" | sed -n '/^Phases/,$p;/DIFFERS\|rror/p'
echo "== $(date +%T) done"
