#!/usr/bin/env bash
# Session 34's closing call (carry [".whl", ".kcache", ".wt/base"]; .wt/base = `git archive 5a02777 engine
# cuda_kernels scheduler cli.py`): the cold CLI in turns beside the last session's tree, as the image has it
# (numpy without bytecode, back to back) and with every module byte-compiled (PYTHONPYCACHEPREFIX, runs 0.5 s
# apart); the floor rows byte-compiled; the CLI's own tests; every GPU test and the GPU proofs for snarkjs.
#   OUT=/tmp/out bash perf/s34_closing.sh
set -u
. perf/s31_env.sh
PYC=/tmp/pyc
byte_compile_into $PYC $PWD/.wt/base
python3 perf/cli_start.py --runs 1 --workdir /tmp/cs 2>&1 | grep -E "^\| (python|prove)"
python3 -m engine export-vkey /tmp/cs/bench.zkey /tmp/cs/vkey.json
echo "== $(date +%T) in turns, as the image has it (numpy compiled from source by every process), back to back"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --out /tmp/ab \
  base=.wt/base final=. 2>&1 | head -6
echo "== $(date +%T) in turns, every module byte-compiled, runs 0.5 s apart"
PYTHONPYCACHEPREFIX=$PYC python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 \
  --gap 0.5 --out /tmp/ab2 base=.wt/base final=. 2>&1 | head -40
echo "== $(date +%T) floor rows, byte-compiled"
PYTHONPYCACHEPREFIX=$PYC python3 perf/cli_start.py --runs 5 --workdir /tmp/cs 2>&1 | grep -E "^\| "
cp /tmp/ab2/final-proof.json /tmp/cs/final-proof.json; cp /tmp/ab2/final-public.json /tmp/cs/final-public.json
tar czf $OUT/cli.tgz -C /tmp/cs vkey.json final-proof.json final-public.json
cli_own_tests
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -c 1200 $OUT/log
echo "== $(date +%T) done"
