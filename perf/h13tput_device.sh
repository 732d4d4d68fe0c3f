#!/usr/bin/env bash
# h13tput's device call (issue 13 item 5), from the checkout root with carry [".whl", ".kcache"]: a batch's
# phases (perf/batch_phases.py, k = 1, 4, 8, 16, the k fronts one after another and side by side), an nsys
# kernel summary of batches of 16 where nsys exists, the sweep at the 2^14 domain (8189 constraints) both
# ways, and at the 2^16 domain (32765 constraints).  Everything comes back as $OUT/log and $OUT/r.tgz.
#   OUT=/tmp/out bash perf/h13tput_device.sh      (STEPS="phases nsys sweep14 sweep16")
set -u
W=${W:-/tmp/h13t}
R=$OUT/r
LOG=$OUT/log
mkdir -p "$W" "$R"
STEPS=${STEPS:-phases nsys sweep14 sweep16}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
step() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
finish() { tar czf "$OUT/r.tgz" -C "$R" . 2>/dev/null; }
trap finish EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KEY_CACHE=$W/keycache GROTH16_KERNEL_CACHE=$PWD/.kcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee -a "$LOG"
echo "nsys: $(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)" \
  | tee -a "$LOG"
step "kernels"
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2 | tee -a "$LOG"
if has sweep16; then  # the 2^16-domain circuit's witness and key on the CPU side, beside the measurements
  ( python3 -m engine bench-circuit --constraints 32765 --curve bn128 --quiet "$W/bn128_32765" ) >"$R/bench16.log" 2>&1 &
  bpid=$!
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
  timeout 100 python3 perf/batch_phases.py --constraints 8189 --batches 1,4,8,16 --repeats 5 --front both \
    --workdir "$W" --json "$R/phases14.json" 2>&1 | tee "$R/phases14.log" | tail -9 | tee -a "$LOG"
fi
if has nsys; then
  NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
  if [ -n "$NSYS" ]; then
    step "nsys, batches of 16"
    timeout 60 "$NSYS" profile -t cuda -o "$W/b16" --force-overwrite true python3 perf/batch_phases.py \
      --constraints 8189 --batches 16 --repeats 3 --workdir "$W" >"$R/nsys_run.log" 2>&1
    timeout 40 "$NSYS" stats -q --report cuda_gpu_kern_sum --format csv -o "$R/b16" "$W/b16.nsys-rep" >>"$R/nsys_run.log" 2>&1
    head -25 "$R"/b16*kern_sum*.csv 2>/dev/null | cut -c1-200 | tee -a "$LOG"
  fi
fi
if has sweep14; then
  for f in serial lanes; do
    step "sweep, 2^14 domain, batch fronts $f"
    timeout 60 python3 perf/sweep.py --backend gpu --zkey "$d14/bench.zkey" --wtns "$d14/bench.wtns" --proofs 96 \
      --concurrency 32 --slots 1,4 --modes split --batch-front $f --out "$R/sweep14_$f" 2>&1 | tail -5 | tee -a "$LOG"
  done
fi
if has sweep16; then
  wait $bpid
  step "key, 2^16 domain"
  d16=$W/bn128_32765
  timeout 60 python3 -m engine setup --backend gpu "$d16/bench.r1cs" "$d16/bench.zkey" --quiet 2>&1 | tail -2 | tee -a "$LOG"
  step "sweep, 2^16 domain"
  timeout 60 python3 perf/sweep.py --backend gpu --zkey "$d16/bench.zkey" --wtns "$d16/bench.wtns" --proofs 64 \
    --concurrency 32 --slots 4 --modes split --out "$R/sweep16" 2>&1 | tail -4 | tee -a "$LOG"
  timeout 40 python3 perf/batch_phases.py --constraints 32765 --batches 1,16 --repeats 3 --workdir "$W" \
    --json "$R/phases16.json" 2>&1 | tail -4 | tee -a "$LOG"
fi
step "done"
