#!/usr/bin/env bash
# Session 41's second device call (carry [".whl", ".kcache"]): the other half of perf/s40_h200.sh: the
# batch-affine rounds over the inlined products against XYZZ, then a 2^20 proof of each curve with each G1 build.
#   OUT=/tmp/out bash perf/s41b_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) batch-affine rounds over the inlined products (msm_affine_*_g1i) against XYZZ"
timeout 300 python3 perf/msm.py --sizes 20,24 --curves bn128,bls12381 --accumulation xyzz,affine \
  --product split,split_inline --repeats 5 2>&1 | tail -20
for abi in split split_inline split; do
  echo "== $(date +%T) 2^20 proofs, G1 $abi"
  for pair in bn128:eo bls12381:split; do  # each curve's own G2 build
    GROTH16_MSM_PRODUCTS="g1=$abi,g2=${pair#*:}" timeout 100 python3 perf/prove.py --log-constraints 20 \
      --curves ${pair%%:*} 2>&1 | tail -2
  done
done
echo "== $(date +%T) done"
