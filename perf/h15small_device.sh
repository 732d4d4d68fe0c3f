#!/usr/bin/env bash
# A device call of brief h15small (issue 15's small MSMs), from the device tool's checkout root
# with carry [".whl", ".wt/h15small"]:   bash .wt/h15small/perf/h15small_device.sh
# The kernels come prebuilt (scripts/carry_kernels.py, DIR .wt/h15small/.kcache).  Steps (each
# bounded): GPU MSM tests; a sweep of windows and fix-up classes at 2^12..2^16 and of the
# shortest segment; perf/msm.py at 2^12..2^16 on every group with its phase breakdown; warm
# proofs.  (The first two calls of the session also ran perf/msm.py at 2^12..2^24 after, and
# from the checkout's root, the branch's base, before: perf/RESULTS.md.)
set -o pipefail
root=$PWD
new=$root/.wt/h15small
out=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 GROTH16_KERNEL_CACHE=$new/.kcache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
python3 "$new/scripts/carry_kernels.py" install "$new/.kcache" base="$root" new="$new" 2>&1 | tee "$out/carry.log"
cd "$new"
export PYTHONPATH=/tmp/site:$new
SECONDS=0
timeout ${T_TESTS:-50} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_msm.py tests/test_gpu_msm_engine.py \
  tests/test_gpu_kernels.py -k "${K_TESTS:-msm or batch or proof}" 2>&1 | tee "$out/tests.log" | tail -15
echo "tests: ${SECONDS}s"; SECONDS=0
timeout ${T_SWEEP:-30} python3 perf/msm.py --curves bn128 --repeats 5 --sizes 12,13,14,15,16 --window 9,11,13,15,16 \
  --fix 16:256:8,8:256:4 --json "$out/sweep.json" > "$out/sweep.log" 2>&1; tail -3 "$out/sweep.log"
timeout ${T_SEG:-12} python3 perf/msm.py --curves bn128 --repeats 5 --sizes 12,14,16 --min-segment 2,4,8 --breakdown \
  --json "$out/seg.json" > "$out/seg.log" 2>&1; tail -3 "$out/seg.log"
echo "sweeps: ${SECONDS}s"; SECONDS=0
timeout ${T_SMALL:-25} python3 perf/msm.py --sizes 12,13,14,15,16 --curves bn128,bls12381 --g2 --repeats 5 --breakdown \
  --sets 3 --json "$out/msm_small.json" > "$out/msm_small.log" 2>&1; tail -40 "$out/msm_small.log"
echo "small: ${SECONDS}s"; SECONDS=0
timeout ${T_PROVE:-20} python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu \
  --repeats 5 --workdir /tmp/h15-prove 2>&1 | tee "$out/prove.log" | tail -5
echo "prove: ${SECONDS}s"
