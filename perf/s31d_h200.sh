#!/usr/bin/env bash
# Session 31, closing call (carry [".whl", ".kcache", ".wt/base"]; .wt/base = `git archive b10075e engine
# cuda_kernels scheduler cli.py`): the final tree's cold CLI (perf/cli_start.py: floor rows, stages), in turns
# beside the last session's tree (perf/cli_ab.py), the sudoku examples through the CLI; every GPU test and the CLI's
# own tests over the real driver; the proofs come back for snarkjs.   OUT=/tmp/out bash perf/s31d_h200.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2
echo "== $(date +%T) cold CLI: floor rows and this tree's stages"
python3 perf/cli_start.py --runs 7 --workdir /tmp/cs --json $OUT/cli_start.json 2>&1 | grep -v "^slowest"
python3 -m engine export-vkey /tmp/cs/bench.zkey $OUT/cs-vkey.json && cp /tmp/cs/proof.json $OUT/cs-proof.json &&
  cp /tmp/cs/public.json $OUT/cs-public.json
echo "== $(date +%T) in turns: the last session's tree and this one"
PYTHONPATH=/tmp/site python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 9 --out /tmp/ab \
  base=.wt/base final=. 2>&1
echo "== $(date +%T) sudoku through the CLI, both curves (three runs each)"
for c in bn128 bls12381; do for i in 1 2 3; do
  /usr/bin/time -f "$c wall %e s" python3 -m engine prove --backend gpu --quiet examples/$c/sudoku.zkey \
    examples/$c/sudoku.wtns $OUT/sudoku-$c-proof.json $OUT/sudoku-$c-public.json 2>&1
done; done
echo "== $(date +%T) every GPU test"
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh > /dev/null 2>&1; tail -c 1200 $OUT/log
echo "== $(date +%T) the CLI's own tests over the real driver and NVRTC (fresh interpreters)"
python3 -m pytest -q -rf tests/test_cli_device_start.py tests/test_cli_exit.py tests/test_cli_interrupt_edges.py \
  tests/test_cuda_build.py tests/test_pairing_consts.py -k "not every_kernel" -p no:cacheprovider 2>&1 | tail -3
echo "== $(date +%T) done"
