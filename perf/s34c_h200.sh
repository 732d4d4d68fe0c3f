#!/usr/bin/env bash
# Session 34, call 3 (carry [".whl", ".kcache", ".wt/base"]): at the final head, the GPU tests of this session's
# CLI changes (the exit's hand-off with the real driver, the direct path's imports) and the CLI's own tests; the
# cold CLI in turns beside the last session's tree; perf/exit_handoff.py as committed; the batched MSM (10 x 2^20).
#   OUT=/tmp/out bash perf/s34c_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) GPU tests of the CLI's start and end"
python3 -m pytest -q -rs -p no:cacheprovider -m gpu tests/test_exit_handoff.py tests/test_cli_startup.py \
  tests/test_key_cache.py 2>&1 | tail -4
cli_own_tests
python3 perf/cli_start.py --runs 3 --workdir /tmp/cs 2>&1 | grep -E "^\| |^prove"
echo "== $(date +%T) in turns: the last session's tree and this one"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --out /tmp/ab \
  base=.wt/base final=. 2>&1 | head -8
echo "== $(date +%T) the process's end (perf/exit_handoff.py)"
python3 perf/exit_handoff.py --runs 7 --sequence 6 2>&1
echo "== $(date +%T) batched MSM, BN254 G1 10 x 2^20"
timeout 120 python3 perf/msm.py --sizes 20 --curves bn128 --batch 10 --repeats 5 2>&1 | tail -12
echo "== $(date +%T) done"
