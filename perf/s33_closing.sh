#!/usr/bin/env bash
# Session 33's closing call (carry [".whl", ".kcache"]): every GPU test, the GPU proofs for snarkjs and warm proofs
# (scripts/final_h200.sh), then the C2 job (10 x 2^24 BLS12-381) on the whole H200 with the final builds (G2 split
# on BLS12-381, its Shoup twiddles); the 2^24 bench circuit is generated on the CPU beside the tests.
#   OUT=/tmp/out bash perf/s33_closing.sh
set -u
GPU_ENV_KCACHE=.kcache . scripts/gpu_env.sh >/dev/null 2>&1 || exit 2
W=/tmp/s33c/c2_24; mkdir -p $W $OUT/c2
( GROTH16_KEY_CACHE=/tmp/s33c/keycache python3 -m engine bench-circuit --constraints $(( (1 << 24) - 3 )) \
    --curve bls12381 --quiet $W >$OUT/c2/bench24.log 2>&1; touch $W/bench.done ) &
STEPS="tests prove" PROVE_SIZES=13,16,20 PROVE_BLS=1 HOST_SPLIT_SIZES=16 bash scripts/final_h200.sh 2>&1 | tail -40
rm -rf $OUT/r  # in $OUT/all.tgz (the tool returns 8 files at most)
echo "== $(date +%T) C2 10 x 2^24 on the whole H200"
while [ ! -e $W/bench.done ]; do sleep 1; done
export GROTH16_KEY_CACHE=/tmp/s33c/keycache
t0=$(date +%s)
python3 -m engine setup --backend gpu $W/bench.r1cs $W/bench.zkey --quiet 2>/dev/null && rm -f $W/bench.r1cs
echo "setup $(( $(date +%s) - t0 )) s"
timeout 200 python3 perf/c2.py --zkey $W/bench.zkey --wtns $W/bench.wtns --partitions 10 --jobs 2 --concurrency 1 \
  --budgets whole --modes split --proof-dir $OUT/c2/proof_whole --json $OUT/c2/c2.jsonl 2>&1 | tail -4
tar czf $OUT/c2.tgz -C $OUT c2 && rm -rf $OUT/c2
echo "== $(date +%T) done"
