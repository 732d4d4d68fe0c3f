#!/usr/bin/env bash
# Session 34, call 5 (carry [".whl", ".kcache"]): a cold CLI proof's Python under cProfile (perf/cli_profile.py),
# twice (the second with the page cache and key cache warm).   OUT=/tmp/out bash perf/s34e_h200.sh
set -u
. perf/s31_env.sh
python3 perf/cli_start.py --runs 1 --workdir /tmp/cs 2>&1 | grep -E "^\| (python|prove)"
python3 perf/cli_profile.py /tmp/cs/bench.zkey /tmp/cs/bench.wtns --top 5 > /dev/null 2>&1
python3 perf/cli_profile.py /tmp/cs/bench.zkey /tmp/cs/bench.wtns --top 70 --out $OUT/cli.prof 2>&1 | \
  grep -v "^\s*$" | head -100
