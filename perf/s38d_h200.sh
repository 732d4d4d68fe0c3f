#!/usr/bin/env bash
# Session 38, call 4 (carry [".whl", ".kcache"]): larger plans granted B2 on its own stream (KeyFootprint.b2_stream)
# under the default two compute slots: jobs of 10 partitions, 2 in flight, with the grant (default) and without it
# (GROTH16_B2_BESIDE=0), in turns, at BN254 2^20 and 2^22 and BLS12-381 2^20; then lone proofs with the grant.
#   OUT=/tmp/out bash perf/s38d_h200.sh
set -u
. perf/s31_env.sh
for spec in "bn128 20 8" "bls12381 20 8" "bn128 22 4"; do
  set -- $spec
  D=/tmp/k_$1_$2
  bench_key "$1" "$2" "$D" 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1
  for b2 in default 0 default 0; do
    echo "== $(date +%T) $1 2^$2: 10 partitions, 2 in flight, $3 jobs, auto slots, GROTH16_B2_BESIDE=$b2"
    if [ $b2 = default ]; then unset GROTH16_B2_BESIDE; else export GROTH16_B2_BESIDE=$b2; fi
    timeout 60 python3 perf/c2.py --zkey "$D/bench.zkey" --wtns "$D/bench.wtns" --partitions 10 --jobs "$3" \
      --concurrency 2 --budgets whole --modes split --synthesis-workers 8 --json "$OUT/b2.jsonl" 2>&1 | tail -1
  done
  unset GROTH16_B2_BESIDE
  echo "== $(date +%T) $1 2^$2 lone proofs, the default (granted)"
  timeout 60 python3 perf/prove.py --files $D/bench.zkey $D/bench.wtns --repeats 9 --workdir /tmp/pw 2>&1 |
    grep '^{' | tail -1 | tee -a "$OUT/lone.jsonl" | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); \
print({k: v for k, v in r.items() if k == 'proof ms' or k == 'gpu sum ms' or k.startswith(('gpu_', 'side_'))})"
done
echo "== $(date +%T) done"
