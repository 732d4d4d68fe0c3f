#!/usr/bin/env bash
# Session 36's closing call (carry [".whl", ".kcache", ".sppark"]): every GPU test and the snarkjs proofs
# (scripts/final_h200.sh STEPS="tests"), with a BLS12-381 bench circuit of 2^24 - 3 constraints and its key made
# beside them (correctness only there); then, with nothing beside: our forward NTT (perf/ntt.py, the defaults) and
# sppark's (perf/sppark_ntt.cu), 2^16-2^26, both curves, in one run; then the 2^24 BLS12-381 warm proof's stages
# (perf/prove.py --files), the C2 job's partition.
#   OUT=/tmp/out bash perf/s36_closing.sh
set -u
. perf/s31_env.sh > /dev/null 2>&1
( python3 -m engine bench-circuit --constraints $(( (1 << 24) - 3 )) --curve bls12381 --quiet /tmp/b24bls &&
  python3 -m engine setup --backend gpu /tmp/b24bls/bench.r1cs /tmp/b24bls/bench.zkey --quiet 2>/dev/null &&
  rm -f /tmp/b24bls/bench.r1cs && echo "2^24 BLS12-381 key made" ) > /tmp/b24bls.log 2>&1 &
build_sppark
OUT=$OUT STEPS="tests" bash scripts/final_h200.sh 2>&1 | grep -E "^group|FAILED|ERROR|exit"
wait
grep -v "DEVELOPMENT KEY" /tmp/b24bls.log | tail -3
echo "== $(date +%T) ours, the defaults: curve | log2 n | kind | NTT ms | queued ms"
python3 perf/ntt.py --sizes 16,17,18,19,20,21,22,23,24,25,26 --curves bn128,bls12381 --repeats 7 \
  --json $OUT/ntt.json 2>&1 | grep -E "^\| (bn|bls)" | awk -F'|' '{print $2 "|" $3 "|" $5 "|" $6 "|" $7}'
for f in BN254 BLS12_381; do
  echo "== $(date +%T) sppark, $f Fr, forward (ms)"
  /tmp/sppark_ntt_$f 16 26 7 2>&1 | tail -11 || tail -5 /tmp/nvcc_$f.log
done
echo "== $(date +%T) the 2^24 BLS12-381 warm proof, stage by stage"
timeout 150 python3 perf/prove.py --files /tmp/b24bls/bench.zkey /tmp/b24bls/bench.wtns --backend gpu --repeats 3 \
  --workdir /tmp/pb24 --json $OUT/prove_b24bls.json 2>&1 | tail -4
echo "== $(date +%T) done"
