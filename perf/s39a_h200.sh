#!/usr/bin/env bash
# Session 39, call 1 (carry [".whl", ".kcache"]): host-tier staging over a and b (footprint.staging_over_front).
# The host-tier and compute-share tests on the device; then the C2 job (10 x 2^24 BLS12-381) under 16 GiB:
# split with the engine's defaults (two at once where three working sets fit), split with one compute slot
# (the stop-38 schedule: two in flight, one computing), and single, in turns.
#   OUT=/tmp/out bash perf/s39a_h200.sh
set -u
. perf/s31_env.sh
bench_key_b24bls 2>&1 | grep -v "DEVELOPMENT KEY" | tail -1 &
keypid=$!
echo "== $(date +%T) host-tier and share tests"
python3 -m pytest -q -p no:cacheprovider tests/test_gpu_host_tier.py tests/test_compute_share.py \
  tests/test_gpu_tail_fake.py 2>&1 | tail -2
wait $keypid
Z=/tmp/b24bls/bench.zkey W=/tmp/b24bls/bench.wtns
python3 -m engine info --vram-budget 16GiB $Z 2>&1 | grep -i "footprint\|host tier\|resident" | head -3
c2() {  # label, then c2.py's flags
  local label=$1; shift
  echo "== $(date +%T) C2 16 GiB: $label"
  timeout 150 python3 perf/c2.py --zkey $Z --wtns $W --partitions 10 --jobs 3 --concurrency 2 --budgets 16GiB \
    --synthesis-workers 8 --proof-dir $OUT/c2_$label --json $OUT/c2.jsonl "$@" 2>&1 | tail -3
}
for round in 1 2; do
  c2 split_auto_$round --modes split
  c2 single_$round --modes single
  c2 split_1slot_$round --modes split --compute-slots 1
done
tar czf $OUT/all.tgz -C $OUT $(cd $OUT && ls -d c2_* 2>/dev/null) 2>/dev/null
echo "== $(date +%T) done"
