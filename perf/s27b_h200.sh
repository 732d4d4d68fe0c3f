#!/usr/bin/env bash
# Session 27's second measuring call (checkout root, carry [".whl", ".kcache"]): the host's cost of a launch
# before and after driver.launch's packed arguments (perf/launch_overhead.py); the GPU tests that run every
# kernel and the proof's tail; the small proofs with the products beside, queued in the order of their chains,
# and without (GROTH16_PRODUCTS_BESIDE=1 / 0, alternating, twice, perf/prove.py --files, medians of 9, BN254
# 2^13 and 2^16 constraints); the 2^13 proof on one time line; B2's MSM phase by phase at the 2^14 domain's
# size (perf/msm.py --breakdown); throughput at the 2^14 domain (perf/sweep.py, 480 proofs, 32 in flight) with
# the products beside and without.
#   OUT=/tmp/out bash perf/s27b_h200.sh
set -u
W=${W:-/tmp/fin}
. scripts/gpu_env.sh || exit 2
timeout 30 python3 perf/launch_overhead.py 2>&1 | tail -14
timeout 230 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_epilogue.py tests/test_gpu_pipeline.py \
  tests/test_gpu_kernels.py tests/test_gpu_batch.py 2>&1 | grep -E "^FAILED|^E  |passed|failed|error" | head -30
timeout 90 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| bn128"
for round in 1 2; do
  for p in 1 0; do
    for k in 13 16; do
      d=$W/pp/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
      echo "== round $round GROTH16_PRODUCTS_BESIDE=$p 2^$k"
      GROTH16_PRODUCTS_BESIDE=$p timeout 15 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" \
        --backend gpu --repeats 9 2>&1 | grep "^| curve\|^| bn128"
    done
  done
done
d=$W/pp/bn128_2^13
timeout 15 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -30
timeout 40 python3 perf/msm.py --sizes 13 --curves bn128 --g2 --breakdown --repeats 5 2>&1 | tail -24
for p in 1 0; do
  echo "== sweep GROTH16_PRODUCTS_BESIDE=$p"
  GROTH16_PRODUCTS_BESIDE=$p timeout 40 python3 perf/sweep.py --backend gpu --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" \
    --proofs 480 --concurrency 32 --slots 1 --modes split --no-plots --out "$W/s14_$p" 2>&1 | grep -A3 '^| mode'
done
