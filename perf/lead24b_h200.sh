#!/usr/bin/env bash
# Lead, 2026-12-02: a small proof on three streams (B2 beside; A, B1, C first; the mid phase split), IC tables.
# The tail's and the pipeline's GPU tests on both curves, a warm proof on one time line at the 2^14 and 2^17
# domains, warm proofs (BN254 2^13-2^20, BLS12-381 2^16), the sudoku examples (16 public inputs: no IC tables)
# for snarkjs.  Carry [".whl", ".kcache-lead"].   OUT=/tmp/o bash perf/lead24b_h200.sh
set -u
W=/tmp/l24b; R=$OUT; mkdir -p $W
GPU_ENV_KCACHE=.kcache-lead GPU_ENV_KNAME=lead . scripts/gpu_env.sh || exit 2
export GROTH16_KEY_CACHE=$W/kc
timeout 170 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_pairing.py tests/test_gpu_epilogue.py \
  tests/test_gpu_tail_fake.py tests/test_gpu_batch.py tests/test_gpu_pipeline.py tests/test_gpu_failure_paths.py \
  tests/test_gpu_guard.py tests/test_gpu_witness_range.py > $R/tests.log 2>&1 &
tp=$!
for c in 8189 65535; do
  d=$W/b$c; python3 -m engine bench-circuit --constraints $c --curve bn128 --quiet $d &&
    python3 -m engine setup --backend gpu $d/bench.r1cs $d/key.zkey --quiet 2>/dev/null
done
for c in 8189 65535; do
  d=$W/b$c
  timeout 40 python3 perf/proof_timeline.py --zkey $d/key.zkey --wtns $d/bench.wtns --repeats 15 2>&1 | tail -22
done
timeout 120 python3 perf/prove.py --log-constraints 13,16,18,20 --curves bn128 --backend gpu --repeats 7 --workdir $W/pp 2>&1 | tail -4
timeout 60 python3 perf/prove.py --log-constraints 16 --curves bls12381 --backend gpu --repeats 5 --workdir $W/pp 2>&1 | tail -3
for c in bn128 bls12381; do
  python3 -m engine prove examples/$c/sudoku.zkey examples/$c/sudoku.wtns $R/sudoku-$c-proof.json $R/sudoku-$c-public.json \
    --backend gpu --quiet; echo "sudoku $c (16 public inputs): exit $?"
done
wait $tp; tail -1 $R/tests.log; grep -h "^FAILED\|^ERROR" $R/tests.log
