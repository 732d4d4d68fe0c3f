#!/usr/bin/env bash
# b13bls's device call (issue 13/15: BLS12-381's MSMs and its 2^20 proof), kernels carried
# (scripts/carry_kernels.py, both curves: this tree's sources are not main's).  Steps (STEPS, any of):
#   tests  the product builds and the BLS12-381 bounded accumulations against the CPU reference
#   g1     perf/msm.py BLS12-381 G1 at the proof's sizes (2^20, 2^21) and 2^24 over the builds (COMBOS_G1)
#   g2     BLS12-381 G2 at 2^20 over the builds (COMBOS_G2) and G2's reduction blocks
#   window the window c around the planner's (G1 2^20/2^21/2^24, G2 2^20) for two builds each
#   prove  perf/prove.py --log-constraints 20 --curves bls12381: the defaults, then each of PROVE_AS
#          (ABI;BOUNDS pairs forced through msm_builds.PRODUCT_ABI / msm_builds.ACCUMULATE_BOUNDS) on the same key
# Logs under $OUT (tar: $OUT/r.tgz); cwd = the tree's root, PYTHONPATH and GROTH16_KERNEL_CACHE set.
#   OUT=/tmp/out STEPS="tests g1 g2 window prove" bash perf/b13bls_device.sh
set -u
R=$OUT/r; W=/tmp/b13w; mkdir -p "$R" "$W"
STEPS=${STEPS:-tests g1 g2 window prove}
COMBOS_G1=${COMBOS_G1:-mixed:direct,ref:direct,eo:direct,mixed_eo:direct,eo:direct:3,mixed_eo:direct:5,ref:direct:5}
COMBOS_G2=${COMBOS_G2:-value:direct,mixed:direct,ref:direct,eo:direct,mixed_eo:direct,eo:direct:3,mixed_eo:direct:3}
PROVE_AS=${PROVE_AS:-'{"g1":"mixed_eo","g2":"eo"};{} {"g1":"eo","g2":"eo"};{} {"g1":"mixed_eo","g2":"mixed_eo"};{}'}
snap() { tar czf "$OUT/r.tgz" -C "$R" .; }  # after each step: a call cut short still brings back the logs
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
msm() { local tag=$1; shift; timeout "${T_MSM:-120}" python3 perf/msm.py --curves bls12381 --repeats 5 "$@" \
          --json "$R/$tag.json" > "$R/$tag.log" 2>&1; echo "msm $tag rc=$?"; grep -h "^| bls12381" "$R/$tag.log"; }
if has tests; then
  timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_msm.py \
    -k "product_builds or bounded" > "$R/tests.log" 2>&1
  echo "tests: $(tail -1 "$R/tests.log")"; grep -h "^FAILED\|^ERROR" "$R/tests.log"; snap
fi
if has g1; then
  msm g1_small --sizes 20,21 --combos "$COMBOS_G1"
  msm g1_24 --sizes 24 --combos "$COMBOS_G1,eo:binned,mixed_eo:binned" --breakdown; snap
fi
if has g2; then
  msm g2 --g2-only --g2-curves bls12381 --sizes 20 --combos "$COMBOS_G2" --breakdown
  msm g2_rt --g2-only --g2-curves bls12381 --sizes 20 --combos "${G2_RT_COMBOS:-value:direct,eo:direct}" --reduce-threads 128,256; snap
fi
if has window; then
  msm win_g1 --sizes 20,21 --window 16,17,18,19,21 --combos "${WIN_COMBOS:-mixed:direct,mixed_eo:direct,eo:direct}"
  msm win_g1_24 --sizes 24 --window 20,21,23 --combos "${WIN_COMBOS_24:-mixed_eo:direct,eo:direct}"
  msm win_g2 --g2-only --g2-curves bls12381 --sizes 20 --window 16,18,19,21 --combos "${WIN_COMBOS_G2:-value:direct,eo:direct}"; snap
fi
if has prove; then
  timeout 90 python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 --workdir "$W" \
    --json "$R/prove_default.json" 2>&1 | tail -3
  i=0
  for as in $PROVE_AS; do
    i=$((i + 1)); abi=${as%%;*}; bounds=${as#*;}
    echo "prove as PRODUCT_ABI=$abi ACCUMULATE_BOUNDS=$bounds"
    timeout 60 python3 - "$abi" "$bounds" "$W" "$R/prove_$i.json" <<'PY' 2>&1 | tail -2
import json, runpy, sys
import engine.backends.gpu.msm_builds as m
m.PRODUCT_ABI = json.loads(sys.argv[1])
m.ACCUMULATE_BOUNDS = json.loads(sys.argv[2]) or None
w = sys.argv[3] + "/bls12381_2^20"
sys.argv = ["perf/prove.py", "--files", w + "/bench.zkey", w + "/bench.wtns", "--backend", "gpu", "--repeats", "5",
            "--json", sys.argv[4]]
runpy.run_path("perf/prove.py", run_name="__main__")
PY
  done
fi
snap
