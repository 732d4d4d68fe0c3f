#!/usr/bin/env bash
# The lead's closing figures of session 26 (a FINALS entry of scripts/final_h200.sh, after its "prove" step made
# the bench keys under ${W:-/tmp/fin}/pp): a small proof's final phase three ways, same keys, alternating, twice
# (perf/prove.py, medians of 9, BN254 2^13 and 2^16 constraints): pi_b made beside after B2 (the default,
# footprint.pi_b_beside), the final phase split around its join (GROTH16_FINAL_SPLIT=1), and the one final launch
# that makes pi_b itself (GROTH16_PI_B_BESIDE=0); the 2^13 proof on one time line, the default and the last.
set -u
P=${W:-/tmp/fin}/pp
for round in 1 2; do
  for set in "0 1" "1 1" "0 0"; do
    s=${set% *}; b=${set#* }
    for k in 13 16; do
      d=$P/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
      echo "== round $round GROTH16_FINAL_SPLIT=$s GROTH16_PI_B_BESIDE=$b 2^$k"
      GROTH16_FINAL_SPLIT=$s GROTH16_PI_B_BESIDE=$b timeout 12 python3 perf/prove.py --files "$d/bench.zkey" \
        "$d/bench.wtns" --backend gpu --repeats 9 2>&1 | grep "^| curve\|^| bn128"
    done
  done
done
d=$P/bn128_2^13
for b in 1 0; do
  echo "== time line GROTH16_PI_B_BESIDE=$b"
  [ -e "$d/bench.zkey" ] && GROTH16_PI_B_BESIDE=$b timeout 10 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" \
    --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -21
done
