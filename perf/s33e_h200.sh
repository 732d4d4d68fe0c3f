#!/usr/bin/env bash
# Session 33, G2 over the split form (carry [".whl", ".kcache"]): session 32's Fq2 product restored with its
# 2N-word addition writing its outputs last (and early-clobbered): the GPU tests of the split builds, then G2
# MSMs and fold tables, even/odd against split, then whole proofs with G2 split against G2 even/odd in turns.
#   OUT=/tmp/out bash perf/s33e_h200.sh
set -u
GPU_ENV_KCACHE=.kcache . scripts/gpu_env.sh || exit 2
echo "== $(date +%T) GPU tests of the split builds (Fq2 product, MSM builds, fold tables)"
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py tests/test_gpu_msm.py \
  -k "split or fq2 or product_builds or fold_table" 2>&1 | tail -4
echo "== $(date +%T) G2 MSMs: even/odd against split (same points, tables, scalars)"
timeout 150 python3 perf/msm.py --g2-only --g2-curves bn128,bls12381 --sizes 16,20,24 --product eo,split --repeats 5 \
  2>&1 | grep "^|" | cut -c1-230
echo "== $(date +%T) fold tables"
timeout 90 python3 perf/tables.py --log-n 20 --builds eo,split 2>&1 | tail -8
echo "== $(date +%T) whole proofs, G2 split against even/odd, in turns"
for round in 1 2; do
  for g2 in eo split; do
    echo "round $round, G2 $g2"
    GROTH16_MSM_PRODUCTS=g1=split,g2=$g2 timeout 80 python3 perf/prove.py --log-constraints 16,20 --curves bn128 \
      --backend gpu --repeats 5 --workdir /tmp/s33e/pp 2>&1 | grep "^| bn128"
    GROTH16_MSM_PRODUCTS=g1=split,g2=$g2 timeout 80 python3 perf/prove.py --log-constraints 20 --curves bls12381 \
      --backend gpu --repeats 5 --workdir /tmp/s33e/pp 2>&1 | grep "^| bls12381"
  done
done
echo "== $(date +%T) done"
