#!/usr/bin/env bash
# (A record of one call at the commit perf/RESULTS.md "Session 26" names; GROTH16_FINAL_SPLIT and
# GROTH16_FINAL_WIDE were removed after it: set now, they change nothing.)
# Session 26's second device call: the split final phase with pi_c's Miller loop in the join's launch.
# From the checkout root, carry [".whl", ".kcache"].  GPU tests of the tail, bench keys (perf/prove.py), then
# perf/s26_final.sh (the A/B, the time lines).   OUT=/tmp/out bash perf/s26b_h200.sh
set -u
R=$OUT/r; mkdir -p "$R"
W=${W:-/tmp/fin}
. scripts/gpu_env.sh || exit 2
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_epilogue.py tests/test_gpu_pipeline.py \
  > "$R/tests.log" 2>&1
echo "tests rc=$? $(date +%T)"; grep -E "^FAILED|passed|failed|error" "$R/tests.log" | tail -8
timeout 120 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 5 \
  --workdir "$W/pp" > "$R/prove.log" 2>&1
echo "prove rc=$? $(date +%T)"; grep "^| curve\|^| bn128" "$R/prove.log"
W=$W bash perf/s26_final.sh
tar czf "$OUT/r.tgz" -C "$R" .
