#!/usr/bin/env bash
# One device call's worth of acceptance on the GPU machine (the device tool's checkout, with .whl/
# carried): every GPU test, GPU proofs for snarkjs to check back here, and warm proof timings.
#   bash scripts/gpu_acceptance.sh            # writes $OUT/{env,gpu_tests,prove,perf}.log, $OUT/proofs.tgz
# Then here: tar xzf proofs.tgz -C DIR && for each <name>-proof.json: snarkjs groth16 verify <name>-vkey.json ...
set -uo pipefail
out=${OUT:-/tmp/gpu-acceptance}
mkdir -p "$out"
. scripts/gpu_env.sh >"$out/env.log" 2>&1 || { cat "$out/env.log"; exit 2; }
tail -3 "$out/env.log"

# every GPU test (only the GPU files: the service and Ray tests need packages the machine lacks)
files=$(ls tests/test_gpu_*.py tests/test_key_cache.py tests/test_cli_startup.py)
python3 -m pytest -q -p no:cacheprovider -m gpu $files 2>&1 | tee "$out/gpu_tests.log" | tail -25

# proofs made on the GPU, brought back for snarkjs
work=/tmp/acceptance
rm -rf "$work" && mkdir -p "$work/proofs"
{
  for c in bn128 bls12381; do
    cp "examples/$c/verification_key.json" "$work/proofs/sudoku-$c-vkey.json"
    python3 -m engine prove "examples/$c/sudoku.zkey" "examples/$c/sudoku.wtns" \
      "$work/proofs/sudoku-$c-proof.json" "$work/proofs/sudoku-$c-public.json" --backend gpu --quiet
    echo "sudoku $c: exit $?"
  done
  for spec in "bn128 65535" "bls12381 65535"; do
    set -- $spec
    d="$work/b-$1-$2"
    python3 -m engine bench-circuit --constraints "$2" --curve "$1" --quiet "$d" &&
      python3 -m engine setup "$d"/*.r1cs "$d/key.zkey" --curve "$1" --backend gpu --quiet &&
      python3 -m engine export-vkey "$d/key.zkey" "$work/proofs/bench-$1-$2-vkey.json" &&
      python3 -m engine prove "$d/key.zkey" "$d"/*.wtns "$work/proofs/bench-$1-$2-proof.json" \
        "$work/proofs/bench-$1-$2-public.json" --backend gpu --verbose
    echo "bench $1 $2: exit $?"
  done
} >"$out/prove.log" 2>&1
tail -40 "$out/prove.log"
tar czf "$out/proofs.tgz" -C "$work/proofs" .

# warm proofs with verification (perf/prove.py: medians of repeats, GPU stage sums)
timeout 100 python3 perf/prove.py --log-constraints 13,16,20 --curves bn128 --backend gpu --repeats 5 \
  --workdir /tmp/acc-perf 2>&1 | tee "$out/perf.log" | tail -12
