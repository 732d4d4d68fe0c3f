# Sourced by session 31's device scripts (perf/s31*_h200.sh, from the checkout root, carry [".whl", ".kcache", ...]):
# the carried wheels and kernel builds installed, the environment set; `cli_own_tests` runs the CLI's own tests
# over the real driver and NVRTC (fresh interpreters); `cold_cli_stages` perf/cli_start.py's rows;
# `byte_compile_into PYC [PATH...]` gives numpy (the image's has no bytecode), the carried wheels, this tree, the
# standard library and PATHs bytecode in the prefix PYC; `sudoku_through_cli DIR RUNS` proves each curve's sudoku
# through the CLI RUNS times, printing the wall clock; `build_sppark` builds blst and, in the background (`wait` for
# them), /tmp/sppark_ntt_BN254 and /tmp/sppark_ntt_BLS12_381 (perf/sppark_ntt.cu against the carried .sppark/);
# `bench_key CURVE LOG2 DIR` makes a bench key in DIR unless the machine still has it (session 38's scripts had it
# inline, merged here after they ran); `bench_key_b24bls` the 2^24 BLS12-381 one in /tmp/b24bls.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2
cli_own_tests() {
  echo "== $(date +%T) the CLI's own tests over the real driver and NVRTC (fresh interpreters)"
  python3 -m pytest -q -rf tests/test_cli_device_start.py tests/test_cli_exit.py tests/test_cli_interrupt_edges.py \
    tests/test_cuda_build.py tests/test_pairing_consts.py -k "not every_kernel" -p no:cacheprovider 2>&1 | tail -3
}
cold_cli_stages() {  # perf/cli_start.py's floor rows and stages; its key's vkey and last proof into $OUT
  echo "== $(date +%T) cold CLI: floor rows and this tree's stages"
  python3 perf/cli_start.py --runs 7 --workdir /tmp/cs --json $OUT/cli_start.json 2>&1 | grep -v "^slowest"
  python3 -m engine export-vkey /tmp/cs/bench.zkey $OUT/cs-vkey.json && cp /tmp/cs/proof.json $OUT/cs-proof.json &&
    cp /tmp/cs/public.json $OUT/cs-public.json
}
byte_compile_into() {
  local pyc=$1 nd
  shift
  nd=$(python3 -c "import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))")
  PYTHONPYCACHEPREFIX=$pyc python3 -m compileall -q -j0 "$nd/numpy" /tmp/site "$PWD/engine" "$PWD/cuda_kernels" \
    "$PWD/cli.py" "$PWD/scheduler" "$@" /usr/lib/python3.12 > /dev/null 2>&1
}
sudoku_through_cli() {
  local c i
  for c in bn128 bls12381; do for i in $(seq "$2"); do
    /usr/bin/time -f "$c wall %e s" python3 -m engine prove --backend gpu --quiet "examples/$c/sudoku.zkey" \
      "examples/$c/sudoku.wtns" "$1/sudoku-$c-proof.json" "$1/sudoku-$c-public.json" 2>&1
  done; done
}
build_sppark() {
  local S=$PWD/.sppark f
  ( cd "$S/blst" && ./build.sh > /tmp/blst.log 2>&1 ) || tail -5 /tmp/blst.log
  for f in BN254 BLS12_381; do
    nvcc -O3 -std=c++17 -arch=sm_90 -DFEATURE_$f -DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE -I"$S/sppark" -I"$S/blst/src" \
      -Xcompiler -Wno-unused-function "$PWD/perf/sppark_ntt.cu" -x cu "$S/sppark/util/all_gpus.cpp" -L"$S/blst" -lblst \
      -o /tmp/sppark_ntt_$f > /tmp/nvcc_$f.log 2>&1 &
  done
}
bench_key() {  # curve log2 dir: the bench circuit of 2^log2 - 3 constraints and its key (setup on the GPU), unless there
  [ -s "$3/bench.zkey" ] && return 0
  python3 -m engine bench-circuit --constraints $(( (1 << $2) - 3 )) --curve "$1" --quiet "$3" &&
    python3 -m engine setup --backend gpu "$3/bench.r1cs" "$3/bench.zkey" --quiet 2>/dev/null && rm -f "$3/bench.r1cs"
}
bench_key_b24bls() {  # the 2^24 BLS12-381 bench circuit and its key in /tmp/b24bls, unless there
  [ -s /tmp/b24bls/bench.zkey ] && return 0
  bench_key bls12381 24 /tmp/b24bls && echo "2^24 BLS12-381 key made"
}
