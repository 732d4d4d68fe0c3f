#!/usr/bin/env bash
# Session 37, call 7 (carry [".whl", ".kcache"]): the C2 job, 2 jobs in flight, with 1 and 2 compute slots (two proofs'
# GPU work enqueued at once) in turns; the 2^24 BLS12-381 key remade if the machine lost it.
#   OUT=/tmp/out bash perf/s37f_h200.sh
set -u
. perf/s31_env.sh
bench_key_b24bls 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
for slots in 2 1 2; do
  echo "== $(date +%T) C2 10 x 2^24 BLS12-381, whole H200: 2 in flight, 4 jobs, $slots compute slots"
  timeout 150 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs 4 --concurrency 2 --budgets whole \
    --modes split --synthesis-workers 8 --compute-slots $slots --proof-dir $OUT/c2_$slots --json $OUT/c2.jsonl \
    2>&1 | tail -1
done
echo "== $(date +%T) done"
