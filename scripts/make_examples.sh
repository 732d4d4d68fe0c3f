#!/usr/bin/env bash
# Regenerates examples/{bn128,bls12381}/ from examples/sudoku.circom with the
# npm packages pinned in package.json (run `npm ci` first): r1cs, wasm,
# input.json, wtns, a contributed zkey (delta != 1), verification_key.json and
# a snarkjs proof.  The zkey comes from a fresh random setup each time.
set -euo pipefail
source "$(dirname "$0")/snarkjs_common.sh"

input=$(mktemp)
trap 'rm -f "$input"' EXIT
cat > "$input" <<'JSON'
{
 "puzzle":   ["1", "0", "0", "4", "0", "0", "1", "0", "0", "1", "0", "0", "4", "0", "0", "1"],
 "solution": ["1", "2", "3", "4", "3", "4", "1", "2", "2", "1", "4", "3", "4", "3", "2", "1"]
}
JSON
for curve in bn128 bls12381; do
  # 240 constraints + 16 public + 1 -> domain 2^8
  build examples/sudoku.circom "$curve" "$input" "$repo/examples/$curve" 8
done
