#!/usr/bin/env bash
# The lead's closing figures of session 27 (a FINALS entry of scripts/final_h200.sh, after its "prove" step made
# the bench keys under ${W:-/tmp/fin}/pp): the host's cost of a launch before and after the packed arguments
# (perf/launch_overhead.py); a 2^13-constraint proof (domain 2^14) with the mid phase's products as MSMs beside
# (proof_streams.products_beside, the default for a proof alone in flight) and without (GROTH16_PRODUCTS_BESIDE=0),
# alternating, twice (perf/prove.py --files, medians of 9); its time line; throughput at that domain (perf/sweep.py,
# 480 proofs, 32 in flight, 1 slot) with the default (products only for a proof alone) and with them never.
set -u
P=${W:-/tmp/fin}/pp
d=$P/bn128_2^13
[ -e "$d/bench.zkey" ] || exit 1
timeout 25 python3 perf/launch_overhead.py --count 2000 2>&1 | tail -12
for round in 1 2; do
  for p in default 0; do
    echo "== round $round GROTH16_PRODUCTS_BESIDE=$p 2^13"
    if [ $p = default ]; then unset GROTH16_PRODUCTS_BESIDE; else export GROTH16_PRODUCTS_BESIDE=$p; fi
    timeout 12 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" --backend gpu --repeats 9 2>&1 \
      | grep "^| curve\|^| bn128"
  done
done
unset GROTH16_PRODUCTS_BESIDE
timeout 12 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -27
for p in default 0; do
  echo "== sweep GROTH16_PRODUCTS_BESIDE=$p"
  if [ $p = default ]; then unset GROTH16_PRODUCTS_BESIDE; else export GROTH16_PRODUCTS_BESIDE=$p; fi
  timeout 25 python3 perf/sweep.py --backend gpu --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --proofs 480 \
    --concurrency 32 --slots 1 --modes split --no-plots --out "${W:-/tmp/fin}/s27_$p" 2>&1 | grep -A3 '^| mode'
done
