#!/usr/bin/env bash
# Session 26's diagnostic call: a small proof's tail phases inside the proof and again alone (perf/final_phase.py,
# BN254 2^13 and 2^16 constraints), beside perf/pairing_latency.py's chains.   OUT=/tmp/out bash perf/s26d_h200.sh
set -u
W=${W:-/tmp/fin}
. scripts/gpu_env.sh || exit 2
timeout 90 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| bn128"
for k in 13 16; do
  for b in 1 0; do
    echo "== 2^$k GROTH16_PI_B_BESIDE=$b"
    GROTH16_PI_B_BESIDE=$b timeout 30 python3 perf/final_phase.py --zkey "$W/pp/bn128_2^$k/bench.zkey" \
      --wtns "$W/pp/bn128_2^$k/bench.wtns" --repeats 9 2>&1 | tail -12
  done
done
timeout 60 python3 perf/pairing_latency.py --curves bn128 --iters 300 2>&1 | tail -24
