#!/usr/bin/env bash
# Session 36, call 7 (carry [".whl", ".kcache"]): the XYZZ pass's chunk from the vector's own entry count
# (cuda_kernels/msm.cuh msm_chunk): the MSM GPU tests, then the phases of BLS12-381 G1 and G2 at 2^24 and BN254 G1
# at 2^24 on random scalars, the bench circuit's share and SHA-256's (perf/msm.py --breakdown), as call 6 ran them
# before the change.
#   OUT=/tmp/out bash perf/s36f_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) MSM GPU tests"
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_msm.py tests/test_gpu_msm_engine.py \
  tests/test_gpu_host_tier.py tests/test_gpu_kernels.py -k "msm or batch or proof or host or fold" 2>&1 | tail -3
echo "== $(date +%T) BLS12-381 2^24 G1 and G2, BN254 G1 2^24"
timeout 300 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --g2-curves bls12381 \
  --scalars random,witness:0.32,0.31,witness:0.59,0.41 --breakdown --repeats 3 --json $OUT/msm_bls.json 2>&1 |
  grep -v "^{" | grep -E "^\| (curve|bls|---)|Phases"
timeout 200 python3 perf/msm.py --sizes 22,24 --curves bn128 --scalars random,witness:0.32,0.31,witness:0.59,0.41 \
  --breakdown --repeats 3 --json $OUT/msm_bn.json 2>&1 | grep -v "^{" | grep -E "^\| (curve|bn|---)|Phases"
echo "== $(date +%T) done"
