#!/usr/bin/env bash
# Session 26's third device call: the split final phase (GROTH16_FINAL_SPLIT) against the one launch, each with
# the tail's phases alone on their SMs (GROTH16_TAIL_ALONE=1: epilogue.TAIL_ALONE_SHARED) and without, BN254 bench
# keys of 2^13 and 2^16 constraints (perf/prove.py --files, medians of 9), alternating, twice; the time lines
# of the 2^13 proof for the two that win.   OUT=/tmp/out bash perf/s26c_h200.sh   (carry .whl, .kcache)
set -u
R=$OUT/r; mkdir -p "$R"
W=${W:-/tmp/fin}
P=$W/pp
. scripts/gpu_env.sh || exit 2
timeout 120 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 3 \
  --workdir "$P" > "$R/prove.log" 2>&1
echo "keys rc=$? $(date +%T)"
GROTH16_TAIL_ALONE=1 timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_epilogue.py \
  -k "split_or_whole or corrupted" > "$R/tests.log" 2>&1
echo "tests (alone) rc=$? $(date +%T)"; grep -E "^FAILED|passed|failed|error" "$R/tests.log" | tail -4
for round in 1 2; do
  for set in "1 0" "0 0" "1 1" "0 1"; do
    s=${set% *}; a=${set#* }
    for k in 13 16; do
      d=$P/bn128_2^$k
      echo "== round $round GROTH16_FINAL_SPLIT=$s GROTH16_TAIL_ALONE=$a 2^$k"
      GROTH16_FINAL_SPLIT=$s GROTH16_TAIL_ALONE=$a timeout 25 python3 perf/prove.py --files "$d/bench.zkey" \
        "$d/bench.wtns" --backend gpu --repeats 9 2>&1 | grep "^| bn128"
    done
  done
done
for set in "1 1" "0 1"; do
  s=${set% *}; a=${set#* }
  echo "== time line GROTH16_FINAL_SPLIT=$s GROTH16_TAIL_ALONE=$a"
  GROTH16_FINAL_SPLIT=$s GROTH16_TAIL_ALONE=$a timeout 20 python3 perf/proof_timeline.py --zkey "$P/bn128_2^13/bench.zkey" \
    --wtns "$P/bn128_2^13/bench.wtns" --repeats 15 2>&1 | tail -22
done
tar czf "$OUT/r.tgz" -C "$R" .
