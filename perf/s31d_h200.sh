#!/usr/bin/env bash
# Session 31, closing call (carry [".whl", ".kcache", ".wt/base"]; .wt/base = `git archive b10075e engine
# cuda_kernels scheduler cli.py`): the final tree's cold CLI (perf/cli_start.py: floor rows, stages), in turns
# beside the last session's tree (perf/cli_ab.py), the sudoku examples through the CLI; every GPU test and the CLI's
# own tests over the real driver; the proofs come back for snarkjs.   OUT=/tmp/out bash perf/s31d_h200.sh
set -u
. perf/s31_env.sh
cold_cli_stages
echo "== $(date +%T) in turns: the last session's tree and this one"
PYTHONPATH=/tmp/site python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 9 --out /tmp/ab \
  base=.wt/base final=. 2>&1
echo "== $(date +%T) sudoku through the CLI, both curves (three runs each)"
for c in bn128 bls12381; do for i in 1 2 3; do
  /usr/bin/time -f "$c wall %e s" python3 -m engine prove --backend gpu --quiet examples/$c/sudoku.zkey \
    examples/$c/sudoku.wtns $OUT/sudoku-$c-proof.json $OUT/sudoku-$c-public.json 2>&1
done; done
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -c 1200 $OUT/log
cli_own_tests
echo "== $(date +%T) done"
