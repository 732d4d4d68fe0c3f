#!/usr/bin/env bash
# Session 33, call 1 (carry [".whl", ".kcache", ".ntt_ab"]): Shoup twiddles for BLS12-381's Fr and one
# conditional subtraction for both (perf/ntt_ab.py builds: eo3/eo4 = Shoup, mo3/mo4 = Montgomery twiddles),
# the NTT and pipeline GPU tests, the batch-affine accumulation against XYZZ on today's products, and the
# C2 job (10 x 2^24 BLS12-381) on the whole H200 with the faster G1 builds and fold tables.
#   OUT=/tmp/out bash perf/s33a_h200.sh
set -u
GPU_ENV_KCACHE=.kcache . scripts/gpu_env.sh || exit 2
export GROTH16_KEY_CACHE=/tmp/s33/keycache
W=/tmp/s33/c2_24; mkdir -p $W $OUT/c2
( python3 -m engine bench-circuit --constraints $(( (1 << 24) - 3 )) --curve bls12381 --quiet $W >$OUT/bench24.log 2>&1
  touch $W/bench.done ) &
echo "== $(date +%T) NTT builds side by side (forward / inverse+coset ms)"
python3 perf/ntt_ab.py run .ntt_ab --sizes 16,18,20,22,24,26 --repeats 7 2>&1 | tee $OUT/ntt_ab.txt
echo "== $(date +%T) GPU tests: NTT, twiddles, products, pipeline"
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py tests/test_gpu_pipeline.py \
  -k "ntt or twiddle or shoup or product or pipeline" 2>&1 | tail -4
echo "== $(date +%T) MSM phases at proof sizes (BN254 G1, G2; BLS12-381 G1)"
timeout 120 python3 perf/msm.py --sizes 14,16,18,20 --curves bn128,bls12381 --g2 --breakdown --repeats 5 2>&1 | tail -45
echo "== $(date +%T) batch-affine against XYZZ (BN254 G1)"
timeout 120 python3 perf/msm.py --sizes 20,24 --curves bn128 --accumulation xyzz,affine --repeats 5 2>&1 | tail -12
echo "== $(date +%T) C2 10 x 2^24 on the whole H200"
while [ ! -e $W/bench.done ]; do sleep 1; done
t0=$(date +%s)
python3 -m engine setup --backend gpu $W/bench.r1cs $W/bench.zkey --quiet 2>/dev/null && rm -f $W/bench.r1cs
echo "bench circuit and setup done, setup $(( $(date +%s) - t0 )) s"
timeout 200 python3 perf/c2.py --zkey $W/bench.zkey --wtns $W/bench.wtns --partitions 10 --jobs 2 --concurrency 1 \
  --budgets whole --modes split --proof-dir $OUT/c2/proof_whole --json $OUT/c2/c2.jsonl 2>&1 | tail -10
echo "== $(date +%T) NTT suite"
timeout 90 python3 perf/ntt.py --sizes 16,18,20,22,24,26 --repeats 7 2>&1 | tail -30
echo "== $(date +%T) done"
