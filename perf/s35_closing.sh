#!/usr/bin/env bash
# Session 35's closing figures (carry [".whl", ".kcache", ".wt/base"]; .wt/base = `git archive ddcebc4 engine
# cuda_kernels scheduler cli.py`, stop 34's tree), after scripts/final_h200.sh STEPS="tests big" (call 2):
# the cold CLI in turns beside stop 34's tree as the image has it (numpy without bytecode,
# PYTHONDONTWRITEBYTECODE=1: the new tree keeps its bytecode in ~/.cache/groth16-engine/pycache), runs 0.5 s apart
# and back to back; perf/cli_start.py's floor rows; warm proofs (issue 13's sizes); throughput at the 2^14 and
# 2^16 domains (perf/t13tput_final.sh); the 2^24 BN254 warm proof.
#   OUT=/tmp/out bash perf/s35_closing.sh
set -u
. perf/s31_env.sh
W=/tmp/s35
mkdir -p $W
python3 perf/cli_start.py --runs 1 --workdir /tmp/cs 2>&1 | grep -E "^\| (python|prove)"
python3 -m engine export-vkey /tmp/cs/bench.zkey /tmp/cs/vkey.json
echo "== $(date +%T) cold CLI in turns, as the image has it, runs 0.5 s apart"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --gap 0.5 --out /tmp/ab \
  base=.wt/base new=. 2>&1 | head -40
echo "== $(date +%T) cold CLI in turns, as the image has it, back to back"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --out /tmp/ab1 \
  base=.wt/base new=. 2>&1 | head -5
echo "== $(date +%T) floor rows and the new tree's cold CLI, as the image has it (cli_start byte-compiles the tree)"
python3 perf/cli_start.py --runs 7 --workdir /tmp/cs 2>&1 | grep -E "^\| "
cp /tmp/ab/new-proof.json /tmp/cs/new-proof.json; cp /tmp/ab/new-public.json /tmp/cs/new-public.json
tar czf $OUT/cli.tgz -C /tmp/cs vkey.json new-proof.json new-public.json
echo "== $(date +%T) warm proofs"
timeout 150 python3 perf/prove.py --log-constraints 13,16,20,22 --curves bn128 --backend gpu --repeats 5 \
  --workdir $W/pp --json $OUT/prove_bn.json 2>&1 | tail -7
timeout 60 python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 --workdir $W/pp \
  --json $OUT/prove_bls.json 2>&1 | tail -3
rm -rf $W/pp
echo "== $(date +%T) throughput"
OUT=$OUT W=$W timeout 70 bash perf/t13tput_final.sh > /dev/null 2>&1; cat $OUT/t13tput_final.log
echo "== $(date +%T) 2^24 BN254: bench circuit, setup --backend gpu, warm proofs"
timeout 40 python3 -m engine bench-circuit --constraints 16777216 --curve bn128 --quiet $W/b24 &&
  timeout 120 python3 -m engine setup --backend gpu $W/b24/bench.r1cs $W/b24/bench.zkey --quiet 2>&1 | grep -v DEVELOPMENT
rm -f $W/b24/bench.r1cs
timeout 90 python3 perf/prove.py --files $W/b24/bench.zkey $W/b24/bench.wtns --backend gpu --repeats 3 \
  --json $OUT/prove_24.json 2>&1 | tail -4
echo "== $(date +%T) done"
