#!/usr/bin/env bash
# The lead's closing figures of session 26 (a FINALS entry of scripts/final_h200.sh, after its "prove" step made
# the bench keys under ${W:-/tmp/fin}/pp): a small proof with pi_b made beside after B2 (the default,
# proof_streams.pi_b_beside) and in the final phase (GROTH16_PI_B_BESIDE=0), same keys, alternating, twice
# (perf/prove.py, medians of 9, BN254 2^13 and 2^16 constraints).  perf/s26b_final.sh: the phases alone.
# (The closing call of session 26 ran this at f8cea3f with the four-warp final phase as a third setting,
# GROTH16_FINAL_WIDE=0, since removed: perf/RESULTS.md, "Session 26".)
set -u
P=${W:-/tmp/fin}/pp
for round in 1 2; do
  for b in 1 0; do
    for k in 13 16; do
      d=$P/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
      echo "== round $round GROTH16_PI_B_BESIDE=$b 2^$k"
      GROTH16_PI_B_BESIDE=$b timeout 12 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" \
        --backend gpu --repeats 9 2>&1 | grep "^| curve\|^| bn128"
    done
  done
done
