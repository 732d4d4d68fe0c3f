#!/usr/bin/env bash
# Regenerates tests/fixtures/interop/{bn128,bls12381}/ from
# tests/circuits/power_table.circom (4097 constraints, domain 2^13): the
# snarkjs artifacts of the interop tests' large circuit, committed because
# `powersoftau prepare phase2` at power 13 takes minutes (too slow for CI).
# Run `npm ci` first.  Takes ~15 min on 2 cores the first time (ptau cached
# in .cache/ptau afterwards).
set -euo pipefail
source "$(dirname "$0")/snarkjs_common.sh"

for curve in bn128 bls12381; do
  dest=$repo/tests/fixtures/interop/$curve
  build tests/circuits/power_table.circom "$curve" "$repo/tests/circuits/power_table.input.json" "$dest" 13
done
