#!/usr/bin/env bash
# For the lead's closing call (at most 60 s, kernels of the merged tree already built): the MSM's
# default builds (msm_builds.PRODUCT_ABI: G1 "mixed", G2 "value"; G2's segments in blocks of 128) beside
# the by-reference build main had ("ref") and the even/odd product's builds ("eo", "mixed_eo": not
# yet measured in the MSM), every combination over the same data with its result compared
# ("result": same / DIFFERS), at 2^16, 2^20 and 2^24, G1 on both curves and BN254 G2.
# From the repo root:  bash perf/h15acc_final.sh   ($OUT/h15acc_msm.json and .log; a summary on stdout)
set -o pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
timeout ${T_FINAL:-55} python3 perf/msm.py --curves bn128,bls12381 --g2 --sizes ${SIZES:-16,20,24} --repeats 5 \
  --combos ref:direct,default:direct,eo:direct,mixed_eo:direct --json "$out/h15acc_msm.json" \
  > "$out/h15acc_msm.log" 2>&1
rc=$?
python3 - "$out/h15acc_msm.log" <<'PY'
import ast, sys
rows = [ast.literal_eval(l) for l in open(sys.argv[1]) if l.startswith("{'curve'")]
print("MSM ms (CUDA events), one line a group and size: ABI ms [result]")
for key in dict.fromkeys((r["curve"], r["group"], r["log2 n"]) for r in rows):
    got = [r for r in rows if (r["curve"], r["group"], r["log2 n"]) == key]
    print(*key, " ".join(f"{r['abi']} {r['ms']}{'' if r['result'] == 'same' else ' DIFFERS'}" for r in got))
PY
exit $rc
