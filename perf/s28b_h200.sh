#!/usr/bin/env bash
# Session 28's second measuring call (checkout root, carry [".whl", ".kcache", ".kcache-probe"]): the tail's
# Fq inversion as divsteps and its product as even/odd chains (this tree's kernels): the GPU tests of the
# pairing, the epilogue, batches and the pipeline (two groups side by side); perf/pairing_latency.py; the
# tower probe's BN254 chains (v0 main's tower, veo the even/odd product, veoinl with the batch round inline);
# the 2^13 / 2^16 bench proofs with B2's stream above the others (GROTH16_B2_TOP=1) and not, alternating, three
# rounds of medians of 15; the 2^13 proof's time line both ways.
#   OUT=/tmp/out bash perf/s28b_h200.sh
set -u
W=${W:-/tmp/fin}
mkdir -p "$W"  # (missing in the call that ran it: its two test groups did not run)
. scripts/gpu_env.sh || exit 2
( timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_pairing.py tests/test_gpu_epilogue.py \
    2>&1 | grep -E "^FAILED|^E  |passed|failed|error" | head -30 > "$W/t1.log" ) &
( timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_batch.py tests/test_gpu_pipeline.py \
    2>&1 | grep -E "^FAILED|^E  |passed|failed|error" | head -30 > "$W/t2.log" ) &
wait
echo "== tests pairing+epilogue"; cat "$W/t1.log"; echo "== tests batch+pipeline"; cat "$W/t2.log"
timeout 60 python3 perf/pairing_latency.py --iters 1000 2>&1 | tail -48
timeout 60 python3 perf/tower_probe.py time .kcache-probe/v0 .kcache-probe/veo .kcache-probe/veoinl 2>&1 | grep "^bn128"
timeout 120 python3 perf/prove.py --log-constraints 13,16 --curves bn128 --backend gpu --repeats 2 --workdir "$W/pp" \
  2>&1 | grep "^| bn128"
for round in 1 2 3; do
  for p in 1 0; do
    for k in 13 16; do
      d=$W/pp/bn128_2^$k; [ -e "$d/bench.zkey" ] || continue
      echo "== round $round GROTH16_B2_TOP=$p 2^$k"
      GROTH16_B2_TOP=$p timeout 15 python3 perf/prove.py --files "$d/bench.zkey" "$d/bench.wtns" \
        --backend gpu --repeats 15 2>&1 | grep "^| bn128"
    done
  done
done
d=$W/pp/bn128_2^13
for p in 1 0; do
  echo "== timeline GROTH16_B2_TOP=$p"
  GROTH16_B2_TOP=$p timeout 15 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -27
done
