#!/usr/bin/env bash
# Session 36, call 2 (carry [".whl", ".kcache", ".sppark"]): the narrow NTT passes (two elements a thread) checked
# against the wide ones and the CPU, then timed against them in turns (perf/ntt.py --narrow-max-log 0,20) and
# against sppark's forward NTT built and run in the same call (perf/sppark_ntt.cu), both curves.
#   OUT=/tmp/out bash perf/s36b_h200.sh
set -u
. perf/s31_env.sh
build_sppark
echo "== $(date +%T) NTT GPU tests: the narrow and wide passes, the kernels' NTT tests, the plan"
python3 -m pytest -q -p no:cacheprovider tests/test_gpu_ntt_passes.py tests/test_gpu_plan.py \
  "tests/test_gpu_kernels.py" -k "ntt or narrow or pass or twiddle" 2>&1 | tail -4
echo "== $(date +%T) ours: wide (0) and narrow (20) in turns, queued ms is the column to compare"
python3 perf/ntt.py --sizes 10,12,14,16,17,18,19,20 --curves bn128,bls12381 --repeats 9 --narrow-max-log 0,20 \
  --json $OUT/ntt_ab.json 2>&1 | grep -v "^{"
wait
for f in BN254 BLS12_381; do
  echo "== $(date +%T) sppark, $f Fr, forward (ms)"
  /tmp/sppark_ntt_$f 16 20 9 2>&1 || tail -5 /tmp/nvcc_$f.log
done
echo "== $(date +%T) ours again, the other order (narrow first)"
python3 perf/ntt.py --sizes 16,17,18,19,20 --curves bn128,bls12381 --repeats 9 --narrow-max-log 20,0 2>&1 | grep -v "^{"
echo "== $(date +%T) done"
