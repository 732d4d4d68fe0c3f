#!/usr/bin/env bash
# t13tput's diagnosis call (issue 13 item 5): where the sweep's time goes at the 2^14 domain.
# The environment of scripts/final_h200.sh (cwd = repo root, PYTHONPATH, GROTH16_KERNEL_CACHE, OUT).
#   A: perf/sweep.py as perf/h13tput_final.sh runs it (96 proofs, 32 in flight, 1 and 2 slots), with
#      the timelines, the batches' device spans and each thread's CPU time (--cpu);
#   B: the same with 480 proofs (the steady part beside the ramp and the drain);
#   C: py-spy (when SPY names its wheel) over a 1-slot run of 480: every thread's samples, then only
#      those holding the GIL (--gil), as collapsed stacks;
#   perf/timeline_gaps.py over A and B.  Everything lands in $OUT (gaps_*.md, spy_*.txt, runs.tar.gz).
#   OUT=/tmp/o [SPY=path/py_spy.whl] [RUNS="A B C"] bash perf/t13tput_device.sh
set -u
K=${W:-/tmp}/t13d
mkdir -p "$K" "$OUT"
RUNS=${RUNS:-"A B C"}
log() { echo "== $(date +%T) $*" | tee -a "$OUT/log"; }
python3 -m engine bench-circuit --constraints 8189 --curve bn128 --quiet $K/b14 >/dev/null 2>&1
python3 -m engine setup --backend gpu $K/b14/bench.r1cs $K/b14/bench.zkey --quiet >/dev/null 2>&1
Z="--backend gpu --zkey $K/b14/bench.zkey --wtns $K/b14/bench.wtns --concurrency 32 --modes split"
for r in $RUNS; do
  case $r in
    A) log "A: 96 proofs"; timeout 60 python3 perf/sweep.py $Z --proofs 96 --slots 1,2 --cpu --out $K/a 2>&1 |
         grep -v "^wrote" | tee -a "$OUT/log"
       python3 perf/timeline_gaps.py $K/a --batches 8 > "$OUT/gaps_a.md" 2>&1 ;;
    B) log "B: 480 proofs"; timeout 60 python3 perf/sweep.py $Z --proofs 480 --slots 1,2 --cpu --out $K/b 2>&1 |
         grep -v "^wrote" | tee -a "$OUT/log"
       python3 perf/timeline_gaps.py $K/b --batches 40 > "$OUT/gaps_b.md" 2>&1 ;;
    C) [ -n "${SPY:-}" ] || continue
       python3 -m pip install -q --no-index --no-deps --target /tmp/spy "$SPY" >/dev/null 2>&1
       for g in all gil; do
         log "C: py-spy ($g)"; extra=""; [ $g = gil ] && extra="--gil"
         timeout 60 /tmp/spy/bin/py-spy record --nonblocking --threads --format raw -r 500 $extra \
           -o "$OUT/spy_$g.txt" -- python3 perf/sweep.py $Z --proofs 480 --slots 1 --out $K/c_$g 2>&1 |
           grep "proofs/min" | tee -a "$OUT/log"
       done ;;
  esac
done
tar -czf "$OUT/runs.tar.gz" -C "$K" $(cd "$K" && ls -d a b c_* 2>/dev/null) 2>/dev/null
log done
