#!/usr/bin/env bash
# t13tput's diagnosis call (issue 13 item 5): where the sweep's time goes at the 2^14 domain.
# The environment of scripts/final_h200.sh (cwd = repo root, PYTHONPATH, GROTH16_KERNEL_CACHE, OUT).
#   A: perf/sweep.py as perf/h13tput_final.sh runs it (96 proofs, 32 in flight, 1 and 2 slots), with
#      the timelines, the batches' device spans and each thread's CPU time (--cpu);
#   B: the same with 480 proofs (the steady part beside the ramp and the drain);
#   C: py-spy (when SPY names its wheel) over a 1-slot run of 480: every thread's samples, then only
#      those holding the GIL (--gil), as collapsed stacks;
#   M: the same 480-proof sweep from the tree at $MAIN (the merged tree before this branch: the same
#      machine's baseline; its sweep has no --cpu);
#   T: the GPU tests of the batch path, the stage and the failure paths (-m gpu);
#   F: perf/t13tput_final.sh;
#   X: the tree at $MAIN and this one alternately, twice, at ${N:-96} proofs, 1 and 2 slots (same machine, same call);
#   S: this tree's 480-proof sweep with sys.setswitchinterval(${SWITCH:-0.0005}) (the GIL's hand-over).
#   perf/timeline_gaps.py over A and B.  Everything lands in $OUT (gaps_*.md, spy_*.txt, runs.tar.gz).
#   OUT=/tmp/o [SPY=path/py_spy.whl] [MAIN=../..] [RUNS="A B C M T F"] bash perf/t13tput_device.sh
set -u
K=${W:-/tmp}/t13d
mkdir -p "$K" "$OUT"
RUNS=${RUNS:-"A B C"}
log() { echo "== $(date +%T) $*" | tee -a "$OUT/log"; }
python3 -m engine bench-circuit --constraints 8189 --curve bn128 --quiet $K/b14 >/dev/null 2>&1
python3 -m engine setup --backend gpu $K/b14/bench.r1cs $K/b14/bench.zkey --quiet >/dev/null 2>&1
P="--no-plots"
Z="--backend gpu --zkey $K/b14/bench.zkey --wtns $K/b14/bench.wtns --concurrency 32 --modes split"
for r in $RUNS; do
  case $r in
    A) log "A: 96 proofs"; timeout 60 python3 perf/sweep.py $Z --proofs 96 --slots 1,2 --cpu $P --out $K/a 2>&1 |
         grep -v "^wrote" | tee -a "$OUT/log"
       python3 perf/timeline_gaps.py $K/a --batches 8 > "$OUT/gaps_a.md" 2>&1 ;;
    B) log "B: 480 proofs"; timeout 60 python3 perf/sweep.py $Z --proofs 480 --slots 1,2 --cpu $P --out $K/b 2>&1 |
         grep -v "^wrote" | tee -a "$OUT/log"
       python3 perf/timeline_gaps.py $K/b --batches 40 > "$OUT/gaps_b.md" 2>&1 ;;
    C) [ -n "${SPY:-}" ] || continue
       python3 -m pip install -q --no-index --no-deps --target /tmp/spy "$SPY" >/dev/null 2>&1
       for g in ${SPY_MODES:-all}; do
         log "C: py-spy ($g)"; extra=""; [ $g = gil ] && extra="--gil"
         timeout 60 /tmp/spy/bin/py-spy record --nonblocking --threads --format raw -r 500 $extra \
           -o "$OUT/spy_$g.txt" -- python3 perf/sweep.py $Z --proofs 480 --slots 1 $P --out $K/c_$g 2>&1 |
           grep "proofs/min" | tee -a "$OUT/log"
       done ;;
    M) log "M: the tree at ${MAIN:-../..}, 480 proofs"
       ( cd "${MAIN:-../..}" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/sweep.py $Z --proofs 480 --slots 1,2 \
           --out $K/m 2>&1 | grep -A4 "^| mode" ) | tee -a "$OUT/log" ;;
    T) log "T: GPU tests"
       timeout ${TEST_S:-150} python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_batch.py \
         tests/test_gpu_batch_failure_paths.py tests/test_gpu_tail_fake.py tests/test_gpu_msm_engine.py \
         tests/test_gpu_epilogue.py tests/test_gpu_failure_paths.py tests/test_gpu_witness_range.py \
         tests/test_gpu_guard.py tests/test_gpu_pinned_and_compile.py \
         "tests/test_gpu_msm.py::test_compute_batch_matches_proof_by_proof" > "$OUT/tests.log" 2>&1
       tail -1 "$OUT/tests.log" | tee -a "$OUT/log"; grep -h "^FAILED\|^ERROR" "$OUT/tests.log" | tee -a "$OUT/log" ;;
    X) for i in 1 2; do
         log "X$i: the tree at ${MAIN:-../..}, ${N:-96} proofs"
         ( cd "${MAIN:-../..}" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/sweep.py $Z --proofs ${N:-96} \
             --slots 1,2 --out $K/x$i 2>&1 | grep -A4 "^| mode" ) | tee -a "$OUT/log"
         log "X$i: this tree, ${N:-96} proofs"
         timeout 60 python3 perf/sweep.py $Z --proofs ${N:-96} --slots 1,2 $P --out $K/y$i 2>&1 | grep -A4 "^| mode" |
           tee -a "$OUT/log"
       done ;;
    S) log "S: switch interval ${SWITCH:-0.0005}, 480 proofs"
       timeout 60 python3 perf/sweep.py $Z --proofs 480 --slots 1,2 $P --switch-interval ${SWITCH:-0.0005} \
         --out $K/s 2>&1 | grep -A4 "^| mode" | tee -a "$OUT/log" ;;
    F) log "F: perf/t13tput_final.sh"; W=$K bash perf/t13tput_final.sh | tail -40 >> "$OUT/log" ;;
  esac
done
tar -czf "$OUT/runs.tar.gz" -C "$K" $(cd "$K" && ls -d a b c_* x* y* s 2>/dev/null) 2>/dev/null
log done
