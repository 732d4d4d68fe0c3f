#!/usr/bin/env bash
# h13tput's device call (issue 13 item 5), from the checkout root with carry [".whl", ".kcache"] (kernels built
# here: `python scripts/carry_kernels.py build .kcache mine=$PWD`): the GPU tests of the batch path (both
# curves), a batch's phases (perf/batch_phases.py, k = 1, 4, 8, 16), the sweep at the 2^14 domain (8189
# constraints) and at the 2^16 domain (32765 constraints).  Everything comes back as $OUT/log and $OUT/r.tgz.
#   OUT=/tmp/out bash perf/h13tput_device.sh      (STEPS="tests phases sweep14 sweep16")
set -u
W=${W:-/tmp/h13t}
R=$OUT/r
LOG=$OUT/log
mkdir -p "$W" "$R"
STEPS=${STEPS:-tests phases sweep14 sweep16}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
step() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
finish() { tar czf "$OUT/r.tgz" -C "$R" . 2>/dev/null; }
trap finish EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KEY_CACHE=$W/keycache GROTH16_KERNEL_CACHE=$PWD/.kcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee -a "$LOG"
step "kernels"
python3 scripts/carry_kernels.py install .kcache mine="$PWD" 2>&1 | tail -2 | tee -a "$LOG"
if has sweep16; then  # the 2^16-domain circuit's witness and key on the CPU side, beside the tests
  ( python3 -m engine bench-circuit --constraints 32765 --curve bn128 --quiet "$W/bn128_32765" ) >"$R/bench16.log" 2>&1 &
  bpid=$!
fi
if has tests; then
  step "GPU tests of the batch path, both curves (3 groups in parallel)"
  g1="tests/test_gpu_batch.py tests/test_gpu_msm_engine.py tests/test_gpu_epilogue.py tests/test_gpu_tail_fake.py tests/test_gpu_batch_failure_paths.py"
  g2="tests/test_gpu_msm.py::test_compute_batch_matches_proof_by_proof tests/test_gpu_pairing.py tests/test_gpu_failure_paths.py"
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu $g1 >"$R/tests_1.log" 2>&1 &
  t1=$!
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu $g2 >"$R/tests_2.log" 2>&1 &
  t2=$!
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py -k "ntt or quotient or evaluate" \
    >"$R/tests_3.log" 2>&1 &
  t3=$!
  for i in 1 2 3; do
    eval "wait \$t$i"; echo "group $i rc $?" | tee -a "$LOG"; tail -2 "$R/tests_$i.log" | tee -a "$LOG"
  done
  grep -h "^FAILED\|^ERROR" "$R"/tests_*.log | head -20 | tee -a "$LOG"
fi
step "key, 2^14 domain"
timeout 60 python3 -c "
import sys; sys.path.insert(0, 'perf')
from pathlib import Path
from batch_phases import bench_key
print(bench_key(Path('$W'), 8189, 'bn128'))" 2>&1 | tail -1 | tee -a "$LOG"
d14=$W/bn128_8189
if has phases; then
  step "batch phases, 2^14 domain"
  timeout 60 python3 perf/batch_phases.py --constraints 8189 --batches 1,4,8,16 --repeats 5 \
    --workdir "$W" --json "$R/phases14.json" 2>&1 | tee "$R/phases14.log" | tail -7 | tee -a "$LOG"
fi
if has sweep14; then
  step "sweep, 2^14 domain"
  timeout 80 python3 perf/sweep.py --backend gpu --zkey "$d14/bench.zkey" --wtns "$d14/bench.wtns" --proofs 96 \
    --concurrency 32 --slots 1,2,4 --modes split --out "$R/sweep14" 2>&1 | tail -9 | tee -a "$LOG"
fi
if has sweep16; then
  wait $bpid
  step "key, 2^16 domain"
  d16=$W/bn128_32765
  timeout 60 python3 -m engine setup --backend gpu "$d16/bench.r1cs" "$d16/bench.zkey" --quiet 2>&1 | tail -1 | tee -a "$LOG"
  step "sweep, 2^16 domain"
  timeout 60 python3 perf/sweep.py --backend gpu --zkey "$d16/bench.zkey" --wtns "$d16/bench.wtns" --proofs 64 \
    --concurrency 32 --slots 2,4 --modes split --out "$R/sweep16" 2>&1 | tail -6 | tee -a "$LOG"
  timeout 40 python3 perf/batch_phases.py --constraints 32765 --batches 1,16 --repeats 3 --workdir "$W" \
    --json "$R/phases16.json" 2>&1 | tail -3 | tee -a "$LOG"
fi
step "done"
