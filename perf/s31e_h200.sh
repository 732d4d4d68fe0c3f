#!/usr/bin/env bash
# Session 31, call 5 (carry [".whl", ".kcache", ".wt/base"]): the CLI's lone proof waiting for its key's fold
# tables: cold CLI proofs in turns beside the last session's tree; the GPU tests of the CLI and the key tables;
# the proofs come back for snarkjs.   OUT=/tmp/out bash perf/s31e_h200.sh
set -u
. perf/s31_env.sh
mkdir -p /tmp/k14 && python3 -m engine bench-circuit --constraints 16381 --quiet /tmp/k14 &&
  python3 -m engine setup --backend gpu --quiet /tmp/k14/bench.r1cs /tmp/k14/bench.zkey 2>/dev/null
python3 -m engine export-vkey /tmp/k14/bench.zkey $OUT/k14-vkey.json
echo "== $(date +%T) in turns: the last session's tree and this one"
PYTHONPATH=/tmp/site python3 perf/cli_ab.py --zkey /tmp/k14/bench.zkey --wtns /tmp/k14/bench.wtns --runs 9 --out /tmp/ab \
  base=.wt/base final=. 2>&1
cp /tmp/ab/final-proof.json $OUT/k14-proof.json; cp /tmp/ab/final-public.json $OUT/k14-public.json
echo "== $(date +%T) the GPU tests of the CLI and the key tables"
python3 -m pytest -q -m gpu tests/test_cli_startup.py tests/test_key_cache.py tests/test_gpu_key_tables.py \
  tests/test_cli_device_start.py -p no:cacheprovider 2>&1 | tail -2
echo "== $(date +%T) done"
