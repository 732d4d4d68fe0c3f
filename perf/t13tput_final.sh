#!/usr/bin/env bash
# t13tput's figures for the closing device call (about 35 s; BN254 kernels ready, the environment of
# scripts/final_h200.sh: cwd = repo root, PYTHONPATH, GROTH16_KERNEL_CACHE, OUT): throughput of batched
# proofs (issue 13 item 5: >= 500 proofs/s at the 2^14 domain, >= 250 at 2^16), every proof checked on
# the device: perf/sweep.py at the 2^14 domain (8189 constraints, 32 in flight, 1 and 2 compute slots;
# 96 proofs as perf/h13tput_final.sh ran it, and 480: the steady part beside the ramp and the drain) and
# at the 2^16 domain (32765 constraints, 64 proofs), then perf/timeline_gaps.py's headline lines.
# Keys made here by bench-circuit and setup --backend gpu (a few seconds each).
#   OUT=/tmp/out bash perf/t13tput_final.sh      (log: $OUT/t13tput_final.log)
set -u
K=${W:-/tmp}/t13tf
mkdir -p "$K" "$OUT"
timeout 58 bash -c "
( python3 -m engine bench-circuit --constraints 32765 --curve bn128 --quiet $K/bn128_32765 >/dev/null 2>&1 &&
  python3 -m engine setup --backend gpu $K/bn128_32765/bench.r1cs $K/bn128_32765/bench.zkey --quiet >/dev/null 2>&1 ) &
python3 -m engine bench-circuit --constraints 8189 --curve bn128 --quiet $K/bn128_8189 >/dev/null 2>&1
python3 -m engine setup --backend gpu $K/bn128_8189/bench.r1cs $K/bn128_8189/bench.zkey --quiet >/dev/null 2>&1
wait
for n in 96 480; do
  python3 perf/sweep.py --backend gpu --zkey $K/bn128_8189/bench.zkey --wtns $K/bn128_8189/bench.wtns --proofs \$n \
    --concurrency 32 --slots 1,2 --modes split --no-plots --out $K/s14_\$n | grep -A4 '^| mode'
  python3 perf/timeline_gaps.py $K/s14_\$n | grep -e '^###' -e 'proofs/s'
done
python3 perf/sweep.py --backend gpu --zkey $K/bn128_32765/bench.zkey --wtns $K/bn128_32765/bench.wtns --proofs 64 \
  --concurrency 32 --slots 1,2 --modes split --no-plots --out $K/s16 | grep -A4 '^| mode'
" 2>&1 | tee "$OUT/t13tput_final.log"
rm -rf "$K"
