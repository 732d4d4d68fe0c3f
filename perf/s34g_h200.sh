#!/usr/bin/env bash
# Session 34, call 7 (carry [".whl", ".kcache"]): the cold CLI with every module byte-compiled (numpy's too, in a
# PYTHONPYCACHEPREFIX: the image's numpy has no bytecode and may write none), runs 0.5 s apart: the work queues of
# a lone proof's context (CUDA_DEVICE_MAX_CONNECTIONS 4, the default, against 2 and 1), in turns.
#   OUT=/tmp/out bash perf/s34g_h200.sh
set -u
. perf/s31_env.sh
byte_compile_into /tmp/pyc
export PYTHONPYCACHEPREFIX=/tmp/pyc
python3 perf/cli_start.py --runs 1 --workdir /tmp/cs 2>&1 | grep -E "^\| (python|prove)"
echo "== $(date +%T) in turns, 0.5 s apart: 4 / 2 / 1 work queues"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --gap 0.5 --out /tmp/ab \
  q4=. q2=.:CUDA_DEVICE_MAX_CONNECTIONS=2 q1=.:CUDA_DEVICE_MAX_CONNECTIONS=1 2>&1 | head -24
echo "== $(date +%T) the same, back to back (no gap): 4 / 2"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 7 --out /tmp/ab \
  q4=. q2=.:CUDA_DEVICE_MAX_CONNECTIONS=2 2>&1 | head -6
echo "== $(date +%T) done"
