#!/usr/bin/env bash
# Session 32, call 2 (carry [".whl", ".kcache"]), as it ran at commit e7ed40a (its combos name builds and sorts
# removed since: split:direct:4, binned/P): the split product (Karatsuba / squarings, then REDC;
# one reduction for a difference of products) against the even/odd one, and the binned sort's per-bin
# counting sort in shared memory against the direct sort: GPU tests first, then field products, fold
# tables and MSMs.   OUT=/tmp/out bash perf/s32b_h200.sh
set -u
GPU_ENV_KCACHE=.kcache . scripts/gpu_env.sh || exit 2
step() { echo "== $(date +%T) $*"; }
step "GPU tests: split products and MSM builds, the binned sort"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py -k "split or product" 2>&1 | tail -3
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_msm.py -k "product_builds or binned_sort or bounded" \
  2>&1 | tail -6
step "field products: eo against split"
python3 perf/field_fq.py 2>&1 | tee $OUT/field_fq.txt
step "fold tables: plain against split"
python3 perf/tables.py --log-n 20 2>&1 | tail -5
step "BN254 G1 MSM: eo / split, direct / binned"
python3 perf/msm.py --sizes 16,20,22,24 --curves bn128 --repeats 5 --json $OUT/msm_g1.json \
  --combos eo:direct,split:direct,split:direct:4,eo:binned,split:binned,split:binned/2,split:binned/4 2>&1 | grep -v "^{"
step "BN254 G2 and BLS12-381 G1 MSM: the default build / split"
python3 perf/msm.py --sizes 16,20,24 --curves bn128 --g2-only --repeats 5 --json $OUT/msm_g2.json \
  --combos default:auto,split:auto 2>&1 | grep -v "^{"
python3 perf/msm.py --sizes 16,20,24 --curves bls12381 --repeats 5 --json $OUT/msm_bls.json \
  --combos default:auto,split:auto,split:binned 2>&1 | grep -v "^{"
step "done"
