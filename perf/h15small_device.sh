#!/usr/bin/env bash
# A device call of brief h15small (issue 15's small MSMs), from the device tool's checkout root
# with carry [".whl", ".wt/h15small"]:   bash .wt/h15small/perf/h15small_device.sh
# The kernels come prebuilt (scripts/carry_kernels.py, DIR .wt/h15small/.kcache).  Steps (each
# bounded): GPU MSM tests; a sweep of windows and fix-up classes at 2^12..2^16 and of the
# shortest segment; perf/msm.py at 2^12..2^24 with its phase breakdown; warm proofs.
# (The first call also ran perf/msm.py from the checkout's root, the branch's base: "before".)
set -o pipefail
root=$PWD
new=$root/.wt/h15small
out=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 GROTH16_KERNEL_CACHE=$new/.kcache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
python3 "$new/scripts/carry_kernels.py" install "$new/.kcache" base="$root" new="$new" 2>&1 | tee "$out/carry.log"
cd "$new"
export PYTHONPATH=/tmp/site:$new
msm() { python3 perf/msm.py --curves bn128 --repeats 5 "$@"; }
SECONDS=0
timeout ${T_TESTS:-60} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_msm.py tests/test_gpu_msm_engine.py \
  tests/test_gpu_kernels.py -k "${K_TESTS:-msm or batch or proof}" 2>&1 | tee "$out/tests.log" | tail -25
echo "tests: ${SECONDS}s"; SECONDS=0
timeout ${T_SWEEP:-50} msm --sizes 12,13,14,15,16 --window 9,11,13,15,16 --fix 8:256:4,16:16:4,16:256:8,4:256:2 \
  --json "$out/sweep.json" > "$out/sweep.log" 2>&1; tail -5 "$out/sweep.log"
timeout ${T_SEG:-20} msm --sizes 12,14,16 --min-segment 2,4,8,16 --fix 8:256:4,16:16:4 --breakdown \
  --json "$out/seg.json" > "$out/seg.log" 2>&1; tail -40 "$out/seg.log"
echo "sweeps: ${SECONDS}s"; SECONDS=0
timeout ${T_AFTER:-60} python3 perf/msm.py --sizes 12,14,16,18,20,24 --curves bn128,bls12381 --g2 --repeats 5 --breakdown \
  --sets 3 --json "$out/msm_after.json" 2>&1 | tee "$out/msm_after.log" | tail -45
echo "after: ${SECONDS}s"; SECONDS=0
timeout ${T_PROVE:-40} python3 perf/prove.py --log-constraints 13,16,20 --curves bn128 --backend gpu \
  --repeats 5 --workdir /tmp/h15-prove 2>&1 | tee "$out/prove.log" | tail -8
echo "prove: ${SECONDS}s"
