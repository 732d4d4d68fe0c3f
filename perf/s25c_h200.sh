#!/usr/bin/env bash
# Session 25's third device call (issue 13/15): the MSM window at proof sizes 2^13-2^15, G1 and G2
# (BN254), the planner's beside c = 9..16 (perf/msm.py --window), phases at 2^14.  Carry
# [".whl", ".kcache"].   OUT=/tmp/out bash perf/s25c_h200.sh
set -u
R=$OUT/r; mkdir -p "$R"
snap() { tar czf "$OUT/r.tgz" -C "$R" .; }
. scripts/gpu_env.sh || exit 2
for s in ${SIZES:-14 13 15}; do
  extra=""; [ "$s" = 14 ] && extra=--breakdown
  timeout ${T:-45} python3 perf/msm.py --sizes $s --curves bn128 --g2 --window ${WINDOWS:-9,10,11,12,13,14,16} \
    --repeats 5 $extra --json "$R/w$s.json" > "$R/w$s.log" 2>&1
  echo "size $s rc=$? $(date +%T)"; grep -h "^| bn128" "$R/w$s.log" | cut -d'|' -f2-4,9,13,14 ; snap
done
grep -h "^| curve\|^| bn128" "$R/w14.log" | tail -20
