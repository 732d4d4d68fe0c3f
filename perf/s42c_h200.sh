#!/usr/bin/env bash
# Session 42, call 3 (carry [".whl", ".kcache"]): Nsight (call 2) found BN254 G1's inlined accumulation latency-bound
# (3 blocks of 128 an SM at 132 registers, 2.7 warps a scheduler, 65% of cycles with no eligible warp) and its
# 135168 chunks (1024 threads an SM) running as 2.67 waves.  Measured here over the same points and scalars:
# the accumulation bounded to 4 blocks (msm_accumulate*_g1i_b4, 128 registers) against the unbounded one, and the
# layout's threads an SM (msm.ACCUMULATE_THREADS_PER_SM: 768 / 1152 / 1536 are whole waves of 3 blocks, 1024 of 4).
#   OUT=/tmp/out bash perf/s42c_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) the bounded build against the CPU"
python3 -m pytest -q -p no:cacheprovider tests/test_gpu_msm.py -k "bn254_bounded or product_builds_match_cpu" 2>&1 |
  tail -2
echo "== $(date +%T) BN254 G1, unbounded and b4, threads an SM"
timeout 300 python3 perf/msm.py --sizes 20,24,26 --curves bn128 --combos "split_inline:default,split_inline:default:4" \
  --threads-per-sm 768,1024,1152,1536 --repeats 5 --json $OUT/g1.json 2>&1 | grep -E "^\|" | cut -c1-400
echo "== $(date +%T) BN254 G2 and BLS12-381 G1/G2 at 2^24, threads an SM"
timeout 200 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --g2-curves bn128,bls12381 \
  --threads-per-sm 768,1024,1152,1536 --repeats 5 --json $OUT/others.json 2>&1 | grep -E "^\|" | cut -c1-400
echo "== $(date +%T) done"
