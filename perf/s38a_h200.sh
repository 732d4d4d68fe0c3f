#!/usr/bin/env bash
# Session 38, call 1 (carry [".whl", ".kcache"]): jobs of 10 partitions, 2 jobs in flight, with 1 and 2 compute slots
# in turns (then auto, this tree's choice), at keys smaller than C2's (BN254 and BLS12-381 bench keys of 2^20 and 2^22 constraints, setup on the
# GPU): where two proofs computing at once pay, for the engine's own choice of compute slots.
#   OUT=/tmp/out bash perf/s38a_h200.sh
set -u
. perf/s31_env.sh
for spec in "bn128 20 8" "bls12381 20 8" "bn128 22 4" "bls12381 22 4"; do
  set -- $spec
  D=/tmp/k_$1_$2
  echo "== $(date +%T) key $1 2^$2"
  bench_key "$1" "$2" "$D" 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1
  for slots in 1 2 1 2 auto; do
    [ $SECONDS -gt 530 ] && { echo "(out of time: skipped)"; break; }
    echo "== $(date +%T) $1 2^$2: 10 partitions, 2 in flight, $3 jobs, $slots compute slots"
    timeout 110 python3 perf/c2.py --zkey "$D/bench.zkey" --wtns "$D/bench.wtns" --partitions 10 --jobs "$3" \
      --concurrency 2 --budgets whole --modes split --synthesis-workers 8 --compute-slots $slots \
      --json "$OUT/mid.jsonl" 2>&1 | tail -1
  done
done
echo "== $(date +%T) done"
