#!/usr/bin/env bash
# (A record of one call at the commit perf/RESULTS.md "Session 26" names; GROTH16_FINAL_SPLIT and
# GROTH16_FINAL_WIDE were removed after it: set now, they change nothing.)
# Session 26: throughput at the 2^14 domain with the final phase on six warps and on four (GROTH16_FINAL_WIDE),
# alternating, twice (perf/sweep.py, 480 proofs, 32 in flight, 1 and 2 slots, every proof checked on the
# device), and the host's split of one proof (perf/host_split.py) for the host's speed in this call.
#   OUT=/tmp/out bash perf/s26e_h200.sh      (carry .whl, .kcache)
set -u
GPU_ENV_CURVES=bn128 . scripts/gpu_env.sh || exit 2
K=/tmp/s26e; mkdir -p "$K"
python3 -m engine bench-circuit --constraints 8189 --curve bn128 --quiet $K/k >/dev/null 2>&1
python3 -m engine setup --backend gpu $K/k/bench.r1cs $K/k/bench.zkey --quiet >/dev/null 2>&1
timeout 20 python3 perf/host_split.py --zkey $K/k/bench.zkey --wtns $K/k/bench.wtns 2>&1 | tail -3
for round in 1 2; do
  for w in 1 0; do
    echo "== round $round GROTH16_FINAL_WIDE=$w"
    GROTH16_FINAL_WIDE=$w timeout 30 python3 perf/sweep.py --backend gpu --zkey $K/k/bench.zkey --wtns $K/k/bench.wtns \
      --proofs 480 --concurrency 32 --slots 1,2 --modes split --no-plots --out $K/s_${round}_$w | grep "^| split"
  done
done
