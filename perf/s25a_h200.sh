#!/usr/bin/env bash
# Session 25's first device call (issue 15: where a mostly-0/1 witness MSM spends its time; the
# batched 10 x 2^20).  From the checkout root, carry [".whl", ".kcache"] (builds of main=$PWD).
#   batch   perf/msm.py BN254 G1 2^20, one vector and 10 in one pass (XYZZ, the default)
#   w01     perf/msm.py random against SHA-256's share (0.59 zeros, 0.41 ones), G1 and G2, both
#           curves, 2^20 and 2^24, with the phase breakdown
# Logs under $OUT/r (tar: $OUT/r.tgz).   OUT=/tmp/out bash perf/s25a_h200.sh
set -u
R=$OUT/r; mkdir -p "$R"
STEPS=${STEPS:-batch w01}
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
snap() { tar czf "$OUT/r.tgz" -C "$R" .; }
. scripts/gpu_env.sh || exit 2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
msm() { local tag=$1 t=$2; shift 2; timeout "$t" python3 perf/msm.py "$@" --json "$R/$tag.json" \
          > "$R/$tag.log" 2>&1; echo "msm $tag rc=$? $(date +%T)"; grep -h "^|" "$R/$tag.log"; }
if has batch; then msm batch ${T_BATCH:-60} --sizes 20 --curves bn128 --batch 10 --repeats 5; snap; fi
if has w01; then
  msm w01_bn ${T_W:-90} --sizes 20,24 --curves bn128 --g2 --g2-curves bn128 --scalars random,witness:0.59,0.41 \
    --breakdown --repeats 3; snap
  msm w01_bls ${T_W:-90} --sizes 20,24 --curves bls12381 --g2 --g2-curves bls12381 \
    --scalars random,witness:0.59,0.41 --breakdown --repeats 3; snap
fi
snap
