#!/usr/bin/env bash
# Session 30, call 3 (carry [".whl", ".kcache"]): the cold CLI with the device started beside the imports and
# 8 work queues; the CLI's GPU tests; the proofs it wrote come back for snarkjs.  OUT=/tmp/out bash perf/s30b_h200.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2
echo "== $(date +%T) cold CLI"
python3 perf/cli_start.py --runs 5 --workdir /tmp/cs 2>&1
python3 -m engine export-vkey /tmp/cs/bench.zkey $OUT/cs-vkey.json --quiet && cp /tmp/cs/proof.json $OUT/cs-proof.json &&
  cp /tmp/cs/public.json $OUT/cs-public.json
echo "== $(date +%T) sudoku through the CLI, both curves"
for c in bn128 bls12381; do
  /usr/bin/time -f "$c wall %e s" python3 -m engine prove --backend gpu --verbose --quiet examples/$c/sudoku.zkey \
    examples/$c/sudoku.wtns $OUT/sudoku-$c-proof.json $OUT/sudoku-$c-public.json 2>&1 | grep -E "wall|total so far|wait for|device \(|context|close backend"
done
echo "== $(date +%T) the CLI's GPU tests"
python3 -m pytest -q -m gpu tests/test_cli_startup.py tests/test_key_cache.py tests/test_gpu_failure_paths.py \
  tests/test_gpu_guard.py tests/test_cli_device_start.py -p no:cacheprovider 2>&1 | tail -4
echo "== $(date +%T) done"
