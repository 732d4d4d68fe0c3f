#!/usr/bin/env bash
# One device call for the big-key figures of issues 13 and 18 (BN254, 2^22 and 2^24 constraints),
# and the batching tests of issue 15. Run from the checkout with .whl/ carried:
#   OUT=/tmp/out bash perf/bigkeys_h200.sh
# Bench circuits are made on the CPU while the kernels build; keys by `setup --backend gpu`.
# Per size: key load (perf/keyload.py on the real key: read, first load, from the cache, cold),
# warm proofs (perf/prove.py --files); at 2^24 also the key under the whole H200 against a 16 GiB
# VRAM budget (perf/c2.py, one-proof jobs), the last proof of each with its vkey for snarkjs here.
set -u
W=${W:-/tmp/bk}
LOG=$OUT/log
mkdir -p "$W" "$OUT"
step() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KEY_CACHE=$W/keycache
df -h /tmp | tail -1 | tee -a "$LOG"
( for k in ${SIZES:-22 24}; do
    t0=$(date +%s%N)
    python3 -m engine bench-circuit --constraints $((1 << k)) --curve bn128 --quiet "$W/b$k" &&
      echo "bench-circuit 2^$k $(( ($(date +%s%N) - t0) / 1000000 )) ms" && touch "$W/b$k.done"
  done ) >"$OUT/bench.log" 2>&1 &
step "kernels"
GPU_ENV_CURVES=bn128 . scripts/gpu_env.sh 2>&1 | tee -a "$LOG"
step "batching tests"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_msm_engine.py tests/test_gpu_msm.py -k batch 2>&1 \
  | tail -15 | tee -a "$LOG"
for k in ${SIZES:-22 24}; do
  step "wait for bench 2^$k"
  while [ ! -e "$W/b$k.done" ]; do sleep 1; done
  cat "$OUT/bench.log" | tee -a "$LOG"
  t0=$(date +%s%N)
  python3 -m engine setup --backend gpu "$W/b$k/bench.r1cs" "$W/b$k/bench.zkey" --quiet 2>&1 | tail -3 | tee -a "$LOG"
  step "setup 2^$k $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(du -h "$W/b$k/bench.zkey" | cut -f1)"
  rm -f "$W/b$k/bench.r1cs"
  step "keyload 2^$k"
  timeout 150 python3 perf/keyload.py --zkey "$W/b$k/bench.zkey" --repeats 2 --cold z --workdir "$W/kl$k" \
    --json "$OUT/keyload_$k.json" 2>&1 | grep -v "^  " | tail -3 | tee -a "$LOG"
  rm -rf "$W/kl$k"
  step "warm proofs 2^$k"
  timeout 120 python3 perf/prove.py --files "$W/b$k/bench.zkey" "$W/b$k/bench.wtns" --backend gpu --repeats 4 \
    --workdir "$W/p$k" --json "$OUT/prove_$k.json" 2>&1 | tail -4 | tee -a "$LOG"
  if [ "$k" = 24 ]; then
    for b in whole 16GiB; do
      step "c2.py 2^24 budget $b"
      timeout 150 python3 perf/c2.py --zkey "$W/b$k/bench.zkey" --wtns "$W/b$k/bench.wtns" --partitions 1 --jobs 3 \
        --concurrency 1 --budgets $b --modes split --proof-dir "$OUT/p24_$b" --json "$OUT/c2_24.jsonl" 2>&1 \
        | tail -6 | tee -a "$LOG"
    done
  fi
done
step "done"
