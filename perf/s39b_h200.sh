#!/usr/bin/env bash
# Session 39, call 2 (carry [".whl", ".kcache"]): the C2 job under 16 GiB with smaller chunks and more proofs
# computing at once (2^20-wire chunks: both staging buffers over a and b, 2.4 GiB a proof), the defaults again
# (with the pool's reserved peak); the 2^24-constraint BN254 key under 16 GiB and on the whole H200 (issue 18's
# <= 2x), as at stop 27 (perf/c2.py --partitions 1 --jobs 2 --concurrency 1).
#   OUT=/tmp/out bash perf/s39b_h200.sh
set -u
. perf/s31_env.sh
bench_key_b24bls 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1 &
blspid=$!
( python3 -m engine bench-circuit --constraints 16777216 --curve bn128 --quiet /tmp/b24bn &&
  python3 -m engine setup --backend gpu /tmp/b24bn/bench.r1cs /tmp/b24bn/bench.zkey --quiet 2>/dev/null &&
  echo "2^24 BN254 key made" ) 2>&1 | tail -1 &
bnpid=$!
wait $blspid
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
c2() {  # label, then c2.py's flags
  local label=$1; shift
  echo "== $(date +%T) C2 16 GiB: $label"
  timeout 150 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs 3 --concurrency 2 --budgets 16GiB \
    --synthesis-workers 8 --proof-dir $OUT/c2_$label --json $OUT/c2.jsonl "$@" 2>&1 | tail -1
}
c2 slots2_chunk20 --modes split --compute-slots 2 --host-chunk 1048576
c2 slots3_chunk20 --modes split --compute-slots 3 --host-chunk 1048576
c2 auto --modes split
wait $bnpid
for budget in 16GiB whole; do
  echo "== $(date +%T) 2^24 BN254, $budget"
  timeout 150 python3 perf/c2.py --zkey /tmp/b24bn/bench.zkey --wtns /tmp/b24bn/bench.wtns --partitions 1 --jobs 2 \
    --concurrency 1 --budgets $budget --modes split --proof-dir $OUT/bn24_$budget --json $OUT/bn24.jsonl 2>&1 | tail -1
done
tar czf $OUT/all.tgz -C $OUT $(cd $OUT && ls -d c2_* bn24_* 2>/dev/null) 2>/dev/null
echo "== $(date +%T) done"
