#!/usr/bin/env bash
# t13tower's device call (issue 13: the pairing tower's latency), run from main's checkout (the run
# tool's cwd) with this tree beside it as .wt/t13tower and one kernel cache .kcache-t13tower holding
# main's BN254 build (main=.) and this tree's BN254 and BLS12-381 builds (mine=.wt/t13tower).
# Steps, each under its own timeout, logs under $OUT/r (tar: $OUT/r.tgz):
#   lat    perf/pairing_latency.py: main's (BN254) and this tree's (both curves), same call
#   probe  perf/tower_probe.py time on the probe builds carried under .wt/t13tower/probe (if any)
#   tests  pytest -m gpu: the pairing, the epilogue, the fake-driver tail, the pipeline (this tree)
#   prove  perf/prove.py 2^13 and 2^16 BN254 warm proofs, main's tree then this one's (same files)
#   OUT=/tmp/out bash .wt/t13tower/perf/t13tower_h200.sh   (WHL=DIR: the wheels to install, default .whl)
set -u
ROOT=$PWD; T=$ROOT/.wt/t13tower; R=$OUT/r; W=/tmp/t13w; mkdir -p "$R" "$W"
STEPS=${STEPS:-lat probe tests prove}
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
snap() { tar czf "$OUT/r.tgz" -C "$R" .; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "${WHL:-$ROOT/.whl}"/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$ROOT/.kcache-t13tower
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 "$T/scripts/carry_kernels.py" install "$GROTH16_KERNEL_CACHE" main="$ROOT" mine="$T"
main() { (cd "$ROOT" && PYTHONPATH=/tmp/site:$ROOT "$@"); }
mine() { (cd "$T" && PYTHONPATH=/tmp/site:$T "$@"); }
if has lat; then
  main timeout 25 python3 perf/pairing_latency.py --iters 1000 --curves bn128 > "$R/lat_main.log" 2>&1
  echo "lat main rc=$? $(date +%T)"; cat "$R/lat_main.log"
  mine timeout 40 python3 perf/pairing_latency.py --iters 1000 > "$R/lat_mine.log" 2>&1
  echo "lat mine rc=$? $(date +%T)"; cat "$R/lat_mine.log"; snap
fi
if has probe && [ -d "$T/probe" ]; then
  mine timeout 15 python3 perf/tower_probe.py time $(ls -d "$T"/probe/*) > "$R/probe.log" 2>&1
  echo "probe rc=$? $(date +%T)"; cat "$R/probe.log"; snap
fi
if has tests; then
  mine timeout ${T_TESTS:-90} python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_pairing.py \
    tests/test_gpu_epilogue.py tests/test_gpu_tail_fake.py tests/test_gpu_pipeline.py > "$R/tests.log" 2>&1
  echo "tests rc=$? $(date +%T): $(tail -1 "$R/tests.log")"; grep -h "^FAILED\|^ERROR" "$R/tests.log"
fi
if has prove; then
  main timeout 45 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 5 \
    --workdir "$W" --json "$R/prove_main.json" > "$R/prove_main.log" 2>&1
  echo "prove main rc=$? $(date +%T)"; tail -4 "$R/prove_main.log"
  files=(); for k in 13 16; do files+=(--files "$W/bn128_2^$k/bench.zkey" "$W/bn128_2^$k/bench.wtns"); done
  mine timeout 35 python3 perf/prove.py "${files[@]}" --backend gpu --repeats 5 --json "$R/prove_mine.json" \
    > "$R/prove_mine.log" 2>&1
  echo "prove mine rc=$? $(date +%T)"; tail -4 "$R/prove_mine.log"; snap
fi
snap
