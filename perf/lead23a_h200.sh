#!/usr/bin/env bash
# Lead's first device call of the 2026-12-01 late session: the GPU tests the last stop left unrun on the
# device (every group), the 2^24 BN254 key's warm proof (issue 13's 400 ms target) and under 16 GiB
# (issue 18), host splits at 2^16 and 2^24.  Carry [".whl", ".kcache"].  OUT=/tmp/o bash perf/lead23a_h200.sh
set -u
W=/tmp/l23; R=$OUT; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KEY_CACHE=$W/kc GROTH16_KERNEL_CACHE=$PWD/.kcache
log() { echo "== $(date +%T) $*" | tee -a $R/log; }
( t0=$(date +%s); python3 -m engine bench-circuit --constraints 16777216 --curve bn128 --quiet $W/b24 &&
  python3 -m engine setup --backend gpu $W/b24/bench.r1cs $W/b24/bench.zkey --quiet && rm -f $W/b24/bench.r1cs &&
  echo "2^24 circuit+setup $(( $(date +%s) - t0 )) s" && touch $W/b24.key ) > $R/b24.log 2>&1 &
bp=$!
log kernels; python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2 | tee -a $R/log
log tests
ga="tests/test_gpu_msm_engine.py"
gb="tests/test_gpu_msm.py tests/test_gpu_plan.py tests/test_gpu_host_tier.py"
gc="tests/test_gpu_kernels.py tests/test_gpu_pairing.py tests/test_gpu_epilogue.py tests/test_gpu_tail_fake.py"
rest=$(ls tests/test_gpu_*.py tests/test_key_cache.py tests/test_cli_startup.py | grep -v -e _kernels -e _pairing \
     -e _epilogue -e _tail_fake -e test_gpu_msm -e _plan -e _host_tier)
gd=$(echo "$rest" | awk 'NR % 2 == 1' | tr '\n' ' '); ge=$(echo "$rest" | awk 'NR % 2 == 0' | tr '\n' ' ')
i=0; pids=""
for g in "$ga" "$gb" "$gc" "$gd" "$ge"; do i=$((i+1))
  timeout 220 python3 -m pytest -q -p no:cacheprovider -m gpu $g > $R/tests_$i.log 2>&1 & pids="$pids $!"; done
wait $pids
for i in 1 2 3 4 5; do echo "group $i: $(tail -1 $R/tests_$i.log)" | tee -a $R/log; done
grep -h "^FAILED\|^ERROR" $R/tests_*.log | tee -a $R/log
log "2^16 warm + host split"
timeout 60 python3 perf/prove.py --log-constraints 16 --curves bn128 --backend gpu --repeats 7 --workdir $W/pp \
  --json $R/prove16.json 2>&1 | tail -3 | tee -a $R/log
timeout 30 python3 perf/host_split.py --zkey $W/pp/bn128_2^16/bench.zkey --wtns $W/pp/bn128_2^16/bench.wtns --repeats 9 2>&1 | tail -4 | tee -a $R/log
log "2^24"; wait $bp; tail -2 $R/b24.log | tee -a $R/log
if [ -e $W/b24.key ]; then
  timeout 100 python3 perf/prove.py --files $W/b24/bench.zkey $W/b24/bench.wtns --backend gpu --repeats 3 \
    --json $R/prove24.json 2>&1 | tail -3 | tee -a $R/log
  timeout 80 python3 perf/c2.py --zkey $W/b24/bench.zkey --wtns $W/b24/bench.wtns --partitions 1 --jobs 2 \
    --concurrency 1 --budgets 16GiB --modes split --json $R/c2_24.jsonl 2>&1 | tail -3 | tee -a $R/log
fi
log done
