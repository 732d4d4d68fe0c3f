#!/usr/bin/env bash
# Session 34, call 4 (carry [".whl", ".kcache"]): where a cold CLI proof's kernel loading falls: the CUDA driver's
# lazy module loading (the default) against eager, in turns (perf/cli_ab.py), every stage printed.
#   OUT=/tmp/out bash perf/s34d_h200.sh
set -u
. perf/s31_env.sh
python3 perf/cli_start.py --runs 1 --workdir /tmp/cs 2>&1 | grep -E "^\| (python|prove)"
echo "== $(date +%T) in turns: lazy (default) / eager module loading"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --out /tmp/ab \
  lazy=. eager=.:CUDA_MODULE_LOADING=EAGER 2>&1
echo "== $(date +%T) done"
