#!/usr/bin/env bash
# Session 29's first device call (a FINALS entry of scripts/final_h200.sh, after its "prove" step made the
# 2^16 bench key under ${W:-/tmp/fin}/pp): the 2^16 proof's ratio to its GPU stages, three runs of medians of
# 15 (perf/prove.py --files), then its host path under cProfile (perf/host_profile.py).
set -u
d=${W:-/tmp/fin}/pp/bn128_2^16
[ -e "$d/bench.zkey" ] || exit 1
for round in 1 2 3; do
  timeout 15 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" --backend gpu --repeats 15 2>&1 \
    | grep "^| curve\|^| bn128"
done
timeout 30 python3 perf/host_profile.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 30 --top 45
