#!/usr/bin/env bash
# Session 27's fourth measuring call (checkout root, carry [".whl", ".kcache"]): the witness MSMs' window at a
# 2^14-domain proof's size: G1 (one MSM and A, B1, C as one launch set) and G2 at 2^13 points, c = 8 against the
# planner's 9 (perf/msm.py, random scalars and a 0/1 witness's shares), then the 2^13-constraint proof with its
# witness plan bounded to c = 8 (GROTH16_WITNESS_MAX_WINDOW=8) against the planner's, alternating, twice
# (perf/prove.py --files, medians of 9), the products beside (the default) and without; the time line at c = 8.
#   OUT=/tmp/out bash perf/s27d_h200.sh
set -u
W=${W:-/tmp/fin}
GPU_ENV_CURVES=bn128 . scripts/gpu_env.sh || exit 2
timeout 30 python3 perf/prove.py --log-constraints 13 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| bn128"
d=$W/pp/bn128_2^13
for round in 1 2; do
  for c in 8 planner; do
    for p in default 0; do
      echo "== round $round window $c products $p"
      if [ $c = planner ]; then unset GROTH16_WITNESS_MAX_WINDOW; else export GROTH16_WITNESS_MAX_WINDOW=$c; fi
      if [ $p = default ]; then unset GROTH16_PRODUCTS_BESIDE; else export GROTH16_PRODUCTS_BESIDE=$p; fi
      timeout 12 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" --backend gpu --repeats 9 2>&1 \
        | grep "^| bn128"
    done
  done
done
unset GROTH16_PRODUCTS_BESIDE
export GROTH16_WITNESS_MAX_WINDOW=8
timeout 12 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -27
unset GROTH16_WITNESS_MAX_WINDOW
timeout 40 python3 perf/msm.py --sizes 13,14 --curves bn128 --g2 --window 8 --scalars random,witness:0.59,0.41 \
  --sets 3 --repeats 5 2>&1 | grep "^| bn128\|^| curve"
