#!/usr/bin/env bash
# Issue 18's measurements in one device call (after `. scripts/gpu_env.sh`), results under $OUT:
# GPU tests of the footprint and host tier, then 2^20 bench keys (BN254 and BLS12-381) proved
# under the whole H200 and under budgets scaled from the seeds' 16 GiB card (16 GiB at 2^24 is
# 1 GiB at 2^20), the host tier forced at a budget 3x below the whole-device key, and the
# C2 job shape (10 partitions per job), single against split locking.
#   OUT=/tmp/out bash perf/c2_h200.sh
set -u
W=${W:-/tmp/c2work}
LOG=$OUT/log
mkdir -p "$W" "$OUT/p"
step() { echo "== $(date +%T) $*" | tee -a "$LOG"; }

step "GPU tests"
timeout 80 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_host_tier.py tests/test_gpu_engine.py 2>&1 \
  | tail -25 | tee -a "$LOG"

for curve in bn128 bls12381; do
  step "bench circuit 2^20 $curve"
  t0=$(date +%s%N)
  python3 -m engine bench-circuit --constraints 1048576 --curve $curve "$W/$curve" --quiet 2>&1 | tail -2 | tee -a "$LOG"
  t1=$(date +%s%N)
  python3 -m engine setup --backend gpu "$W/$curve/bench.r1cs" "$W/$curve/bench.zkey" --quiet 2>&1 | tail -2 | tee -a "$LOG"
  t2=$(date +%s%N)
  echo "bench-circuit $(( (t1 - t0) / 1000000 )) ms, setup $(( (t2 - t1) / 1000000 )) ms" | tee -a "$LOG"
done

BN="--zkey $W/bn128/bench.zkey --wtns $W/bn128/bench.wtns"
step "BN254 2^20: whole H200 against the scaled 16 GiB budget (1 GiB), one-proof jobs"
timeout 45 python3 perf/c2.py $BN --partitions 1 --jobs 8 --concurrency 4 --budgets whole,1GiB --modes split \
  --proof-dir "$OUT/p" --json "$OUT/bn.jsonl" 2>&1 | tee -a "$LOG"
step "BN254 2^20: host tier forced at 2 GiB (the whole-device key is 3x that)"
timeout 30 python3 perf/c2.py $BN --partitions 1 --jobs 8 --concurrency 4 --budgets 2GiB --modes split --tier host \
  --json "$OUT/bn.jsonl" 2>&1 | tee -a "$LOG"

BLS="--zkey $W/bls12381/bench.zkey --wtns $W/bls12381/bench.wtns"
step "C2 shape, BLS12-381 2^20, 10 partitions per job"
timeout 60 python3 perf/c2.py $BLS --partitions 10 --jobs 2 --concurrency 2 --budgets whole,1GiB --modes split \
  --json "$OUT/c2.jsonl" 2>&1 | tee -a "$LOG"
timeout 35 python3 perf/c2.py $BLS --partitions 10 --jobs 2 --concurrency 2 --budgets 1GiB --modes single \
  --json "$OUT/c2.jsonl" 2>&1 | tee -a "$LOG"
step "done"
