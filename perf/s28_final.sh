#!/usr/bin/env bash
# The lead's closing figures of session 28 (a FINALS entry of scripts/final_h200.sh, after its "prove" step made
# the bench keys under ${W:-/tmp/fin}/pp): the tail's chains (perf/pairing_latency.py: the divsteps inversion
# against the binary loop, the tower with its even/odd product); the 2^13-constraint proof (domain 2^14), three
# runs of medians of 15 (perf/prove.py --files); its time line (throughput: perf/t13tput_final.sh).
set -u
P=${W:-/tmp/fin}/pp
d=$P/bn128_2^13
[ -e "$d/bench.zkey" ] || exit 1
timeout 60 python3 perf/pairing_latency.py --iters 1000 2>&1 | grep -E "inverse|two warps|fq mul inline|cyclotomic|fq12 mul"
for round in 1 2 3; do
  echo "== round $round 2^13"
  timeout 15 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" --backend gpu --repeats 15 2>&1 \
    | grep "^| curve\|^| bn128"
done
timeout 15 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -27
