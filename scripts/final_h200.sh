#!/usr/bin/env bash
# A session's closing device call, from the checkout root with carry [".whl", ".kcache", ".cw"] (kernels built
# here by `python scripts/carry_kernels.py build .kcache main=$PWD`): every GPU test in four parallel
# groups with GPU proofs for snarkjs beside them, the 2^24 key under a 16 GiB budget and the whole H200
# (issue 18), warm proofs (13), the service (16), the CLI's cold start, throughput, key load.
# Everything comes back as $OUT/log and $OUT/all.tgz (the tool returns 8 files at most).
#   OUT=/tmp/out bash scripts/final_h200.sh          (STEPS="tests big prove serve cli sweep helpers keyload")
set -u
W=${W:-/tmp/fin}
LOG=$OUT/log
R=$OUT/r
mkdir -p "$W" "$R/proofs"
STEPS=${STEPS:-tests big prove serve cli sweep helpers keyload}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
step() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
finish() { tar czf "$OUT/all.tgz" -C "$R" . 2>/dev/null; }
trap finish EXIT
trap 'finish; trap - EXIT; exit 124' TERM
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KEY_CACHE=$W/keycache GROTH16_KERNEL_CACHE=$PWD/.kcache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader | tee -a "$LOG"
if has big; then
  ( python3 -m engine bench-circuit --constraints 16777216 --curve bn128 --quiet "$W/b24" && touch "$W/b24.bench" ) \
    >"$R/bench24.log" 2>&1 &
fi
step "kernels (carried builds, else NVRTC here)"
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -4 | tee -a "$LOG"
kpids=""
for c in bn128 bls12381; do
  python3 -c "
import sys, time
from engine.algebra.curves import curve_by_name
from engine.backends.gpu.params import params_header
from cuda_kernels.build import compile_cubin
t = time.time(); compile_cubin(params_header(curve_by_name('$c')), arch='sm_90'); print('$c kernels ready in %.1f s' % (time.time() - t))
" 2>&1 | tail -1 | tee -a "$LOG" &
  kpids="$kpids $!"
done
wait $kpids
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
  step "GPU tests (4 groups in parallel) and GPU proofs for snarkjs"
  ga="tests/test_gpu_msm_engine.py"
  gb="tests/test_gpu_msm.py tests/test_gpu_plan.py tests/test_gpu_host_tier.py"
  gc="tests/test_gpu_kernels.py tests/test_gpu_pairing.py tests/test_gpu_epilogue.py tests/test_gpu_tail_fake.py"
  rest=$(ls tests/test_gpu_*.py tests/test_key_cache.py tests/test_cli_startup.py tests/test_exit_handoff.py | grep -v -e _kernels -e _pairing \
       -e _epilogue -e _tail_fake -e test_gpu_msm -e _plan -e _host_tier)
  gd=$(echo "$rest" | awk 'NR % 2 == 1' | tr '\n' ' ')  # the rest in two halves, side by side
  ge=$(echo "$rest" | awk 'NR % 2 == 0' | tr '\n' ' ')
  pids=""
  i=0
  for g in "$ga" "$gb" "$gc" "$gd" "$ge"; do
    i=$((i + 1))
    case " ${TEST_GROUPS:-1 2 3 4 5} " in *" $i "*) ;; *) continue ;; esac
    timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu $g >"$R/tests_$i.log" 2>&1 &
    pids="$pids $!"
  done
  [ "${PROOFS:-1}" = 1 ] && ( for c in bn128 bls12381; do
      cp "examples/$c/verification_key.json" "$R/proofs/sudoku-$c-vkey.json"
      python3 -m engine prove "examples/$c/sudoku.zkey" "examples/$c/sudoku.wtns" \
        "$R/proofs/sudoku-$c-proof.json" "$R/proofs/sudoku-$c-public.json" --backend gpu --quiet
      echo "sudoku $c: exit $?"
      d="$W/b16-$c"
      python3 -m engine bench-circuit --constraints 65535 --curve $c --quiet "$d" &&
        python3 -m engine setup "$d/bench.r1cs" "$d/key.zkey" --curve $c --backend gpu --quiet &&
        python3 -m engine export-vkey "$d/key.zkey" "$R/proofs/b16-$c-vkey.json" &&
        python3 -m engine prove "$d/key.zkey" "$d/bench.wtns" "$R/proofs/b16-$c-proof.json" \
          "$R/proofs/b16-$c-public.json" --backend gpu --quiet
      echo "bench 2^16 $c: exit $?"
    done ) >"$R/proofs.log" 2>&1 &
  pids="$pids $!"
  wait $pids
  for i in 1 2 3 4 5; do [ -e "$R/tests_$i.log" ] && echo "group $i: $(tail -1 "$R/tests_$i.log")" | tee -a "$LOG"; done
  grep -h "^FAILED\|^ERROR" "$R"/tests_*.log | tee -a "$LOG"
  grep -v "DEVELOPMENT KEY" "$R/proofs.log" 2>/dev/null | grep "exit" | tee -a "$LOG"
fi
if has big; then
  step "2^24 key: 16 GiB budget, then the whole H200"
  wait "$setup_pid"
  grep -v "DEVELOPMENT KEY" "$R/bench24.log" | tail -3 | tee -a "$LOG"
  if [ -e "$W/b24.key" ]; then
    for b in 16GiB whole; do
      timeout 75 python3 perf/c2.py --zkey "$W/b24/bench.zkey" --wtns "$W/b24/bench.wtns" --partitions 1 --jobs 2 \
        --concurrency 1 --budgets $b --modes split --proof-dir "$R/p24_$b" --json "$R/c2_24.jsonl" 2>&1 \
        | tail -2 | tee -a "$LOG"
    done
    rm -rf "$W/b24" "$W/keycache"
  fi
fi
if has prove; then
  step "warm proofs"
  timeout 150 python3 perf/prove.py --log-constraints ${PROVE_SIZES:-13,16,20,22} --curves bn128 --backend gpu \
    --repeats 5 --workdir "$W/pp" --json "$R/prove_bn.json" 2>&1 | tail -6 | tee -a "$LOG"
  [ "${PROVE_BLS:-1}" = 1 ] && timeout 60 python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 \
    --workdir "$W/pp" --json "$R/prove_bls.json" 2>&1 | tail -3 | tee -a "$LOG"
  for k in ${HOST_SPLIT_SIZES-16 20}; do  # the host's part of a warm proof, step by step (perf/host_split.py)
    d="$W/pp/bn128_2^$k"
    timeout 40 python3 perf/host_split.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" 2>&1 | tail -4 | tee -a "$LOG"
  done
fi
if has serve; then
  step "service"
  venv=""  # the CLI client as the README installs it: a venv and the engine's wheel (made here, in .cw/)
  wheel=$(ls .cw/*.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] && venv="--client-venv $W/cv --client-wheel $wheel"
  timeout 80 python3 perf/serve.py --backend gpu --log-constraints ${SERVE_SIZES:-14,16} --repeats 15 --clients 8 \
    --instant-delay-ms 0,15 --workdir "$W/sv" $venv >"$R/serve.log" 2>&1
  tail -25 "$R/serve.log" | tee -a "$LOG"
fi
if has cli; then
  step "cold CLI"
  timeout 30 python3 perf/cli_start.py --runs 3 --workdir "$W/cli" --json "$R/cli.json" 2>&1 | tail -14 | tee -a "$LOG"
fi
if has sweep; then
  step "throughput, 2^14 domain"
  d="$W/pp/bn128_2^13"
  timeout 40 python3 perf/sweep.py --backend gpu --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --proofs 96 \
    --concurrency 8,32 --slots 1,4 --modes split --out "$R/sweep" 2>&1 | tail -8 | tee -a "$LOG"
fi
if has helpers; then  # each helper branch's own closing figures (perf/<branch>_final.sh, 60 s at most each)
  for f in ${FINALS:-perf/*_final.sh}; do
    [ -e "$f" ] || continue
    step "$f"
    OUT="$R" timeout 75 bash "$f" >"$R/$(basename "$f" .sh).log" 2>&1
    tail -15 "$R/$(basename "$f" .sh).log" | tee -a "$LOG"
  done
fi
if has keyload; then
  step "key load 2^20 (synthetic key), the fold tables' kernel"
  timeout 40 python3 perf/keyload.py --log-constraints 20 --repeats 1 --workdir "$W/kl" --json "$R/keyload.json" \
    2>&1 | grep -v "^  " | tail -2 | tee -a "$LOG"
fi
step "done"
