#!/usr/bin/env bash
# Session 32, call 3 (carry [".whl", ".kcache"]): the split form reworked (the even/odd product, split
# squarings, one reduction for a difference of products and for each half of an Fq2 product), the fold
# tables' builds, the binned sort as it was before the per-bin sort: GPU tests, then products, tables, MSMs.
#   OUT=/tmp/out bash perf/s32c_h200.sh
set -u
GPU_ENV_KCACHE=.kcache . scripts/gpu_env.sh || exit 2
step() { echo "== $(date +%T) $*"; }
step "GPU tests: split products and MSM builds, table builds, the binned sort"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py -k "split or product" 2>&1 \
  | tee $OUT/tests.txt | tail -3
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_msm.py \
  -k "product_builds or binned_sort or bounded or table_builds" 2>&1 | tee -a $OUT/tests.txt | tail -4
step "field products: eo against split"
python3 perf/field_fq.py 2>&1 | tee $OUT/field_fq.txt | tail -20
step "fold tables: plain / eo / split"
python3 perf/tables.py --log-n 20 2>&1 | tee $OUT/tables.txt | tail -13
step "BN254 G1 and G2, BLS12-381 G1 and G2: the default build against split"
python3 perf/msm.py --sizes 16,20,24 --curves bn128 --repeats 5 --json $OUT/msm_g1.json \
  --combos default:auto,split:auto,split:auto:4 2>&1 | grep "^|" | cut -d'|' -f2-5,13-14,17,23-28
python3 perf/msm.py --sizes 16,20,24 --curves bn128,bls12381 --g2-only --g2-curves bn128,bls12381 --repeats 5 \
  --json $OUT/msm_g2.json --combos default:auto,split:auto 2>&1 | grep "^|" | cut -d'|' -f2-5,13-14,17,23-28
python3 perf/msm.py --sizes 16,20,24 --curves bls12381 --repeats 5 --json $OUT/msm_bls.json \
  --combos default:auto,split:auto 2>&1 | grep "^|" | cut -d'|' -f2-5,13-14,17,23-28
step "done"
