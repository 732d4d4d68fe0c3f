#!/usr/bin/env bash
# Session 44's closing device call (carry [".whl", ".kcache"]): every GPU test on the session's final tree (the
# GPU backend's failure paths changed on the fake driver, BLS12-381's bounded G1 accumulation now its default), the
# GPU proofs for snarkjs, then warm proofs (BN254 2^13-2^22, BLS12-381 2^20 on the bounded default).
#   OUT=/tmp/out bash perf/s44b_h200.sh
set -u
OUT=$OUT STEPS="tests prove" HOST_SPLIT_SIZES="" bash scripts/final_h200.sh > /dev/null 2>&1
cat $OUT/log
