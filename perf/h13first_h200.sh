#!/usr/bin/env bash
# h13first's measuring call (checkout root, carry [".whl", ".kcache"] built by
# `python scripts/carry_kernels.py build .kcache mine=$PWD`): the device CSR's GPU tests (and the key
# cache's, whose first load now builds the CSR on the device), then perf/keyload.py on synthetic BN254
# keys at 2^22 with the memory pool grown first and then written whole or left idle 2 s (what a first
# load pays for fresh device memory), then perf/h13first_final.sh.  (The session's first call ran 2^22
# with --miss-again --repeats 1, 2^22 with a 4-byte probe, 2^24 with --miss-again.)
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
timeout 100 python3 -m pytest -q -m gpu tests/test_gpu_csr.py tests/test_key_cache.py 2>&1 | tail -25
echo "== $(date +%T) keyload 2^22, the pool grown first, all of it written"
timeout 40 python3 perf/keyload.py --log-constraints 22 --repeats 0 --tables-rerun none --no-cache-off --no-cached \
  --pool-probe touch --keep --workdir "$K" 2>&1 | grep -v '^{' | tee "$OUT/k22touch.log"
echo "== $(date +%T) keyload 2^22, the pool grown first, then 2 s idle"
timeout 40 python3 perf/keyload.py --log-constraints 22 --repeats 0 --tables-rerun none --no-cache-off --no-cached \
  --pool-probe wait --workdir "$K" 2>&1 | grep -v '^{' | tee "$OUT/k22wait.log"
echo "== $(date +%T) perf/h13first_final.sh"
W=$K bash perf/h13first_final.sh
echo "== $(date +%T) done"
rm -rf "$K"
