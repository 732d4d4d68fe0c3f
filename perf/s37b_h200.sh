#!/usr/bin/env bash
# Session 37, call 2 (carry [".whl", ".kcache"]): the regrouping sort where it wins.  Beside the 2^24 BLS12-381
# bench key's making: the MSM GPU tests.  Then: direct against binned+regroup at 2^19-2^22 (where the binned sort
# should start), the bench-share witness vector at 2^24 (A, B1, C as one pass of three sets; G2), the 2^24
# BLS12-381 warm proof with H's sort binned or direct and the witness's binned or direct, and the C2 job.
#   OUT=/tmp/out bash perf/s37b_h200.sh
set -u
( . perf/s31_env.sh > /dev/null 2>&1
  python3 -m engine bench-circuit --constraints $(( (1 << 24) - 3 )) --curve bls12381 --quiet /tmp/b24bls &&
  python3 -m engine setup --backend gpu /tmp/b24bls/bench.r1cs /tmp/b24bls/bench.zkey --quiet 2>/dev/null &&
  rm -f /tmp/b24bls/bench.r1cs && echo "2^24 BLS12-381 key made" ) > /tmp/b24bls.log 2>&1 &
. perf/s31_env.sh
echo "== $(date +%T) MSM GPU tests beside the key's making"
timeout 400 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_msm.py tests/test_gpu_msm_sort.py \
  tests/test_gpu_msm_engine.py 2>&1 | tail -3
wait
grep -v "DEVELOPMENT KEY" /tmp/b24bls.log | tail -2
echo "== $(date +%T) where binned+regroup starts to win"
timeout 150 python3 perf/msm.py --sizes 19,20,21,22 --curves bn128,bls12381 --g2 --g2-curves bn128,bls12381 \
  --sort direct,regroup --repeats 5 --json $OUT/msm_small.json 2>&1 | grep -v "^{" | sed -n '/^| curve/,/^$/p;/DIFFERS\|rror/p'
echo "== $(date +%T) the bench share at 2^24: three G1 sets over one sort, G2"
timeout 150 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --g2-curves bls12381 --scalars witness:0.32,0.31 \
  --sets 3 --sort direct,regroup --breakdown --repeats 3 --json $OUT/msm_share.json 2>&1 | grep -v "^{" \
  | sed -n '/^| curve/,/^$/p;/^Phases/,$p;/DIFFERS\|rror/p'
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
for v in "bn128 0" "bn128,bls12381 0" "bn128,bls12381 1"; do set -- $v
  echo "== $(date +%T) 2^24 BLS12-381 warm proof: binned curves $1, witness bins $2"
  timeout 100 python3 perf/prove.py --files $Z $W --backend gpu --repeats 3 --workdir /tmp/pb24 --binned-curves $1 \
    --witness-bins $2 --json $OUT/prove_$1_$2.json 2>&1 | tail -3
done
for v in "bn128 0" "bn128,bls12381 1"; do set -- $v
  echo "== $(date +%T) C2 10 x 2^24 BLS12-381, whole H200: binned curves $1, witness bins $2"
  timeout 150 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs 1 --concurrency 1 --budgets whole \
    --modes split --binned-curves $1 --witness-bins $2 --proof-dir $OUT/c2_$2 --json $OUT/c2.jsonl 2>&1 | tail -6
done
echo "== $(date +%T) done"
