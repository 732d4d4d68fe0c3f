#!/usr/bin/env bash
# Session 34, call 2 (carry [".whl", ".kcache", ".wt/base"]; .wt/base = `git archive 5a02777 engine cuda_kernels
# scheduler cli.py`, the last session's tree): the cold CLI's floor rows and stages (perf/cli_start.py), in turns
# beside the last session's tree, and this tree with the exit's hand-off off and with OpenBLAS at 16 threads
# (perf/cli_ab.py); prove's imports; then every GPU test and the GPU proofs for snarkjs (scripts/final_h200.sh).
#   OUT=/tmp/out bash perf/s34b_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) cold CLI: floor rows and stages"
python3 perf/cli_start.py --runs 7 --workdir /tmp/cs --json $OUT/cli_start.json 2>&1
echo "== $(date +%T) in turns: the last session's tree, this one, this one without the hand-off, with 16 BLAS threads"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --out /tmp/ab \
  base=.wt/base final=. nohandoff=.:GROTH16_EXIT_HANDOFF=0 blas16=.:OPENBLAS_NUM_THREADS=16 2>&1
python3 -X importtime -m engine prove --backend gpu --quiet /tmp/cs/bench.zkey /tmp/cs/bench.wtns /tmp/it-p.json \
  /tmp/it-q.json 2> $OUT/importtime.txt
python3 -m engine export-vkey /tmp/cs/bench.zkey /tmp/cs/vkey.json
echo "== $(date +%T) sudoku through the CLI, three runs a curve"
sudoku_through_cli /tmp/cs 3
tar czf $OUT/cli.tgz -C /tmp/cs vkey.json proof.json public.json sudoku-bn128-proof.json sudoku-bn128-public.json \
  sudoku-bls12381-proof.json sudoku-bls12381-public.json
cli_own_tests
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -c 1500 $OUT/log
echo "== $(date +%T) done"
