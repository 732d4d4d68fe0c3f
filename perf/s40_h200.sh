#!/usr/bin/env bash
# Session 40's plan for the next device call (carry [".whl", ".kcache"]): G1's accumulation with every product
# inlined (msm.py "split_inline", kernels msm_accumulate*_g1i) against the default "split", which calls its
# products (perf/RESULTS.md, session 40: no IMAD.MOV against 334, 2.3-2.7x the code), and the batch-affine
# rounds over the same products (msm_affine_*_g1i; until now they took the plain product by reference).  First
# the builds against the CPU, then the MSMs over the same points, tables and scalars (perf/msm.py compares each
# result with the first build's), in turns; then a 2^20 proof of each curve with each build
# (GROTH16_MSM_PRODUCTS).
#   OUT=/tmp/out bash perf/s40_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) the builds against the CPU"
python3 -m pytest -q -p no:cacheprovider tests/test_gpu_msm.py -k "product_builds_match_cpu or inlined" 2>&1 | tail -2
for round in 1 2; do
  echo "== $(date +%T) MSMs, round $round"
  timeout 240 python3 perf/msm.py --sizes 16,20,24 --curves bn128,bls12381 --product split,split_inline \
    --repeats 5 2>&1 | tail -14
done
echo "== $(date +%T) batch-affine rounds over the inlined products (msm_affine_*_g1i) against XYZZ"
timeout 300 python3 perf/msm.py --sizes 20,24 --curves bn128,bls12381 --accumulation xyzz,affine \
  --product split,split_inline --repeats 5 2>&1 | tail -20
for abi in split split_inline split; do
  echo "== $(date +%T) 2^20 proofs, G1 $abi"
  for pair in bn128:eo bls12381:split; do  # each curve's own G2 build
    GROTH16_MSM_PRODUCTS="g1=$abi,g2=${pair#*:}" timeout 120 python3 perf/prove.py --log-constraints 20 \
      --curves ${pair%%:*} 2>&1 | tail -2
  done
done
echo "== $(date +%T) done"
