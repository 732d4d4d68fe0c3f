#!/usr/bin/env bash
# Issue 18's job shape at 2^K on the H200 (the environment of scripts/final_h200.sh: cwd = the repo root,
# PYTHONPATH and GROTH16_KERNEL_CACHE set): a BLS12-381 bench circuit of 2^K - 3 constraints (domain 2^K), its
# key by `setup --backend gpu`, then perf/c2.py: jobs of 10 partitions under a 16 GiB budget (split and single
# locking) and on the whole H200 (split); the last proof of each setting and the key's vkey come back for
# snarkjs, in $OUT/c2_K.tgz.   K=22 OUT=/tmp/o bash perf/c2_job_h200.sh   (K=24: about 5 minutes)
set -u
K=${K:-22}
W=${W:-/tmp/fin}/c2_$K; R=$OUT/c2_$K; mkdir -p $W $R
t0=$(date +%s)
python3 -m engine bench-circuit --constraints $(( (1 << K) - 3 )) --curve bls12381 --quiet $W 2>&1 | tail -1
python3 -m engine setup --backend gpu $W/bench.r1cs $W/bench.zkey --quiet 2>/dev/null && rm -f $W/bench.r1cs
# (c2.py's --proof-dir writes each setting's vkey.json beside its proof: no export-vkey, which read the zkey again)
echo "bench circuit and setup: $(( $(date +%s) - t0 )) s"
for setting in "16GiB split,single" "whole split"; do
  set -- $setting
  timeout ${T_C2:-170} python3 perf/c2.py --zkey $W/bench.zkey --wtns $W/bench.wtns --partitions 10 --jobs 1 --concurrency 1 \
    --budgets $1 --modes $2 --proof-dir $R/proof_$1 --json $R/c2.jsonl 2>&1 | tail -8
done
tar czf $OUT/c2_$K.tgz -C $OUT c2_$K && rm -rf $R
