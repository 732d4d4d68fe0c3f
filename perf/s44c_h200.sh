#!/usr/bin/env bash
# Session 44, call 3 (carry [".whl", ".kcache"]): issue 18's C2 job (10 x 2^24 BLS12-381, perf/c2.py as session 39
# ran it) on BLS12-381's new G1 default (its accumulation under 3 blocks), split and single under 16 GiB and split
# on the whole device.  On an H100 its "whole" row is not the whole-H200 row.
#   OUT=/tmp/out bash perf/s44c_h200.sh
set -u
. perf/s31_env.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
t0=$(date +%s)
bench_key_b24bls 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1
echo "key made in $(( $(date +%s) - t0 )) s"
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
c2() {  # label, budget, then c2.py's flags
  local label=$1 budget=$2; shift 2
  echo "== $(date +%T) C2 $budget: $label"
  timeout 120 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs 3 --concurrency 2 --budgets $budget \
    --synthesis-workers 8 --proof-dir $OUT/c2_$label --json $OUT/c2.jsonl "$@" 2>&1 | tail -3
}
c2 split_16 16GiB --modes split
c2 single_16 16GiB --modes single
c2 split_whole whole --modes split
python3 -m engine export-vkey $Z $OUT/c2-vkey.json 2>&1 | tail -1
tar czf $OUT/all.tgz -C $OUT $(cd $OUT && ls -d c2_* c2-vkey.json 2>/dev/null) 2>/dev/null
echo "== $(date +%T) done"
