#!/usr/bin/env bash
# Session 37, call 7 (carry [".whl", ".kcache"]): the C2 job, 2 jobs in flight, with 1 and 2 compute slots (two proofs'
# GPU work enqueued at once) in turns; the 2^24 BLS12-381 key remade if the machine lost it.
#   OUT=/tmp/out bash perf/s37f_h200.sh
set -u
. perf/s31_env.sh
if [ ! -s /tmp/b24bls/bench.zkey ]; then
  ( python3 -m engine bench-circuit --constraints $(( (1 << 24) - 3 )) --curve bls12381 --quiet /tmp/b24bls &&
    python3 -m engine setup --backend gpu /tmp/b24bls/bench.r1cs /tmp/b24bls/bench.zkey --quiet 2>/dev/null &&
    rm -f /tmp/b24bls/bench.r1cs && echo "2^24 BLS12-381 key made" ) > /tmp/b24bls.log 2>&1
  grep -v "DEVELOPMENT KEY" /tmp/b24bls.log | tail -1
fi
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
for slots in 2 1 2; do
  echo "== $(date +%T) C2 10 x 2^24 BLS12-381, whole H200: 2 in flight, 4 jobs, $slots compute slots"
  timeout 150 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs 4 --concurrency 2 --budgets whole \
    --modes split --synthesis-workers 8 --compute-slots $slots --proof-dir $OUT/c2_$slots --json $OUT/c2.jsonl \
    2>&1 | tail -1
done
echo "== $(date +%T) done"
