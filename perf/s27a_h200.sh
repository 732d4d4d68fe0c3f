#!/usr/bin/env bash
# Session 27's first measuring call (checkout root, carry [".whl", ".kcache"] built by scripts/carry_kernels.py):
# the GPU tests of what the products beside touch (proof_streams.products_beside: s·A and r·B1 as MSMs of s·w over
# A and r·w over B1 beside the others, the front and H on a stream of their own), then the small proofs with the
# products beside and without (GROTH16_PRODUCTS_BESIDE=1 / 0), same keys, alternating, twice (perf/prove.py
# --files, medians of 9, BN254 2^13 and 2^16 constraints), and the 2^13 proof on one time line with them.
#   OUT=/tmp/out bash perf/s27a_h200.sh
set -u
W=${W:-/tmp/fin}
. scripts/gpu_env.sh || exit 2
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_epilogue.py tests/test_gpu_pipeline.py \
  tests/test_gpu_kernels.py::test_scale_pair_matches_python tests/test_gpu_batch.py 2>&1 | grep -E "^FAILED|^E  |passed|failed|error" | head -30
timeout 90 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| curve\|^| bn128"
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
