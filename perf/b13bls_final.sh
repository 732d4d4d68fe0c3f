#!/usr/bin/env bash
# b13bls's headline figures for the closing device call (about 45 s; both curves' kernels carried, the
# environment of scripts/final_h200.sh: cwd = the repo root, PYTHONPATH and GROTH16_KERNEL_CACHE set):
# BLS12-381's 2^20 proof with the defaults (msm_builds.PRODUCT_ABI_BY_CURVE: G1 mixed_eo, G2 eo, the 12-limb
# even/odd product), each proof checked by the device's pairing check (perf/prove.py raises on a failed
# one); the same key with the previous builds forced (G1 mixed, G2 value: BEFORE=0 skips it) and with G1's
# even/odd build by value bounded to 3 blocks (not yet run in a proof; its MSMs are 1-2% faster); and
# perf/msm.py's BLS12-381 G1 at 2^20 and 2^24: the defaults, the previous build, and G1's even/odd build
# by value bounded to 3 blocks an SM (eo:direct:3, the fastest MSM of b13bls's sweep), every result compared.
#   OUT=/tmp/out bash perf/b13bls_final.sh        (log: $OUT/b13bls_final.log, rows: $OUT/b13bls_*.json)
set -u
out=${OUT:-/tmp/out}
W=${W:-/tmp}/b13f
mkdir -p "$out" "$W"
timeout ${T_FINAL:-58} bash -c "
python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 --workdir $W \
  --json $out/b13bls_prove.json 2>&1 | tail -3
forced() {  # the same key's proof under msm_builds.PRODUCT_ABI = \$1, msm_builds.ACCUMULATE_BOUNDS = \$2, rows to \$3
  python3 - \"\$1\" \"\$2\" \"\$3\" <<'PY' 2>&1 | tail -1
import json, runpy, sys
import engine.backends.gpu.msm_builds as m
m.PRODUCT_ABI = json.loads(sys.argv[1])
m.ACCUMULATE_BOUNDS = json.loads(sys.argv[2]) or None
w = '$W/bls12381_2^20'
sys.argv = ['perf/prove.py', '--files', w + '/bench.zkey', w + '/bench.wtns', '--backend', 'gpu', '--repeats', '5',
            '--workdir', '$W', '--json', sys.argv[3]]
runpy.run_path('perf/prove.py', run_name='__main__')
PY
}
if [ '${BEFORE:-1}' = 1 ]; then
  echo 'the previous builds (G1 mixed, G2 value), same key:'
  forced '{\"g1\": \"mixed\", \"g2\": \"value\"}' '{}' $out/b13bls_prove_before.json
fi
echo 'G1 eo bounded to 3 blocks (g1e_b3), G2 eo, same key:'
forced '{\"g1\": \"eo\", \"g2\": \"eo\"}' '{\"g1\": 3}' $out/b13bls_prove_b3.json
python3 perf/msm.py --curves bls12381 --sizes 20,24 --repeats 5 --combos default:direct,mixed:direct,eo:direct:3 \
  --json $out/b13bls_msm.json 2>&1 | grep '^| curve\|^| bls12381'
" 2>&1 | tee "$out/b13bls_final.log"
rm -rf "$W"
