#!/usr/bin/env bash
# Session 42, call 1 (carry [".whl", ".kcache"]): issue 15's rows on BN254's new G1 default (split_inline) —
# G1 2^20/2^24/2^26 with phases, G2 2^24, 10 x 2^20 in one pass — and issue 18's 2^24-constraint BN254 key under
# 16 GiB and on the whole H200 (perf/c2.py --partitions 1, as in session 39's call 2).
#   OUT=/tmp/out bash perf/s42a_h200.sh
set -u
. perf/s31_env.sh
( python3 -m engine bench-circuit --constraints 16777216 --curve bn128 --quiet /tmp/b24bn &&
  python3 -m engine setup --backend gpu /tmp/b24bn/bench.r1cs /tmp/b24bn/bench.zkey --quiet 2>/dev/null &&
  echo "2^24 BN254 key made (2^25 domain, as in session 39)" ) 2>&1 | tail -1 &
bnpid=$!
echo "== $(date +%T) BN254 G1 2^20/2^24/2^26, phases"
timeout 150 python3 perf/msm.py --sizes 20,24,26 --curves bn128 --breakdown --repeats 5 --json $OUT/g1.json 2>&1 |
  tail -12
echo "== $(date +%T) BN254 G2 2^24; 10 x 2^20 G1 in one pass"
timeout 100 python3 perf/msm.py --sizes 24 --curves bn128 --g2-only --repeats 5 2>&1 | tail -4
timeout 100 python3 perf/msm.py --sizes 20 --curves bn128 --batch 10 --repeats 5 2>&1 | tail -5
wait $bnpid
for budget in 16GiB whole; do
  echo "== $(date +%T) 2^24 BN254, $budget"
  timeout 150 python3 perf/c2.py --zkey /tmp/b24bn/bench.zkey --wtns /tmp/b24bn/bench.wtns --partitions 1 --jobs 2 \
    --concurrency 1 --budgets $budget --modes split --proof-dir $OUT/bn24_$budget --json $OUT/bn24.jsonl 2>&1 | tail -1
done
python3 -m engine export-vkey /tmp/b24bn/bench.zkey $OUT/bn24-vkey.json 2>&1 | tail -1
tar czf $OUT/all.tgz -C $OUT $(cd $OUT && ls -d bn24_* bn24-vkey.json 2>/dev/null) 2>/dev/null
echo "== $(date +%T) done"
