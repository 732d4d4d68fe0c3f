#!/usr/bin/env bash
# Session 36, call 8 (carry [".whl", ".kcache"]): a sparse vector's least chunk (msm.MIN_CHUNK, now carried in the
# chunk argument): 64 / 128 / 256 / 512 on the bench circuit's share and SHA-256's, BLS12-381 G1 and G2 and BN254
# G1 at 2^24, phase by phase; the chunking's host tests.
#   OUT=/tmp/out bash perf/s36g_h200.sh
set -u
. perf/s31_env.sh
python3 -m pytest -q -p no:cacheprovider tests/test_msm_chunking.py 2>&1 | tail -1
echo "== $(date +%T) BLS12-381 2^24 G1 and G2"
timeout 250 python3 perf/msm.py --sizes 24 --curves bls12381 --g2 --g2-curves bls12381 \
  --scalars witness:0.32,0.31,witness:0.59,0.41 --min-chunk 64,128,256,512 --breakdown --repeats 3 \
  --json $OUT/msm_bls.json 2>&1 | grep -A40 "^Phases"
echo "== $(date +%T) BN254 G1 2^24"
timeout 150 python3 perf/msm.py --sizes 24 --curves bn128 --scalars witness:0.32,0.31,witness:0.59,0.41 \
  --min-chunk 64,128,256,512 --breakdown --repeats 3 --json $OUT/msm_bn.json 2>&1 | grep -A20 "^Phases"
echo "== $(date +%T) done"
