#!/usr/bin/env bash
# The lead's closing MSM figures of session 25 (a FINALS entry of scripts/final_h200.sh): the BN254 2^20 MSMs
# with the bucket reduction's new segment length (perf/msm.py, phases), and the binned bucket sort, now the
# default where the scratch has its bins, beside the direct placement at G1 2^24 on both curves.
set -u
timeout 25 python3 perf/msm.py --sizes 20 --curves bn128 --g2 --breakdown --repeats 5 2>&1 | grep "^| curve\|^| bn128"
# the binned bucket sort, now the default where the scratch has its bins (perf/msm.py allocates them where
# msm_sort.binned_sort says so): G1 at 2^24 on both curves, beside the direct placement in the same run
timeout 40 python3 perf/msm.py --sizes 24 --curves bn128,bls12381 --sort auto,direct --repeats 5 2>&1 \
  | grep "^| curve\|^| bn128\|^| bls12381"
