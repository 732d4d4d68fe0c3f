#!/usr/bin/env bash
# Session 38, call 6 (carry [".whl", ".kcache"]): the C2 job with one job in flight and the engine's defaults (two
# compute slots, the .wtns values sent into the witness's block by the kernel: synth_pool.FileSegment), then two in
# flight again; the engine's GPU tests over the synthesis pool; the pool's .wtns read against the old task.
#   OUT=/tmp/out bash perf/s38e_h200.sh
set -u
. perf/s31_env.sh
bench_key_b24bls 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1 &
keypid=$!
echo "== $(date +%T) GPU engine tests"
python3 -m pytest -q -p no:cacheprovider tests/test_gpu_engine.py tests/test_scheduler_synth_pool.py 2>&1 | tail -2
wait $keypid
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
echo "== $(date +%T) the pool's .wtns read, 2^24 BLS12-381 (512 MiB)"
PYTHONPATH=perf:$PYTHONPATH python3 perf/wtns_pool.py $W --repeats 2 2>&1 | tail -4
for conc in 1 2; do
  echo "== $(date +%T) C2 10 x 2^24 BLS12-381, whole H200: $conc in flight, 3 jobs, the engine's defaults"
  timeout 120 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs 3 --concurrency $conc --budgets whole \
    --modes split --synthesis-workers 8 --proof-dir $OUT/c2_$conc --json $OUT/c2.jsonl 2>&1 | tail -1
done
echo "== $(date +%T) done"
