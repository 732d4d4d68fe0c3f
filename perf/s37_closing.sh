#!/usr/bin/env bash
# Session 37's closing call (carry [".whl", ".kcache"]), the final code: every GPU test and the snarkjs proofs
# (scripts/final_h200.sh STEPS="tests"), the 2^24 BLS12-381 bench key made beside them if the machine lost it (bench_key_b24bls); then
# with nothing beside: that key's warm proof stage by stage and the C2 job on the whole H200 with 1 and 2 jobs in
# flight, its last proof and vkey into $OUT for snarkjs; BN254 G2 at 2^24 and a batch of ten 2^20 vectors.
#   OUT=/tmp/out bash perf/s37_closing.sh
set -u
( . perf/s31_env.sh > /dev/null 2>&1 && bench_key_b24bls ) > /tmp/b24bls.log 2>&1 &
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh 2>&1 | grep -E "^group|FAILED|ERROR|exit"
wait
grep -v "DEVELOPMENT KEY" /tmp/b24bls.log | tail -2
. perf/s31_env.sh > /dev/null 2>&1
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
echo "== $(date +%T) the 2^24 BLS12-381 warm proof, stage by stage"
timeout 100 python3 perf/prove.py --files $Z $W --backend gpu --repeats 3 --workdir /tmp/pb24 \
  --json $OUT/prove_b24bls.json 2>&1 | tail -3
for v in "1 2" "2 4"; do set -- $v
  echo "== $(date +%T) C2 10 x 2^24 BLS12-381, whole H200: $1 in flight, $2 jobs, 8 synthesis workers"
  timeout 150 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs $2 --concurrency $1 --budgets whole \
    --modes split --synthesis-workers 8 --proof-dir $OUT/c2_$1 --json $OUT/c2.jsonl 2>&1 | tail -2
done
echo "== $(date +%T) BN254 G2 2^24, and ten 2^20 vectors in one pass against one"
timeout 120 python3 perf/msm.py --sizes 24 --g2-only --g2-curves bn128 --repeats 3 --json $OUT/msm_g2.json 2>&1 \
  | grep -v "^{" | sed -n '/^| curve/,/^$/p;/DIFFERS\|rror/p'
timeout 120 python3 perf/msm.py --sizes 20 --curves bn128 --batch 10 --repeats 5 --json $OUT/msm_batch.json 2>&1 \
  | grep -v "^{" | sed -n '/^| curve/,/^$/p;/DIFFERS\|rror/p'
echo "== $(date +%T) done"
