#!/usr/bin/env bash
# One device call of brief h15small (issue 15's small MSMs): GPU MSM tests, perf/msm.py after
# (this tree) and before (the checkout's root, the branch's base), warm proofs after.
# Run from the device tool's checkout root with carry [".whl", ".wt/h15small"]:
#   bash .wt/h15small/perf/h15small_device.sh
# The kernels come prebuilt (scripts/carry_kernels.py, DIR .wt/h15small/.kcache).
set -o pipefail
root=$PWD
new=$root/.wt/h15small
out=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 GROTH16_KERNEL_CACHE=$new/.kcache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
python3 "$new/scripts/carry_kernels.py" install "$new/.kcache" base="$root" new="$new" 2>&1 | tee "$out/carry.log"
cd "$new"
SECONDS=0
timeout ${T_TESTS:-75} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_msm.py tests/test_gpu_msm_engine.py \
  tests/test_gpu_kernels.py -k "${K_TESTS:-msm or batch or proof}" 2>&1 | tee "$out/tests.log" | tail -25
echo "tests: ${SECONDS}s"; SECONDS=0
PYTHONPATH=/tmp/site:$new timeout ${T_AFTER:-70} python3 perf/msm.py --sizes 12,14,16,18,20,24 --curves bn128,bls12381 \
  --g2 --repeats 5 --breakdown --sets 3 --json "$out/msm_after.json" 2>&1 | tee "$out/msm_after.log" | tail -50
echo "after: ${SECONDS}s"; SECONDS=0
PYTHONPATH=/tmp/site:$new timeout ${T_PROVE:-85} python3 perf/prove.py --log-constraints 13,16,20 --curves bn128 --backend gpu \
  --repeats 5 --workdir /tmp/h15-prove 2>&1 | tee "$out/prove.log" | tail -20
echo "prove: ${SECONDS}s"; SECONDS=0
if grep -q "base|bn128: carried build loads" "$out/carry.log"; then
  cd "$root"
  PYTHONPATH=/tmp/site:$root timeout ${T_BEFORE:-25} python3 perf/msm.py --sizes 12,14,16,20 --curves bn128 --g2 \
    --repeats 5 --json "$out/msm_before.json" 2>&1 | tee "$out/msm_before.log" | tail -16
  cd "$new"
fi
echo "before: ${SECONDS}s"; SECONDS=0
