#!/usr/bin/env bash
# The lead's closing figures of session 26 (a FINALS entry of scripts/final_h200.sh, after its "prove" step made
# the bench keys under ${W:-/tmp/fin}/pp): a small proof's final phase split around its join (GROTH16_FINAL_SPLIT=1)
# against the one final launch (=0, the default), same keys, alternating, twice (perf/prove.py, medians of
# 9, BN254 2^13 and 2^16 constraints); the 2^13 proof on one time line both ways.
set -u
P=${W:-/tmp/fin}/pp
for round in 1 2; do
  for s in 1 0; do
    for k in 13 16; do
      d=$P/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
      echo "== round $round GROTH16_FINAL_SPLIT=$s 2^$k"
      GROTH16_FINAL_SPLIT=$s timeout 25 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" --backend gpu \
        --repeats 9 2>&1 | grep "^| curve\|^| bn128"
    done
  done
done
d=$P/bn128_2^13
for s in 1 0; do
  echo "== time line GROTH16_FINAL_SPLIT=$s"
  [ -e "$d/bench.zkey" ] && GROTH16_FINAL_SPLIT=$s timeout 20 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" \
    --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -24
done
