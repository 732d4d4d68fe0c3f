#!/usr/bin/env bash
# The NTT's device run (issue 15 item 4), from the worktree copy on the GPU machine with the carried
# kernel builds in .kcache and the A/B builds in .ntt_ab (perf/ntt_ab.py build .ntt_ab):
# A/B of builds and of pass plans, perf/ntt.py over 2^16..2^26 on both curves, then the NTT's GPU tests and the GPU
# proof tests.  Logs under $OUT.   OUT=/tmp/o STEPS="ab perf tests" bash perf/h15ntt_device.sh
set -u
STEPS=${STEPS:-ab plans perf tests}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
export GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache h15ntt="$PWD" 2>&1 | tail -2 | tee "$OUT/log"
. scripts/gpu_env.sh >>"$OUT/log" 2>&1
echo "== $(date +%T) ready" | tee -a "$OUT/log"
if has ab; then
  python3 perf/ntt_ab.py run .ntt_ab --sizes ${AB_SIZES:-20,24} --repeats 5 2>&1 | tee "$OUT/ab.log"
fi
if has plans; then
  python3 perf/ntt_ab.py plans .ntt_ab --repeats 5 --plans \
    "${PLANS:-22=10-10-2/2-10-10/8-7-7/7-7-8,24=10-10-4/4-10-10/8-8-8/7-7-10/10-7-7/6-9-9/9-9-6,26=10-10-6/6-10-10/9-9-8/8-9-9}" \
    2>&1 | tee "$OUT/plans.log"
fi
if has perf; then
  python3 perf/ntt.py --sizes ${SIZES:-16,17,18,19,20,21,22,23,24,25,26} --repeats ${REPEATS:-7} ${PERF_ARGS:-} \
    --json "$OUT/ntt.json" > "$OUT/ntt.log" 2>&1
  tail -28 "$OUT/ntt.log"
fi
if has tests; then
  echo "== $(date +%T) tests" | tee -a "$OUT/log"
  timeout ${TEST_S:-110} python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py tests/test_gpu_plan.py \
    -k "ntt or twiddle or even_odd or quotient or mul or plan" > "$OUT/t1.log" 2>&1 &
  timeout ${TEST_S:-110} python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_pipeline.py tests/test_gpu_engine.py \
    > "$OUT/t2.log" 2>&1 &
  wait
  for f in "$OUT/t1.log" "$OUT/t2.log"; do tail -n 3 "$f"; done
fi
echo "== $(date +%T) done" | tee -a "$OUT/log"
