#!/usr/bin/env bash
# The lead's closing figures of session 25 (a FINALS entry of scripts/final_h200.sh, after its "prove" step made
# the bench keys under ${W:-/tmp/fin}/pp): a small proof as it runs now (its front beside the A, B1, C MSMs, the
# lone waiter polling its done event) against the front on the compute stream (GROTH16_FRONT_BESIDE=0) and
# against a blocking waiter (GROTH16_WAIT_SPIN_MS=0), same keys, alternating, twice (perf/prove.py, medians of 9,
# BN254 2^13 and 2^16 constraints); the 2^13 proof on one time line.  perf/s25msm_final.sh: the MSMs.
set -u
P=${W:-/tmp/fin}/pp
for round in 1 2; do
  for set in "1 5" "0 5" "1 0"; do
    f=${set% *}; w=${set#* }
    for k in 13 16; do
      d=$P/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
      echo "== round $round GROTH16_FRONT_BESIDE=$f GROTH16_WAIT_SPIN_MS=$w 2^$k"
      GROTH16_FRONT_BESIDE=$f GROTH16_WAIT_SPIN_MS=$w timeout 25 python3 perf/prove.py --files "$d/bench.zkey" \
        "$d/bench.wtns" --backend gpu --repeats 9 2>&1 | grep "^| curve\|^| bn128"
    done
  done
done
d=$P/bn128_2^13
[ -e "$d/bench.zkey" ] && timeout 20 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" \
  --repeats 15 2>&1 | tail -24
