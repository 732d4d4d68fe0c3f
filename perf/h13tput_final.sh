#!/usr/bin/env bash
# h13tput's figures for the closing device call (about 45 s; BN254 kernels ready, the environment of
# scripts/final_h200.sh: PYTHONPATH, GROTH16_KERNEL_CACHE): throughput of batched proofs (issue 13 item 5)
# with every proof checked on the device: perf/sweep.py at the 2^14 domain (8189 constraints, 96 proofs,
# 32 in flight, 1 and 2 compute slots) and at the 2^16 domain (32765 constraints, 64 proofs), and one
# batch's phases at k = 16 (perf/batch_phases.py: CUDA events, device ms and proofs/s of batches back to back).
# Keys made here by bench-circuit and setup --backend gpu (a few seconds each).
#   OUT=/tmp/out bash perf/h13tput_final.sh      (log: $OUT/h13tput_final.log)
set -u
K=${W:-/tmp}/h13tf
mkdir -p "$K" "$OUT"
timeout 55 bash -c "
( python3 -m engine bench-circuit --constraints 32765 --curve bn128 --quiet $K/bn128_32765 >/dev/null 2>&1 ) &
python3 perf/batch_phases.py --constraints 8189 --batches 16 --repeats 5 --workdir $K | tail -3
python3 perf/sweep.py --backend gpu --zkey $K/bn128_8189/bench.zkey --wtns $K/bn128_8189/bench.wtns --proofs 96 \
  --concurrency 32 --slots 1,2 --modes split --out $K/s14 | grep -A4 '^| mode'
wait
python3 -m engine setup --backend gpu $K/bn128_32765/bench.r1cs $K/bn128_32765/bench.zkey --quiet >/dev/null 2>&1
python3 perf/sweep.py --backend gpu --zkey $K/bn128_32765/bench.zkey --wtns $K/bn128_32765/bench.wtns --proofs 64 \
  --concurrency 32 --slots 1,2 --modes split --out $K/s16 | grep -A4 '^| mode'
" 2>&1 | tee "$OUT/h13tput_final.log"
rm -rf "$K"
