#!/usr/bin/env bash
# Session 44's first device call (carry [".whl", ".kcache"]): session 42's pending A/B, BLS12-381's split G1
# accumulation under 3 blocks against the unbounded build at 2^20 and 2^24 (the same points and scalars, results
# compared), then the MSM GPU tests of the bounded builds (test_gpu_msm.py's "b3" cases) against the CPU.
#   OUT=/tmp/out bash perf/s44a_h200.sh
set -u
. perf/s31_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "== $(date +%T) BLS12-381 G1, unbounded (:0) and under 3 blocks (:3)"
timeout 240 python3 perf/msm.py --sizes 20,24 --curves bls12381 --combos "split:default:0,split:default:3" \
  --repeats 5 2>&1 | grep -E "^\||same|differ|rror" | cut -c1-330
echo "== $(date +%T) the bounded builds' MSM tests"
timeout 240 python3 -m pytest -q -rf tests/test_gpu_msm.py -k "b3 or b5" -p no:cacheprovider 2>&1 | tail -4
echo "== $(date +%T) done"
