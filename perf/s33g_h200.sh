#!/usr/bin/env bash
# Session 33, G2 over the split form, second try (carry [".whl", ".kcache"]): the Fq2 product's 2N-word addition
# in C++ and before c0's reduction; its pieces and the product on edge and random operands (perf/s33f_debug.py),
# the split builds' GPU tests, then G2 MSMs and fold tables, even/odd against split.
#   OUT=/tmp/out bash perf/s33g_h200.sh
set -u
GPU_ENV_KCACHE=.kcache . scripts/gpu_env.sh >/dev/null 2>&1 || exit 2
echo "== $(date +%T) Fq2 split product, pieces and operator*"
timeout 60 python3 perf/s33f_debug.py bls12381,bn128 2>&1 | cut -c1-300 | tail -12
echo "== $(date +%T) GPU tests of the split builds"
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py tests/test_gpu_msm.py \
  -k "split or fq2 or product_builds or fold_table" 2>&1 | tail -6
echo "== $(date +%T) G2 MSMs: even/odd against split"
timeout 120 python3 perf/msm.py --g2-only --g2-curves bls12381,bn128 --sizes 16,20,24 --product eo,split --repeats 5 \
  2>&1 | grep "^|" | cut -c1-200
echo "== $(date +%T) fold tables (G2 split against even/odd)"
timeout 60 python3 perf/tables.py --log-n 20 --builds eo,split 2>&1 | tail -8
echo "== $(date +%T) done"
