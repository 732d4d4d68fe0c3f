#!/usr/bin/env bash
# The device call of brief h15acc (issue 15: the MSM's accumulation and sort), from the device
# tool's checkout root with carry [".whl", ".wt/h15acc"]:   bash .wt/h15acc/perf/h15acc_device.sh
# Kernels come prebuilt (scripts/carry_kernels.py build .kcache base=/work/main new=$PWD).  Steps,
# each bounded (T_* seconds): GPU MSM and proof tests; perf/msm.py with the XYZZ pass's builds
# (product by reference / by value / mixed) and the direct / binned sort, every combination over
# the same data (ref:direct is the code before this branch; the call of perf/RESULTS.md ran the
# branch's first builds with COMBOS=ABI:WAVES:SORT triples, since replaced),
# BN254 G1 2^16..2^26, BLS12-381 G1 and BN254 G2 at 2^24, BN254 G2 2^14..2^16 with the reduction's
# block size; the checkout root's (main's) perf/msm.py at 2^20 and 2^24 as the reference before.
set -o pipefail
root=$PWD
new=$root/.wt/h15acc
out=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 GROTH16_KERNEL_CACHE=$new/.kcache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
python3 "$new/scripts/carry_kernels.py" install "$new/.kcache" base="$root" new="$new" 2>&1 | tee "$out/carry.log" | tail -4
SECONDS=0
COMBOS=${COMBOS:-ref:direct,value:direct,mixed:direct,mixed:binned}
BIG_COMBOS=${BIG_COMBOS:-ref:direct,value:direct,mixed:direct,mixed:binned}
if [ "${SKIP_BEFORE:-0}" = 0 ]; then
  (cd "$root" && PYTHONPATH=/tmp/site:$root timeout ${T_BEFORE:-15} python3 perf/msm.py --curves bn128 --sizes 24 \
    --repeats 5 --json "$out/before.json" > "$out/before.log" 2>&1); tail -4 "$out/before.log"
  echo "before: ${SECONDS}s"; SECONDS=0
fi
cd "$new"
export PYTHONPATH=/tmp/site:$new
timeout ${T_G1:-80} python3 perf/msm.py --curves bn128 --sizes ${SIZES:-16,18,20,22,24,26} --repeats 5 --breakdown \
  --combos "$COMBOS" --json "$out/g1.json" > "$out/g1.log" 2>&1; tail -40 "$out/g1.log"
echo "g1: ${SECONDS}s"; SECONDS=0
timeout ${T_BIG:-40} python3 perf/msm.py --curves bls12381 --g2 --sizes 24 --repeats 5 --combos "$BIG_COMBOS" \
  --json "$out/big.json" > "$out/big.log" 2>&1; tail -14 "$out/big.log"
echo "bls g1 / bn g2 2^24: ${SECONDS}s"; SECONDS=0
timeout ${T_G2S:-15} python3 perf/msm.py --g2-only --sizes 14,15,16 --repeats 5 --reduce-threads 128,256 \
  --combos ref:direct,value:direct --json "$out/g2small.json" > "$out/g2small.log" 2>&1; tail -16 "$out/g2small.log"
echo "g2 small: ${SECONDS}s"; SECONDS=0
timeout ${T_TESTS:-85} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_msm.py tests/test_gpu_msm_engine.py \
  tests/test_gpu_kernels.py -k "${K_TESTS:-msm or batch or proof}" 2>&1 | tee "$out/tests.log" | tail -15
echo "tests: ${SECONDS}s"
tar -C "$out" -czf "$out/h15acc.tgz" $(cd "$out" && ls *.log *.json 2>/dev/null) && echo "tarred"
