#!/usr/bin/env bash
# For the lead's closing call (at most 60 s, kernels of the merged tree already built): the MSM's
# default builds (msm.PRODUCT_ABI: BN254/BLS12-381 G1 "mixed", G2 "value"; G2's segments in blocks
# of 128) beside the by-reference build that main had and the even/odd product's builds (eo,
# mixed_eo: not yet measured in the MSM), every combination over the same data with its result
# compared ("result" column), at 2^16, 2^20 and 2^24, G1 on both curves and BN254 G2.
# From the repo root:
#   bash perf/h15acc_final.sh        (writes $OUT/h15acc_final.json and .log)
set -o pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
timeout ${T_FINAL:-55} python3 perf/msm.py --curves bn128,bls12381 --g2 --sizes ${SIZES:-16,20,24} --repeats 5 \
  --combos ref:direct,default:direct,eo:direct,mixed_eo:direct --json "$out/h15acc_final.json" 2>&1 \
  | tee "$out/h15acc_final.log" | tail -42
