#!/usr/bin/env bash
# Session 42, call 5 (carry [".whl", ".kcache", ".kcache_exp", ".wt/exp"]): two more bounded accumulations built in a
# scratch tree (.wt/exp: this commit's engine with kernels.cu's MSM_ACCUMULATE_BOUNDED(g1s, MSM1S, 3) for BLS12-381
# and (g2e, MSM2E, 4) for BN254, msm_builds.BOUNDED_KERNELS listing them; kernels built here into .kcache_exp):
# BLS12-381's split G1 (184 registers, 2 blocks of 128 an SM) under 3 blocks, BN254's even/odd G2 (154 registers,
# 3 blocks) under 4, each against its unbounded build over the same points and scalars (column result).
#   OUT=/tmp/out bash perf/s42e_h200.sh
set -u
. perf/s31_env.sh
python3 scripts/carry_kernels.py install .kcache_exp exp="$PWD/.wt/exp" 2>&1 | tail -2
cd .wt/exp
export PYTHONPATH=/tmp/site:$PWD GROTH16_KERNEL_CACHE=$OLDPWD/.kcache_exp
echo "== $(date +%T) BLS12-381 G1: split, split under 3 blocks"
timeout 200 python3 perf/msm.py --sizes 20,24 --curves bls12381 --combos "split:default:0,split:default:3" \
  --repeats 5 2>&1 | grep -E "^\||differs|bounded" | cut -c1-330
echo "== $(date +%T) BN254 G2: eo, eo under 4 blocks"
timeout 200 python3 perf/msm.py --sizes 20,24 --g2-only --g2-curves bn128 --combos "eo:default:0,eo:default:4" \
  --repeats 5 2>&1 | grep -E "^\||differs|bounded" | cut -c1-330
echo "== $(date +%T) done"
