#!/usr/bin/env bash
# Session 34, call 8 (carry [".whl", ".kcache"]): a lone proof's work queues with every module byte-compiled,
# runs 0.5 s apart, in turns: 2 against 1 at the 2^14 domain, 4 / 2 / 1 at the 2^20 domain.
#   OUT=/tmp/out bash perf/s34h_h200.sh
set -u
. perf/s31_env.sh
byte_compile_into /tmp/pyc
export PYTHONPYCACHEPREFIX=/tmp/pyc
python3 perf/cli_start.py --runs 1 --workdir /tmp/cs 2>&1 | grep -E "^\| (python|prove)"
python3 perf/cli_start.py --runs 1 --domain-log 20 --workdir /tmp/cs20 2>&1 | grep -E "^\| (prove)"
echo "== $(date +%T) 2^14 domain, in turns, 0.5 s apart: 2 / 1 work queues"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --gap 0.5 --out /tmp/ab \
  q2=.:CUDA_DEVICE_MAX_CONNECTIONS=2 q1=.:CUDA_DEVICE_MAX_CONNECTIONS=1 2>&1 | grep -E "^\| (wall|interp|wait|device|prove|load key|kernel) "
echo "== $(date +%T) 2^20 domain, in turns, 0.5 s apart: 4 / 2 / 1 work queues"
python3 perf/cli_ab.py --zkey /tmp/cs20/bench.zkey --wtns /tmp/cs20/bench.wtns --runs 7 --gap 0.5 --out /tmp/ab20 \
  q4=. q2=.:CUDA_DEVICE_MAX_CONNECTIONS=2 q1=.:CUDA_DEVICE_MAX_CONNECTIONS=1 2>&1 | head -30
echo "== $(date +%T) done"
