#!/usr/bin/env bash
# Session 26's review calls: after a kernel change of the review, the GPU tests of everything that runs a
# final phase, and the 2^13 proof's final phase alone and in the proof (perf/final_phase.py).
#   OUT=/tmp/out bash perf/s26f_h200.sh
set -u
W=${W:-/tmp/fin}
. scripts/gpu_env.sh || exit 2
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_epilogue.py tests/test_gpu_pairing.py \
  tests/test_gpu_batch.py tests/test_gpu_pipeline.py tests/test_gpu_tail_fake.py 2>&1 | grep -E "^FAILED|passed|failed|error" | tail -8
timeout 40 python3 perf/prove.py --log-constraints 13 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| bn128"
timeout 15 python3 perf/final_phase.py --zkey "$W/pp/bn128_2^13/bench.zkey" --wtns "$W/pp/bn128_2^13/bench.wtns" \
  --repeats 9 2>&1 | tail -9
