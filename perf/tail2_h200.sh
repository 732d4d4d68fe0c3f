#!/usr/bin/env bash
# h13tail2's device call (the tail on four warps, the tower's additions over the lanes): from the
# root of a tree holding .whl/ and .kcache/ (both curves' kernels built by
# `python scripts/carry_kernels.py build .kcache mine=$PWD`); the run tool sends the session's
# checkout, so a helper's tree travels as a copy in an ignored folder of it (carry
# [".wt/NAME"], then `cd .wt/NAME`); logs to $OUT.  The latency chains
# first (a hang in the two warps' hand-on would show there, under its timeout), then the GPU tests
# of the pairing and the epilogue, then warm proofs (STEPS picks: "lat tests prove bls"; CURVES: the
# latency chains' and the tests' curves, bn128,bls12381 by default).
set -u
STEPS=${STEPS:-lat tests prove}
CURVES=${CURVES:-bn128,bls12381}
K=$(echo "$CURVES" | sed 's/,/ or /g')
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader > "$OUT/env.log"
python3 scripts/carry_kernels.py install .kcache mine="$PWD" >> "$OUT/env.log" 2>&1
W=/tmp/tail2-bench
if has lat; then
  timeout 45 python3 perf/pairing_latency.py --curves "$CURVES" > "$OUT/lat.log" 2>&1
  echo "rc $?" >> "$OUT/lat.log"
fi
if has tests; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_pairing.py tests/test_gpu_epilogue.py \
    tests/test_gpu_tail_fake.py -k "$K" > "$OUT/tests.log" 2>&1
  echo "tests rc $?" >> "$OUT/tests.log"
fi
if has prove; then
  timeout 120 python3 perf/prove.py --log-constraints ${LOGS:-13,16,20} --curves bn128 --backend gpu --repeats 5 \
    --workdir $W > "$OUT/perf.log" 2>&1
  echo "rc $?" >> "$OUT/perf.log"
fi
if has bls; then
  timeout 90 python3 perf/prove.py --log-constraints ${BLS_LOGS:-13,20} --curves bls12381 --backend gpu --repeats 5 \
    --workdir $W >> "$OUT/perf.log" 2>&1
  echo "rc $?" >> "$OUT/perf.log"
fi
