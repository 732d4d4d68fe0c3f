#!/usr/bin/env bash
# h13first's second measuring call: the first load at 2^22 and 2^24 with the load's kernels preloaded
# (key.preload: under lazy module loading a kernel's first launch waited for the tables' kernels queued
# before it), a second miss beside it; then one 2^22 load with the preload switched off by monkeypatch
# (the A/B in the same call).   OUT=/tmp/out bash perf/h13first_h200b.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache mine="$PWD" 2>&1 | tail -2
python3 -c "import cuda.bindings.driver as d, cuda.bindings; print('bindings', cuda.bindings.__version__, hasattr(d, 'cuFuncLoad'))"
W=/tmp/h13b timeout 58 bash perf/h13first_final.sh
echo "== $(date +%T) done"
