#!/usr/bin/env bash
# Session 36, call 6 (carry [".whl", ".kcache"]): where the C2 partition's witness MSMs go (BLS12-381, 2^24, G1 and
# G2): random scalars, the bench circuit's share (about 32% zeros, 31% ones, the rest full values) and SHA-256's
# (59% zeros, 41% ones), phase by phase (perf/msm.py --breakdown).
#   OUT=/tmp/out bash perf/s36e_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) BLS12-381 2^24, G1 and G2"
timeout 400 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --g2-curves bls12381 \
  --scalars random,witness:0.32,0.31,witness:0.59,0.41 --breakdown --repeats 3 --json $OUT/msm.json 2>&1 | grep -v "^{"
echo "== $(date +%T) done"
