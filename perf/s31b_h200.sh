#!/usr/bin/env bash
# Session 31, call 2 (carry [".whl", ".kcache", ".wt/base"]; .wt/base = `git archive b10075e engine cuda_kernels
# scheduler cli.py`): the cold CLI of this tree beside the last session's in turns (perf/cli_ab.py), with 8, 4 and 2
# work queues; perf/cli_start.py's floor rows and stages; every GPU test; the proofs come back for snarkjs.
#   OUT=/tmp/out bash perf/s31b_h200.sh
set -u
. perf/s31_env.sh
cold_cli_stages
echo "== $(date +%T) in turns: the last session's tree, this one, this one with 4 and 2 queues"
PYTHONPATH=/tmp/site python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 9 \
  base=.wt/base new=. new4=.:CUDA_DEVICE_MAX_CONNECTIONS=4 new2=.:CUDA_DEVICE_MAX_CONNECTIONS=2 2>&1
cp /tmp/cli-ab/new2-proof.json $OUT/q2-proof.json; cp /tmp/cli-ab/new2-public.json $OUT/q2-public.json
echo "== $(date +%T) numpy's import by its BLAS threads (fresh process each, wall ms)"
for v in "" 1 "" 1 "" 1; do
  OPENBLAS_NUM_THREADS=$v python3 -c "import time, subprocess, sys, os
t = time.perf_counter(); subprocess.run([sys.executable, '-c', 'import numpy'], check=True)
print('OPENBLAS_NUM_THREADS=%s' % os.environ.get('OPENBLAS_NUM_THREADS', ''), '%.1f' % ((time.perf_counter() - t) * 1e3))"
done
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -c 2500 $OUT/log
echo "== $(date +%T) the CLI's own tests over the real driver and NVRTC (fresh interpreters)"
python3 -m pytest -q -rf tests/test_cli_device_start.py tests/test_cli_exit.py tests/test_cli_interrupt_edges.py \
  tests/test_cuda_build.py -k "not every_kernel" -p no:cacheprovider 2>&1 | tail -4
echo "== $(date +%T) done"
