#!/usr/bin/env bash
# b15win's device call (issue 15: the MSM window per curve), kernels main's (carried .kcache, main=$PWD).
# cwd = the tree's root, PYTHONPATH and GROTH16_KERNEL_CACHE set.  Steps, each under its own timeout:
#   g1     perf/msm.py BLS12-381 G1 2^16, 2^20, 2^22, 2^24: the planner's window and the curve-blind plan's
#          (--window base: msm_costs.DEFAULT_COSTS, what BLS12-381 took before), same points and run
#   g2     the same for BLS12-381 G2
#   bn     BN254 G1 2^20 and 2^24 (plans unchanged by construction: tests/test_msm_plan_curves.py)
#   tests  pytest -m gpu tests/test_gpu_msm.py tests/test_gpu_plan.py
#   prove  the BLS12-381 2^20 proof with the new plans, then the same key with the old ones
#          (msm_costs.PLAN_COSTS_BY_CURVE = {}: every curve on BN254's terms)
# Logs under $OUT (tar: $OUT/r.tgz).   OUT=/tmp/out bash perf/b15win_h200.sh
set -u
R=$OUT/r; W=/tmp/b15w; mkdir -p "$R" "$W"
STEPS=${STEPS:-g1 g2 bn tests prove}
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
snap() { tar czf "$OUT/r.tgz" -C "$R" .; }
msm() { local tag=$1 t=$2; shift 2; timeout "$t" python3 perf/msm.py --repeats 5 "$@" --json "$R/$tag.json" \
          > "$R/$tag.log" 2>&1; echo "msm $tag rc=$? $(date +%T)"; grep -h "^| curve\|^| bls12381\|^| bn128" "$R/$tag.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
if has g1; then msm g1 ${T_G1:-55} --curves bls12381 --sizes 16,20,22,24 --window base; snap; fi
if has g2; then msm g2 ${T_G2:-60} --g2-only --g2-curves bls12381 --sizes 16,20,22,24 --window base; snap; fi
if has bn; then msm bn ${T_BN:-30} --curves bn128 --sizes 20,24; snap; fi
if has tests; then
  timeout ${T_TESTS:-60} python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_msm.py tests/test_gpu_plan.py \
    > "$R/tests.log" 2>&1
  echo "tests rc=$? $(date +%T): $(tail -1 "$R/tests.log")"; grep -h "^FAILED\|^ERROR" "$R/tests.log"
fi
if has prove; then
  timeout ${T_PROVE:-60} python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 \
    --workdir "$W" --json "$R/prove_new.json" > "$R/prove_new.log" 2>&1
  echo "prove new rc=$? $(date +%T)"; tail -4 "$R/prove_new.log"
  timeout ${T_OLD:-35} python3 - "$W" "$R/prove_old.json" > "$R/prove_old.log" 2>&1 <<'PY'
import runpy, sys
import engine.backends.gpu.msm_costs as mc
mc.PLAN_COSTS_BY_CURVE = {}  # the curve-blind planner: BN254's terms for BLS12-381 too
w = sys.argv[1] + "/bls12381_2^20"
sys.argv = ["perf/prove.py", "--files", w + "/bench.zkey", w + "/bench.wtns", "--backend", "gpu", "--repeats", "5",
            "--json", sys.argv[2]]
runpy.run_path("perf/prove.py", run_name="__main__")
PY
  echo "prove old rc=$? $(date +%T)"; tail -3 "$R/prove_old.log"; snap
fi
snap
