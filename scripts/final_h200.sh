#!/usr/bin/env bash
# A session's closing device call (BN254 and BLS12-381 kernels built, then): every GPU test in three
# parallel groups, GPU proofs brought back for snarkjs, the 2^24 key under a 16 GiB budget and the
# whole H200 (issue 18), warm proofs (13), the service (16), the CLI's cold start, throughput, key
# load.  Everything comes back as $OUT/log and $OUT/all.tgz (the tool returns 8 files at most).
#   OUT=/tmp/out bash scripts/final_h200.sh          (STEPS="tests proofs big prove serve cli sweep keyload")
set -u
W=${W:-/tmp/fin}
LOG=$OUT/log
R=$OUT/r
mkdir -p "$W" "$R/proofs"
STEPS=${STEPS:-tests proofs big prove serve cli sweep keyload}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
step() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
finish() { tar czf "$OUT/all.tgz" -C "$R" . 2>/dev/null; }
trap finish EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KEY_CACHE=$W/keycache
if has big; then
  ( python3 -m engine bench-circuit --constraints 16777216 --curve bn128 --quiet "$W/b24" && touch "$W/b24.bench" ) \
    >"$R/bench24.log" 2>&1 &
fi
step "kernels"
. scripts/gpu_env.sh 2>&1 | grep -v WARNING | tee -a "$LOG"
if has big; then  # the 2^24 setup (GPU + CPU) beside the tests: correctness only there, no timings
  ( while [ ! -e "$W/b24.bench" ]; do sleep 1; done
    t0=$(date +%s)
    python3 -m engine setup --backend gpu "$W/b24/bench.r1cs" "$W/b24/bench.zkey" --quiet &&
      python3 -m engine export-vkey "$W/b24/bench.zkey" "$R/proofs/b24-vkey.json" &&
      echo "setup 2^24 $(( $(date +%s) - t0 )) s" && rm -f "$W/b24/bench.r1cs" && touch "$W/b24.key" ) \
    >>"$R/bench24.log" 2>&1 &
  setup_pid=$!
fi
if has tests; then
  step "GPU tests (3 groups in parallel)"
  g1="tests/test_gpu_kernels.py tests/test_gpu_pairing.py tests/test_gpu_epilogue.py tests/test_gpu_tail_fake.py"
  g2="tests/test_gpu_msm.py tests/test_gpu_msm_engine.py tests/test_gpu_plan.py tests/test_gpu_host_tier.py"
  g3=$(ls tests/test_gpu_*.py tests/test_key_cache.py tests/test_cli_startup.py | grep -v -e _kernels -e _pairing \
       -e _epilogue -e _tail_fake -e test_gpu_msm -e _plan -e _host_tier | tr '\n' ' ')
  i=0
  for g in "$g1" "$g2" "$g3"; do
    i=$((i + 1))
    timeout 280 python3 -m pytest -q -p no:cacheprovider -m gpu $g >"$R/tests_$i.log" 2>&1 &
  done
  wait $(jobs -p | tail -3)  # the three groups (started last)
  for i in 1 2 3; do echo "group $i: $(tail -1 "$R/tests_$i.log")" | tee -a "$LOG"; done
  grep -h "^FAILED\|^ERROR" "$R"/tests_*.log | tee -a "$LOG"
fi
if has proofs; then
  step "proofs for snarkjs"
  for c in bn128 bls12381; do
    cp "examples/$c/verification_key.json" "$R/proofs/sudoku-$c-vkey.json"
    python3 -m engine prove "examples/$c/sudoku.zkey" "examples/$c/sudoku.wtns" \
      "$R/proofs/sudoku-$c-proof.json" "$R/proofs/sudoku-$c-public.json" --backend gpu --quiet
    echo "sudoku $c: exit $?" | tee -a "$LOG"
  done
  for c in bn128 bls12381; do
    d="$W/b16-$c"
    python3 -m engine bench-circuit --constraints 65535 --curve $c --quiet "$d" &&
      python3 -m engine setup "$d/bench.r1cs" "$d/key.zkey" --curve $c --backend gpu --quiet &&
      python3 -m engine export-vkey "$d/key.zkey" "$R/proofs/b16-$c-vkey.json" &&
      python3 -m engine prove "$d/key.zkey" "$d/bench.wtns" "$R/proofs/b16-$c-proof.json" \
        "$R/proofs/b16-$c-public.json" --backend gpu --quiet
    echo "bench 2^16 $c: exit $?" | tee -a "$LOG"
  done 2>&1 | grep -v "DEVELOPMENT KEY"
fi
if has big; then
  step "2^24 key: 16 GiB budget, then the whole H200"
  wait "$setup_pid"
  cat "$R/bench24.log" | grep -v "DEVELOPMENT KEY" | tail -3 | tee -a "$LOG"
  if [ -e "$W/b24.key" ]; then
    for b in 16GiB whole; do
      timeout 120 python3 perf/c2.py --zkey "$W/b24/bench.zkey" --wtns "$W/b24/bench.wtns" --partitions 1 --jobs 3 \
        --concurrency 1 --budgets $b --modes split --proof-dir "$R/p24_$b" --json "$R/c2_24.jsonl" 2>&1 \
        | tail -3 | tee -a "$LOG"
    done
  fi
fi
if has prove; then
  step "warm proofs"
  timeout 110 python3 perf/prove.py --log-constraints 13,16,20 --curves bn128 --backend gpu --repeats 5 \
    --workdir "$W/pp" --json "$R/prove_bn.json" 2>&1 | tail -5 | tee -a "$LOG"
  timeout 60 python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 \
    --workdir "$W/pp" --json "$R/prove_bls.json" 2>&1 | tail -3 | tee -a "$LOG"
fi
if has serve; then
  step "service"
  timeout 120 python3 perf/serve.py --backend gpu --log-constraints 14,16 --repeats 15 --clients 8 \
    --workdir "$W/sv" >"$R/serve.log" 2>&1
  tail -25 "$R/serve.log" | tee -a "$LOG"
fi
if has cli; then
  step "cold CLI"
  timeout 60 python3 perf/cli_start.py --runs 4 --workdir "$W/cli" --json "$R/cli.json" 2>&1 | tail -20 | tee -a "$LOG"
fi
if has sweep; then
  step "throughput (2^14 domain, 2^16)"
  for k in 13 16; do
    d="$W/pp/bn128_2^$k"
    [ -e "$d/bench.zkey" ] || continue
    timeout 60 python3 perf/sweep.py --backend gpu --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --proofs 96 \
      --concurrency 16,64 --slots 2,4 --modes split --out "$R/sweep_$k" 2>&1 | tail -8 | tee -a "$LOG"
  done
fi
if has keyload; then
  step "key load 2^22 (synthetic key)"
  timeout 100 python3 perf/keyload.py --log-constraints 22 --repeats 2 --workdir "$W/kl" --json "$R/keyload.json" \
    2>&1 | grep -v "^  " | tail -3 | tee -a "$LOG"
fi
step "done"
