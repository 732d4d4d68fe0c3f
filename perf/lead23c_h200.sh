#!/usr/bin/env bash
# Lead: after the stage's reorder (the witness up first, in parts behind its copy) and the lazily decoded
# MSM sums: the pipeline's GPU tests, the time line and host split at the 2^14 and 2^17 domains, warm
# proofs at 2^16.  Carry [".whl", ".kcache"].  OUT=/tmp/o bash perf/lead23c_h200.sh
set -u
W=/tmp/l23c; R=$OUT; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KEY_CACHE=$W/kc GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_pipeline.py tests/test_gpu_witness_range.py \
  tests/test_gpu_epilogue.py tests/test_gpu_failure_paths.py tests/test_gpu_guard.py > $R/tests.log 2>&1 &
tp=$!
for c in 8189 65535; do
  d=$W/b$c; python3 -m engine bench-circuit --constraints $c --curve bn128 --quiet $d &&
    python3 -m engine setup --backend gpu $d/bench.r1cs $d/key.zkey --quiet 2>/dev/null
done
wait $tp; tail -1 $R/tests.log; grep -h "^FAILED\|^ERROR" $R/tests.log
for c in 8189 65535; do
  d=$W/b$c
  timeout 40 python3 perf/proof_timeline.py --zkey $d/key.zkey --wtns $d/bench.wtns --repeats 15 2>&1 | tail -22
  timeout 30 python3 perf/host_split.py --zkey $d/key.zkey --wtns $d/bench.wtns --repeats 15 2>&1 | tail -3
done
timeout 60 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 9 --workdir $W/pp 2>&1 | tail -4
