#!/usr/bin/env bash
# Session 42, call 4 (carry [".whl", ".kcache"]), on the final code (BN254's G1 accumulation bounded to 4 blocks by
# default): the bound at proof sizes (2^12-2^18, unbounded "0" against the default, the same points and scalars),
# 2^20 proofs with and without it in turns (the unbounded run sets msm_builds.ACCUMULATE_BOUNDS = {} in the
# process), then every GPU test and the GPU proofs for snarkjs (scripts/final_h200.sh).
#   OUT=/tmp/out bash perf/s42d_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) BN254 G1 at proof sizes, unbounded and b4"
timeout 120 python3 perf/msm.py --sizes 12,14,16,18 --curves bn128 --combos "split_inline:default:0,split_inline:default" \
  --repeats 9 2>&1 | grep -E "^\|" | cut -c1-250
UNBOUNDED="import runpy, sys
from engine.backends.gpu import msm_builds
msm_builds.ACCUMULATE_BOUNDS = {}
sys.argv = ['perf/prove.py', *sys.argv[1:]]; sys.path.insert(0, 'perf')
runpy.run_path('perf/prove.py', run_name='__main__')"
for round in 1 2; do
  echo "== $(date +%T) 2^20 BN254 proofs, round $round: b4 (default), then unbounded"
  timeout 100 python3 perf/prove.py --log-constraints 20 --curves bn128 2>&1 | tail -2
  timeout 100 python3 -c "$UNBOUNDED" --log-constraints 20 --curves bn128 2>&1 | tail -2
done
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -12 $OUT/log
