#!/usr/bin/env bash
# Session 31, call 3 (carry [".whl", ".kcache", ".wt/base"]; .wt/base = `git archive b10075e engine cuda_kernels
# scheduler cli.py`): cold CLI proofs in turns (perf/cli_ab.py) at the 2^14 domain, the last session's tree beside
# this one with 8, 4 and 2 work queues, and at 2^20 constraints this one with 8 and 2; every GPU test; the
# proofs come back for snarkjs.   OUT=/tmp/out bash perf/s31c_h200.sh
set -u
. perf/s31_env.sh
mkdir -p /tmp/k14 /tmp/k20
python3 -m engine bench-circuit --constraints 16381 --quiet /tmp/k14 && python3 -m engine setup --backend gpu --quiet \
  /tmp/k14/bench.r1cs /tmp/k14/bench.zkey 2>/dev/null
t=$(date +%s); python3 -m engine bench-circuit --constraints 1048573 --quiet /tmp/k20 &&
  python3 -m engine setup --backend gpu --quiet /tmp/k20/bench.r1cs /tmp/k20/bench.zkey 2>/dev/null
echo "2^20 bench circuit and setup $(( $(date +%s) - t )) s"
echo "== $(date +%T) in turns, 2^14 domain"
PYTHONPATH=/tmp/site python3 perf/cli_ab.py --zkey /tmp/k14/bench.zkey --wtns /tmp/k14/bench.wtns --runs 9 --out /tmp/ab14 \
  base=.wt/base new=.:CUDA_DEVICE_MAX_CONNECTIONS=8 new4=.:CUDA_DEVICE_MAX_CONNECTIONS=4 \
  new2=.:CUDA_DEVICE_MAX_CONNECTIONS=2 2>&1
python3 -m engine export-vkey /tmp/k14/bench.zkey $OUT/k14-vkey.json
for v in new new2; do cp /tmp/ab14/$v-proof.json $OUT/k14-$v-proof.json; cp /tmp/ab14/$v-public.json $OUT/k14-$v-public.json; done
echo "== $(date +%T) in turns, 2^20 constraints"
PYTHONPATH=/tmp/site python3 perf/cli_ab.py --zkey /tmp/k20/bench.zkey --wtns /tmp/k20/bench.wtns --runs 5 --out /tmp/ab20 \
  new=.:CUDA_DEVICE_MAX_CONNECTIONS=8 new2=.:CUDA_DEVICE_MAX_CONNECTIONS=2 2>&1
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -c 1500 $OUT/log
cli_own_tests
echo "== $(date +%T) done"
