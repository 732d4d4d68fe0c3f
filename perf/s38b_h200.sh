#!/usr/bin/env bash
# Session 38, call 2 (carry [".whl", ".kcache"]): the engine's own choice of compute slots (compute_slots "auto",
# now the default): the C2 job (10 x 2^24 BLS12-381, whole H200) with the defaults, twice; then jobs of 10
# partitions at BN254 2^16 and 2^18 with one slot and with auto, in turns (where sharing measured level before).
#   OUT=/tmp/out bash perf/s38b_h200.sh
set -u
. perf/s31_env.sh
for spec in "bn128 16 40" "bn128 18 24"; do
  set -- $spec
  D=/tmp/k_$1_$2
  echo "== $(date +%T) key $1 2^$2"
  bench_key "$1" "$2" "$D" 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1
  for slots in 1 auto 1 auto; do
    echo "== $(date +%T) $1 2^$2: 10 partitions, 2 in flight, $3 jobs, compute slots $slots"
    timeout 60 python3 perf/c2.py --zkey "$D/bench.zkey" --wtns "$D/bench.wtns" --partitions 10 --jobs "$3" \
      --concurrency 2 --budgets whole --modes split --synthesis-workers 8 --compute-slots $slots \
      --json "$OUT/small.jsonl" 2>&1 | tail -1
  done
done
bench_key_b24bls 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
for run in 1 2; do
  [ $SECONDS -gt 450 ] && { echo "(out of time: skipped)"; break; }
  echo "== $(date +%T) C2 10 x 2^24 BLS12-381, whole H200: 2 in flight, 4 jobs, the engine's defaults (run $run)"
  timeout 140 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs 4 --concurrency 2 --budgets whole \
    --modes split --synthesis-workers 8 --proof-dir $OUT/c2_auto --json $OUT/c2.jsonl 2>&1 | tail -1
done
echo "== $(date +%T) done"
