#!/usr/bin/env bash
# Optional, about 20 s, for a closing device call (from the checkout root, the wheels on PYTHONPATH as
# scripts/gpu_env.sh or scripts/final_h200.sh set them): the NTT's branch-free radix-4 rounds
# (NTT_BRANCH_FREE=1: every twiddle product built, none skipped, so ptxas may interleave a round's
# independent products) beside the committed builds, both curves, 2^22 and 2^24.  The NTT-only builds
# take about a second here (NVRTC), so nothing is carried.  Output: $OUT/ntt_ab_final.log; a row
# reads "variant forward/inverse+coset ms", eo3 being BN254's committed build and eo4 BLS12-381's.
set -u
D=${W:-/tmp}/ntt_ab_final
python3 perf/ntt_ab.py build "$D" --variants eo3,eo3bf,eo4,eo4bf >/dev/null &&
  timeout 50 python3 perf/ntt_ab.py run "$D" --sizes 22,24 --repeats 5 2>&1 | tee "$OUT/ntt_ab_final.log"
