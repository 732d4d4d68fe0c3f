#!/usr/bin/env bash
# The lead's closing figures of session 26 (a FINALS entry of scripts/final_h200.sh, after its "prove" step made
# the bench keys under ${W:-/tmp/fin}/pp): a small proof's final phase three ways, same keys, alternating, twice
# (perf/prove.py, medians of 9, BN254 2^13 and 2^16 constraints): the defaults (pi_b made beside after B2,
# footprint.pi_b_beside; the final phase on six warps, epilogue.final_wide), on four warps (GROTH16_FINAL_WIDE=0),
# and as before this session (four warps, pi_b in the final phase: GROTH16_PI_B_BESIDE=0 too).
# perf/s26b_final.sh: the phases alone (perf/final_phase.py) and the time lines.
set -u
P=${W:-/tmp/fin}/pp
for round in 1 2; do
  for set in "1 1" "1 0" "0 0"; do
    b=${set% *}; w=${set#* }
    for k in 13 16; do
      d=$P/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
      echo "== round $round GROTH16_PI_B_BESIDE=$b GROTH16_FINAL_WIDE=$w 2^$k"
      GROTH16_PI_B_BESIDE=$b GROTH16_FINAL_WIDE=$w timeout 12 python3 perf/prove.py --files "$d/bench.zkey" \
        "$d/bench.wtns" --backend gpu --repeats 9 2>&1 | grep "^| curve\|^| bn128"
    done
  done
done
