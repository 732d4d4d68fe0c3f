#!/usr/bin/env bash
# Session 37, call 8 (carry [".whl", ".kcache"]): after the review merged two helpers of the binned sort's kernels
# (block_bin_hist, warp_group_add): the sort's and the MSMs' GPU tests, and BN254 G1 at 2^24 once more.
#   OUT=/tmp/out bash perf/s37g_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) the sort's and the MSMs' GPU tests"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_msm_sort.py tests/test_gpu_msm.py \
  tests/test_gpu_msm_engine.py 2>&1 | tail -2
timeout 60 python3 perf/msm.py --sizes 24 --curves bn128 --sort direct,binned --repeats 5 2>&1 | grep -v "^{" \
  | sed -n '/^| curve/,/^$/p;/DIFFERS\|rror/p'
echo "== $(date +%T) done"
