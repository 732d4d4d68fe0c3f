#!/usr/bin/env bash
# Session 27's last measuring call (checkout root, carry [".whl", ".kcache"]): a proof counts as alone for the
# products beside when no other proof of its backend is staged or in flight (proof_streams.products_now,
# waiting.Flight.idle; the closing call's default counted in-flight proofs only, and its sweep made 499 proofs/s
# against 673 without the products).  Throughput at the 2^14 domain (perf/sweep.py, 480
# proofs, 32 in flight, 1 and 2 slots) with the default and without the products; a lone proof, both ways; first the
# GPU tests of the tail and the pipeline over the lazily carved region.
#   OUT=/tmp/out bash perf/s27f_h200.sh
set -u
W=${W:-/tmp/fin}
. scripts/gpu_env.sh || exit 2
timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_epilogue.py tests/test_gpu_pipeline.py \
  tests/test_gpu_failure_paths.py 2>&1 | grep -E "^FAILED|^E  |passed|failed|error" | head -20
timeout 30 python3 perf/prove.py --log-constraints 13 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| bn128"
d=$W/pp/bn128_2^13
for p in default 0; do
  if [ $p = default ]; then unset GROTH16_PRODUCTS_BESIDE; else export GROTH16_PRODUCTS_BESIDE=$p; fi
  echo "== GROTH16_PRODUCTS_BESIDE=$p"
  timeout 12 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" --backend gpu --repeats 9 2>&1 | grep "^| bn128"
  timeout 30 python3 perf/sweep.py --backend gpu --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --proofs 480 \
    --concurrency 32 --slots 1,2 --modes split --no-plots --out "$W/s27f_$p" 2>&1 | grep "^| split"
done
