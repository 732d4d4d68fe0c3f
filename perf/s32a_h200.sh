#!/usr/bin/env bash
# Session 32, call 1 (carry [".whl", ".kcache"]): the base field's product on the FP64 pipe beside the
# even/odd IMAD product: checked against Python, then throughput alone and mixed (perf/field_f64.py).
#   OUT=/tmp/out bash perf/s32a_h200.sh
set -u
GPU_ENV_KCACHE=.kcache . scripts/gpu_env.sh || exit 2
echo "== $(date +%T) the FP64 product against Python; chains alone and mixed"
python3 perf/field_f64.py 2>&1 | tee $OUT/field_f64.txt
echo "== $(date +%T) GPU tests of the field products"
python3 -m pytest -q -m gpu tests/test_gpu_kernels.py -k "product" -p no:cacheprovider 2>&1 | tail -3
echo "== $(date +%T) done"
