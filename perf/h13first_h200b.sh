#!/usr/bin/env bash
# h13first's second measuring call: the first load at 2^22 and 2^24 with the load's kernels preloaded
# (key.preload: under lazy module loading a kernel's first launch waited for the tables' kernels queued
# before it): 2^22 with a second miss beside it, then 2^24 (first load only: the device time left).
#   OUT=/tmp/out bash perf/h13first_h200b.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache mine="$PWD" 2>&1 | tail -2
python3 -c "import cuda.bindings.driver as d, cuda.bindings; print('bindings', cuda.bindings.__version__, hasattr(d, 'cuFuncLoad'))"
K=/tmp/h13b
A="--repeats 0 --tables-rerun none --no-cache-off --no-cached --workdir $K"
timeout 48 bash -c "python3 perf/keyload.py --log-constraints 22 --miss-again $A && python3 perf/keyload.py --log-constraints 24 $A" \
  2>&1 | grep -v '^{' | tee "$OUT/b.log"
echo "== $(date +%T) done"
