#!/usr/bin/env bash
# Session 28's first measuring call (checkout root, carry [".whl", ".kcache", ".kcache-probe"]): the tower's
# chains built with other base-field products (perf/tower_probe.py builds made here: v0 main, veo the even/odd
# product for every limb count, vinl the batch round inline, veoinl both, vptx the CIOS lo/hi product); B2's
# stream above the proof's other streams (GROTH16_B2_TOP=1) against all at one priority, alternating, on the
# 2^13 and 2^16 bench proofs (perf/prove.py --files, medians of 9) and the 2^13 proof's time line.
#   OUT=/tmp/out bash perf/s28a_h200.sh
set -u
W=${W:-/tmp/fin}
. scripts/gpu_env.sh || exit 2
timeout 60 python3 perf/tower_probe.py time .kcache-probe/v0 .kcache-probe/veo .kcache-probe/vinl \
  .kcache-probe/veoinl .kcache-probe/vptx 2>&1 | tail -40
timeout 120 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| bn128"
for round in 1 2; do
  for p in 1 0; do
    for k in 13 16; do
      d=$W/pp/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
      echo "== round $round GROTH16_B2_TOP=$p 2^$k"
      GROTH16_B2_TOP=$p timeout 15 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" \
        --backend gpu --repeats 9 2>&1 | grep "^| curve\|^| bn128"
    done
  done
done
d=$W/pp/bn128_2^13
for p in 1 0; do
  echo "== timeline GROTH16_B2_TOP=$p"
  GROTH16_B2_TOP=$p timeout 15 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -32
done
