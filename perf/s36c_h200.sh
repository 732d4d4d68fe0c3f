#!/usr/bin/env bash
# Session 36, call 3 (carry [".whl", ".kcache", ".sppark"]): the narrow NTT passes with each step's twiddle loaded
# a step ahead: checked (against the wide passes and the CPU, and in whole proofs), timed against the wide passes
# in turns and against sppark built and run in the same call; small warm proofs with and without them, in turns.
#   OUT=/tmp/out bash perf/s36c_h200.sh
set -u
. perf/s31_env.sh
build_sppark
echo "== $(date +%T) NTT GPU tests (narrow against wide and the CPU, the kernels' NTT and proof tests, the plan)"
python3 -m pytest -q -p no:cacheprovider tests/test_gpu_ntt_passes.py tests/test_gpu_plan.py \
  tests/test_gpu_kernels.py -k "ntt or narrow or pass or twiddle or proof" 2>&1 | tail -3
ab() {  # perf/ntt.py in turns: $1 = the settings' order
  python3 perf/ntt.py --sizes 10,12,14,16,17,18 --curves bn128,bls12381 --repeats 9 --narrow-max-log $1 2>&1 |
    grep -E "^\| (bn|bls)" | awk -F'|' '{print $2 "|" $3 "|" $5 "|" $7}'
}
echo "== $(date +%T) ours, wide (0) then narrow (17): curve | log2 n | kind | queued ms"
ab 0,17
wait
for f in BN254 BLS12_381; do
  echo "== $(date +%T) sppark, $f Fr, forward (ms)"
  /tmp/sppark_ntt_$f 16 18 9 2>&1 | tail -3 || tail -5 /tmp/nvcc_$f.log
done
echo "== $(date +%T) ours, narrow (17) then wide (0)"
ab 17,0
echo "== $(date +%T) warm proofs, 2^13 and 2^16 constraints, default (narrow to 2^17) / wide, two rounds in turns"
for round in 1 2; do
  for setting in default 0; do
    extra=""; [ $setting = 0 ] && extra="--narrow-max-log 0"
    echo "-- round $round, $setting"
    python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 9 --workdir /tmp/pb $extra \
      2>&1 | grep -E "^\| bn128"
  done
done
echo "== $(date +%T) done"
