#!/usr/bin/env bash
# Session 27's third measuring call (checkout root, carry [".whl", ".kcache"]): B2's MSM at a 2^14-domain proof's
# size (BN254 G2, 2^13 points), the longest chain of a small proof, against its windows, batch-affine rounds and
# fix-up classes (perf/msm.py, random scalars and a 0/1 witness's shares); then the 2^13 proof with the products
# beside (the default for a proof alone) and without, alternating, twice (perf/prove.py --files, medians of 9),
# and its time line.
#   OUT=/tmp/out bash perf/s27c_h200.sh
set -u
W=${W:-/tmp/fin}
GPU_ENV_CURVES=bn128 . scripts/gpu_env.sh || exit 2
timeout 30 python3 perf/prove.py --log-constraints 13 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| bn128"
d=$W/pp/bn128_2^13
for round in 1 2; do
  for p in default 0; do
    echo "== round $round GROTH16_PRODUCTS_BESIDE=$p 2^13"
    if [ $p = default ]; then unset GROTH16_PRODUCTS_BESIDE; else export GROTH16_PRODUCTS_BESIDE=$p; fi
    timeout 12 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" --backend gpu --repeats 9 2>&1 \
      | grep "^| curve\|^| bn128"
  done
done
unset GROTH16_PRODUCTS_BESIDE
timeout 12 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -27
for what in "--window 8,10,11,12,13" "--accumulation xyzz,affine" "--fix 16:256:8,8:128:4,16:64:2,4:256:4,32:256:16" \
            "--min-segment 2,4"; do
  echo "== G2 2^13 $what"
  timeout 40 python3 perf/msm.py --sizes 13 --g2-only --scalars random,witness:0.59,0.41 --repeats 5 $what 2>&1 \
    | grep "^| bn128\|^| curve"
done
timeout 30 python3 perf/msm.py --sizes 13 --g2-only --breakdown --scalars witness:0.59,0.41 --repeats 5 2>&1 | tail -4
