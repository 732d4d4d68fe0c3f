#!/usr/bin/env bash
# Session 25's second device call (issue 15): is the bucket reduction (msm_reduce_segments: a
# thread's running sums over L buckets, then its weight lo * S by double-and-add) bound by its
# work or by its chain?  perf/msm.py with longer segments (--min-segment raises the planner's L):
# fewer threads, fewer double-and-adds, longer chains.  From the checkout root, carry
# [".whl", ".kcache"].   OUT=/tmp/out bash perf/s25b_h200.sh
set -u
R=$OUT/r; mkdir -p "$R"
snap() { tar czf "$OUT/r.tgz" -C "$R" .; }
. scripts/gpu_env.sh || exit 2
msm() { local tag=$1 t=$2; shift 2; timeout "$t" python3 perf/msm.py --breakdown --repeats 5 "$@" --json "$R/$tag.json" \
          > "$R/$tag.log" 2>&1; echo "msm $tag rc=$? $(date +%T)"; grep -h "^|" "$R/$tag.log"; }
msm bn16 40 --sizes 14,16 --curves bn128 --g2 --min-segment 2,4,8,16; snap
msm bn20 50 --sizes 20 --curves bn128 --g2 --min-segment 2,16,32,64; snap
msm bn24 70 --sizes 24 --curves bn128 --min-segment 2,64,128; snap
msm bls20 50 --sizes 20 --curves bls12381 --g2 --g2-curves bls12381 --min-segment 2,8,16,32; snap
