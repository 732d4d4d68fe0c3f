#!/usr/bin/env bash
# Session 37, call 3 (carry [".whl", ".kcache"]): where the binned sort starts to pay (2^16-2^18, direct against
# binned+regroup), then the C2 job on the final sort with its ramp and drain: 1 job in flight with 4 and 8
# synthesis workers, 2 jobs in flight with 8.  The 2^24 BLS12-381 key is remade if the machine lost it.
#   OUT=/tmp/out bash perf/s37c_h200.sh
set -u
. perf/s31_env.sh
bench_key_b24bls 2>&1 | grep -v "DEVELOPMENT KEY" | tail -2
echo "== $(date +%T) 2^16-2^18: direct against binned+regroup"
timeout 100 python3 perf/msm.py --sizes 16,17,18 --curves bn128,bls12381 --g2 --g2-curves bn128,bls12381 \
  --sort direct,regroup --repeats 7 --json $OUT/msm_16.json 2>&1 | grep -v "^{" | sed -n '/DIFFERS\|rror/p'
python3 - $OUT/msm_16.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    print(r["curve"], r["group"], r["log2 n"], r["c"], r["sort"], r["ms"])
PY
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
for v in "1 2 4" "1 2 8" "2 4 8"; do set -- $v
  echo "== $(date +%T) C2 10 x 2^24 BLS12-381, whole H200: $1 in flight, $2 jobs, $3 synthesis workers"
  timeout 150 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs $2 --concurrency $1 --budgets whole \
    --modes split --synthesis-workers $3 --proof-dir $OUT/c2_$1_$3 --json $OUT/c2.jsonl 2>&1 | tail -3
done
echo "== $(date +%T) done"
