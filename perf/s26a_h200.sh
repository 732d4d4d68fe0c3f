#!/usr/bin/env bash
# (A record of one call at the commit perf/RESULTS.md "Session 26" names; GROTH16_FINAL_SPLIT and
# GROTH16_FINAL_WIDE were removed after it: set now, they change nothing.)
# Session 26's first device call (issue 13: the 2^14-domain proof): a small proof's final phase split around
# its join (footprint.final_split).  From the checkout root, carry [".whl", ".kcache"] (builds of main=$PWD).
#   tests   the GPU tests of the tail, the pipeline, the waiter, the key tables
#   ab      perf/prove.py --files on BN254 bench keys of 2^13 and 2^16 constraints (made by perf/prove.py here),
#           GROTH16_FINAL_SPLIT=1 / 0 (and the split with the front beside at 2^13), alternating, twice,
#           medians of 9; then the 2^13 proof on one time line, split and whole
# Logs under $OUT/r (tar: $OUT/r.tgz).   OUT=/tmp/out bash perf/s26a_h200.sh
set -u
R=$OUT/r; mkdir -p "$R"
W=${W:-/tmp/fin}
STEPS=${STEPS:-tests ab}
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
snap() { tar czf "$OUT/r.tgz" -C "$R" .; }
. scripts/gpu_env.sh || exit 2
if has tests; then
  timeout ${T_TESTS:-200} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_epilogue.py \
    tests/test_gpu_tail_fake.py tests/test_gpu_pipeline.py tests/test_gpu_wait_awake.py tests/test_gpu_key_tables.py \
    > "$R/tests.log" 2>&1
  echo "tests rc=$? $(date +%T)"; grep -E "passed|failed|error" "$R/tests.log" | tail -8; snap
fi
if has ab; then
  timeout 120 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 5 \
    --workdir "$W/pp" --json "$R/prove_bn.json" > "$R/prove.log" 2>&1
  echo "prove rc=$? $(date +%T)"; grep "^| curve\|^| bn128" "$R/prove.log"; snap
  for round in 1 2; do
    for set in "1 0" "0 0" "1 1"; do
      s=${set% *}; f=${set#* }
      for k in 13 16; do
        [ "$f" = 1 ] && [ $k = 16 ] && continue
        d=$W/pp/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
        echo "== round $round GROTH16_FINAL_SPLIT=$s GROTH16_FRONT_BESIDE=$f 2^$k"
        GROTH16_FINAL_SPLIT=$s GROTH16_FRONT_BESIDE=$f timeout 25 python3 perf/prove.py --files "$d/bench.zkey" \
          "$d/bench.wtns" --backend gpu --repeats 9 2>&1 | grep "^| curve\|^| bn128"
      done
    done
  done
  d=$W/pp/bn128_2^13
  for s in 1 0; do
    echo "== time line GROTH16_FINAL_SPLIT=$s"
    GROTH16_FINAL_SPLIT=$s timeout 20 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" \
      --repeats 15 2>&1 | tail -26
  done
fi
snap
