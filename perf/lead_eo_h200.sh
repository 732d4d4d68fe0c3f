#!/usr/bin/env bash
# The lead's check of the per-curve MSM product builds (msm_builds.PRODUCT_ABI_BY_CURVE) in whole proofs, one call
# with kernels carried (.kcache): the MSM's engine-level GPU tests, then warm proofs (each checked by the
# device's own pairing check; perf/prove.py raises on a failed one) at BN254 2^13..2^22 and BLS12-381 2^20
# with the defaults, and BN254 2^16/2^20 with the previous builds forced (G1 mixed, G2 value) beside them.
#   OUT=/tmp/out bash perf/lead_eo_h200.sh          (log: $OUT/log; rows: $OUT/r.tgz)
set -u
W=/tmp/eo; R=$OUT/r; mkdir -p "$W" "$R"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2
( timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_msm_engine.py tests/test_gpu_pipeline.py \
    >"$R/tests.log" 2>&1; echo "tests: $(tail -1 "$R/tests.log")" ) &
timeout 200 python3 perf/prove.py --log-constraints 13,16,20,22 --curves bn128 --backend gpu --repeats 5 \
  --workdir "$W" --json "$R/bn_eo.json" 2>&1 | tail -8
timeout 60 python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 \
  --workdir "$W" --json "$R/bls.json" 2>&1 | tail -4
timeout 60 python3 -c "
import runpy, sys
import engine.backends.gpu.msm_builds as m
m.PRODUCT_ABI = {'g1': 'mixed', 'g2': 'value'}
sys.argv = ['perf/prove.py', '--log-constraints', '16,20', '--curves', 'bn128', '--backend', 'gpu', '--repeats', '5',
            '--workdir', '$W', '--json', '$R/bn_old.json']
runpy.run_path('perf/prove.py', run_name='__main__')" 2>&1 | tail -5
wait
grep -h "^FAILED\|^ERROR" "$R/tests.log"
tar czf "$OUT/r.tgz" -C "$R" .
