#!/usr/bin/env bash
# Session 36's second closing call (carry [".whl", ".kcache"]), after the XYZZ pass's chunk followed the vector's own
# entries: every GPU test and the snarkjs proofs (scripts/final_h200.sh STEPS="tests"), a BLS12-381 bench circuit of
# 2^24 - 3 constraints and its key made beside them; then, with nothing beside: that key's warm proof stage by
# stage (perf/prove.py --files) and the C2 job on the whole H200 (perf/c2.py, 10 partitions, 1 job after its warm-up job, split), its
# last proof and vkey into $OUT for snarkjs.
#   OUT=/tmp/out bash perf/s36_closing2.sh
set -u
( . perf/s31_env.sh > /dev/null 2>&1
  python3 -m engine bench-circuit --constraints $(( (1 << 24) - 3 )) --curve bls12381 --quiet /tmp/b24bls &&
  python3 -m engine setup --backend gpu /tmp/b24bls/bench.r1cs /tmp/b24bls/bench.zkey --quiet 2>/dev/null &&
  rm -f /tmp/b24bls/bench.r1cs && echo "2^24 BLS12-381 key made" ) > /tmp/b24bls.log 2>&1 &
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh 2>&1 | grep -E "^group|FAILED|ERROR|exit"
wait
grep -v "DEVELOPMENT KEY" /tmp/b24bls.log | tail -2
. perf/s31_env.sh > /dev/null 2>&1
echo "== $(date +%T) the 2^24 BLS12-381 warm proof, stage by stage"
timeout 100 python3 perf/prove.py --files /tmp/b24bls/bench.zkey /tmp/b24bls/bench.wtns --backend gpu --repeats 3 \
  --workdir /tmp/pb24 --json $OUT/prove_b24bls.json 2>&1 | tail -3
echo "== $(date +%T) the C2 job, 10 x 2^24 BLS12-381, whole H200"
timeout 150 python3 perf/c2.py --zkey /tmp/b24bls/bench.zkey --wtns /tmp/b24bls/bench.wtns --partitions 10 --jobs 1 \
  --concurrency 1 --budgets whole --modes split --proof-dir $OUT/c2 --json $OUT/c2.jsonl 2>&1 | tail -8
echo "== $(date +%T) done"
