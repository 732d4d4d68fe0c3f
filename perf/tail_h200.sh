#!/usr/bin/env bash
# One device call for issue 13's tail figures (the warp-wide pairing code): run from the
# repository root on the GPU machine, with the carried wheels in .whl/ and $OUT set; every
# log goes to $OUT.  BN254's kernels build first and BLS12-381's in the background, so the
# BN254 tests and proofs run while BLS12-381 still compiles; the least needed steps come last
# (a call cut short by its time limit loses only them).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD GROTH16_KERNEL_CACHE=${GROTH16_KERNEL_CACHE:-/tmp/kernel-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader > "$OUT/env.log"
build() {
  python3 - "$1" <<'PY'
import sys, time
from engine.algebra.curves import curve_by_name
from engine.backends.gpu.params import params_header
from cuda_kernels.build import compile_cubin
t = time.time()
compile_cubin(params_header(curve_by_name(sys.argv[1])), arch="sm_90")
print(f"kernels for {sys.argv[1]} built in {time.time() - t:.1f} s")
PY
}
build bls12381 >> "$OUT/env.log" 2>&1 &
bls=$!
build bn128 >> "$OUT/env.log" 2>&1
tests="tests/test_gpu_pairing.py tests/test_gpu_epilogue.py"
timeout 90 python3 -m pytest -q -m gpu $tests -k bn128 > "$OUT/tests.log" 2>&1
echo "bn128 tests rc $?" >> "$OUT/tests.log"
W=/tmp/tail-bench
timeout 110 python3 perf/prove.py --log-constraints 13,16,20 --curves bn128 --backend gpu --repeats 5 --workdir $W \
  > "$OUT/perf.log" 2>&1
echo "rc $?" >> "$OUT/perf.log"
wait $bls
timeout 80 python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 --workdir $W \
  >> "$OUT/perf.log" 2>&1
echo "rc $?" >> "$OUT/perf.log"
timeout 40 python3 perf/pairing_latency.py > "$OUT/lat.log" 2>&1
echo "rc $?" >> "$OUT/lat.log"
timeout 60 python3 -m pytest -q -m gpu $tests -k bls12381 >> "$OUT/tests.log" 2>&1
echo "bls12381 tests rc $?" >> "$OUT/tests.log"
