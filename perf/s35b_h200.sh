#!/usr/bin/env bash
# Session 35, NTT blocks (carry [".whl", ".kcache", ".wt/base"]; .wt/base = `git archive <the commit before the
# change> engine cuda_kernels scheduler cli.py perf pyproject.toml`): a lone transform's passes in at least
# MIN_PASS_BLOCKS blocks against 256-thread blocks always (perf/ntt.py --min-blocks 0), alternating; the NTT GPU
# tests; warm small proofs of both trees, alternating.
#   OUT=/tmp/out bash perf/s35b_h200.sh
set -u
. perf/s31_env.sh
for round in 1 2; do
  for mb in 0 264; do
    echo "== $(date +%T) perf/ntt.py --min-blocks $mb (round $round)"
    python3 perf/ntt.py --sizes 12,13,14,15,16,17,18,19,20,21,22 --repeats 9 --min-blocks $mb --json $OUT/ntt_${mb}_${round}.json \
      2>&1 | python3 -c "
import sys, ast
for line in sys.stdin:
    if line.startswith('{'):
        r = ast.literal_eval(line)
        print(r['curve'], r['log2 n'], 'NTT', r['NTT ms'], 'queued', r['NTT queued ms'], 'iNTT+coset', r['iNTT+coset ms'])
"
  done
done
echo "== $(date +%T) NTT GPU tests"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py -k "ntt" tests/test_gpu_batch.py tests/test_gpu_plan.py 2>&1 | tail -3
for round in 1 2; do
  for tree in .wt/base .; do
    echo "== $(date +%T) warm proofs, $tree (round $round)"
    timeout 90 python3 $tree/perf/prove.py --log-constraints 13,15,16 --curves bn128 --backend gpu --repeats 9 \
      --workdir /tmp/pp_$round 2>&1 | grep "^| bn128"
  done
done
echo "== $(date +%T) done"
