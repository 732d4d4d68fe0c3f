#!/usr/bin/env bash
# Session 29's closing figures (a FINALS entry of scripts/final_h200.sh, after its "prove" step made the bench
# keys under ${W:-/tmp/fin}/pp): the 2^16 proof's ratio to its GPU stages, three runs of medians of 15
# (perf/prove.py --files); the witness copy on threads at 2^16 (perf/s29_parts.py); the 2^13 proof, three runs.
set -u
P=${W:-/tmp/fin}/pp
for k in 16 13; do
  d=$P/bn128_2^$k
  [ -e "$d/bench.zkey" ] || continue
  for round in 1 2 3; do
    timeout 15 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" --backend gpu --repeats 15 2>&1 \
      | grep "^| bn128"
  done
  [ $k = 16 ] && timeout 40 python3 perf/s29_parts.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns"
done
