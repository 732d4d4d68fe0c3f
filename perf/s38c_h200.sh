#!/usr/bin/env bash
# Session 38, call 3 (carry [".whl", ".kcache"]): (1) the host tier's proofs two at once (copy stream per compute
# slot): its GPU tests and jobs of 10 partitions of a BN254 2^22 key forced onto the host tier at 16 GiB with one
# slot and with auto; (2) a lone proof with B2 on its own stream from the start and the front beside (the small
# path, GROTH16_B2_BESIDE=1) against the default one-stream path, at BN254 2^18-2^22 and BLS12-381 2^20, in turns.
#   OUT=/tmp/out bash perf/s38c_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) host tier GPU tests, compute_share"
python3 -m pytest -q -rf tests/test_gpu_host_tier.py tests/test_compute_share.py -p no:cacheprovider 2>&1 | tail -3
for spec in "bn128 18" "bn128 20" "bls12381 20" "bn128 22"; do
  set -- $spec
  bench_key "$1" "$2" /tmp/k_$1_$2 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1
done
D=/tmp/k_bn128_22
for slots in 1 auto 1 auto; do
  echo "== $(date +%T) BN254 2^22 on the host tier at 16 GiB: 10 partitions, 2 in flight, 2 jobs, compute slots $slots"
  timeout 90 python3 perf/c2.py --zkey $D/bench.zkey --wtns $D/bench.wtns --partitions 10 --jobs 2 --concurrency 2 \
    --budgets 16GiB --modes split --tier host --synthesis-workers 8 --compute-slots $slots \
    --json "$OUT/host.jsonl" 2>&1 | tail -1
done
for spec in "bn128 18" "bn128 20" "bls12381 20" "bn128 22"; do
  set -- $spec
  D=/tmp/k_$1_$2
  for beside in default 1 default 1; do
    [ $SECONDS -gt 540 ] && { echo "(out of time: skipped)"; break; }
    echo "== $(date +%T) $1 2^$2 lone proofs, GROTH16_B2_BESIDE=$beside"
    if [ $beside = default ]; then unset GROTH16_B2_BESIDE; else export GROTH16_B2_BESIDE=$beside; fi
    timeout 60 python3 perf/prove.py --files $D/bench.zkey $D/bench.wtns --repeats 9 --workdir /tmp/pw 2>&1 |
      grep '^{' | tail -1 | tee -a "$OUT/lone.jsonl" | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); \
print({k: v for k, v in r.items() if k == 'proof ms' or k == 'gpu sum ms' or k.startswith(('gpu_', 'side_'))})"
  done
  unset GROTH16_B2_BESIDE
done
echo "== $(date +%T) done"
