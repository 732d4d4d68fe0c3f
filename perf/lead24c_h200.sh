#!/usr/bin/env bash
# Lead, 2026-12-02: the small proof's three streams against the one-stream path (GROTH16_B2_BESIDE=0), same
# keys, same call: warm proofs (perf/prove.py, BN254 2^13 and 2^16) and throughput (perf/sweep.py, verification
# on, split locking, 1 and 2 slots: 2^14 domain 480 proofs, 2^16 domain 256 proofs), each setting twice, alternating.
# Carry [".whl", ".kcache"].   OUT=/tmp/o bash perf/lead24c_h200.sh
set -u
W=/tmp/l24c; R=$OUT; mkdir -p $W
. scripts/gpu_env.sh || exit 2
export GROTH16_KEY_CACHE=$W/kc
for c in 8189 32765; do
  d=$W/b$c; python3 -m engine bench-circuit --constraints $c --curve bn128 --quiet $d >/dev/null &&
    python3 -m engine setup --backend gpu $d/bench.r1cs $d/bench.zkey --quiet 2>/dev/null
done
for round in 1 2; do
  for b in 1 0; do
    echo "== round $round, GROTH16_B2_BESIDE=$b"
    GROTH16_B2_BESIDE=$b timeout 40 python3 perf/prove.py --files $W/b8189/bench.zkey $W/b8189/bench.wtns --backend gpu \
      --repeats 9 2>&1 | grep "^| bn128"
    GROTH16_B2_BESIDE=$b timeout 30 python3 perf/prove.py --files $W/b32765/bench.zkey $W/b32765/bench.wtns --backend gpu \
      --repeats 9 2>&1 | grep "^| bn128"
    for c in 8189:480 32765:256; do
      GROTH16_B2_BESIDE=$b timeout 40 python3 perf/sweep.py --backend gpu --zkey $W/b${c%:*}/bench.zkey \
        --wtns $W/b${c%:*}/bench.wtns --proofs ${c#*:} --concurrency 32 --slots 1,2 --modes split --no-plots \
        --out $W/s_${c%:*}_${b}_${round} 2>&1 | grep "^| split"
    done
  done
done
