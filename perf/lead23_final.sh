#!/usr/bin/env bash
# The lead's closing figures of the late session (a FINALS entry of scripts/final_h200.sh, after its "prove"
# step made the bench keys under /tmp/fin/pp): a warm proof on one time line at the 2^14 and 2^17 domains
# (the host's work before the upload and after the done event: the arena, the event pool, the lazy sums),
# and the host's copy into pinned memory by size and threads.
set -u
for k in 13 16; do
  d=${W:-/tmp/fin}/pp/bn128_2^$k
  [ -e "$d/bench.zkey" ] || continue
  timeout 25 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -22
done
timeout 20 python3 perf/copy_pinned.py --repeats 30 2>&1 | tail -7
