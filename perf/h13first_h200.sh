#!/usr/bin/env bash
# h13first's measuring call (checkout root, carry [".whl", ".kcache"] built by
# `python scripts/carry_kernels.py build .kcache mine=$PWD`): the device CSR's GPU tests (and the key
# cache's, whose first load now builds the CSR on the device), then perf/keyload.py on synthetic BN254
# keys: 2^22 with a second cache miss in the same process, 2^22 again with the memory pool grown first
# (what a first load pays for fresh device memory), 2^24 with a second miss.
#   OUT=/tmp/out bash perf/h13first_h200.sh        (logs and JSON rows in $OUT)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
python3 scripts/carry_kernels.py install .kcache mine="$PWD" 2>&1 | tail -3
nproc; free -g | head -2
K=${W:-/tmp}/h13kl
mkdir -p "$K"
echo "== $(date +%T) tests"
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu_csr.py tests/test_key_cache.py 2>&1 | tail -25
echo "== $(date +%T) keyload 2^22"
timeout 70 python3 perf/keyload.py --log-constraints 22 --repeats 1 --tables-rerun none --no-cache-off --miss-again \
  --keep --workdir "$K" --json "$OUT/k22.json" 2>&1 | grep -v '^{' | tee "$OUT/k22.log"
echo "== $(date +%T) keyload 2^22, pool grown first"
timeout 45 python3 perf/keyload.py --log-constraints 22 --repeats 0 --tables-rerun none --no-cache-off --pool-probe \
  --workdir "$K" --json "$OUT/k22p.json" 2>&1 | grep -v '^{' | tee "$OUT/k22p.log"
echo "== $(date +%T) keyload 2^24"
timeout 120 python3 perf/keyload.py --log-constraints 24 --repeats 0 --tables-rerun none --no-cache-off --miss-again \
  --workdir "$K" --json "$OUT/k24.json" 2>&1 | grep -v '^{' | tee "$OUT/k24.log"
echo "== $(date +%T) done"
rm -rf "$K"
