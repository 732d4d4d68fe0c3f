#!/usr/bin/env bash
# Session 36, call 4 (carry [".whl", ".kcache", ".sppark", ".ntt_ab"]): the wide pass's L1 prefetch of the next
# round's twiddles, A/B in one run (perf/ntt_ab.py: eo3 / mo4 against eo3np / mo4np, outputs compared); the
# narrow passes with prefetch at 2^18-2^20 against the wide ones in turns; sppark's forward NTT and ours
# (perf/ntt.py, the defaults), 2^16-2^26, both curves, in the same call.
# Ran at a tree whose ntt.cuh had NTT_PREFETCH (the wide pass's `prefetch.global.L1` of the next round's entries,
# default on) and perf/ntt_ab.py's "...np" variants (-DNTT_PREFETCH=0); both were removed after this call measured
# the prefetch slower at every size (perf/RESULTS.md, session 36).
#   OUT=/tmp/out bash perf/s36d_h200.sh
set -u
. perf/s31_env.sh
build_sppark
echo "== $(date +%T) prefetch A/B (forward / inverse+coset ms, CUDA events)"
python3 perf/ntt_ab.py run .ntt_ab --sizes 16,18,19,20,21,22,23,24,25,26 --repeats 7 2>&1 | tail -24
echo "== $(date +%T) narrow (20) against wide (17) at 2^18-2^20, in turns: curve | log2 n | kind | queued ms"
python3 perf/ntt.py --sizes 18,19,20 --curves bn128,bls12381 --repeats 9 --narrow-max-log 17,20,17 2>&1 |
  grep -E "^\| (bn|bls)" | awk -F'|' '{print $2 "|" $3 "|" $5 "|" $7}'
wait
for f in BN254 BLS12_381; do
  echo "== $(date +%T) sppark, $f Fr, forward (ms)"
  /tmp/sppark_ntt_$f 16 26 7 2>&1 | tail -11 || tail -5 /tmp/nvcc_$f.log
done
echo "== $(date +%T) ours, the defaults: curve | log2 n | kind | NTT ms | queued ms"
python3 perf/ntt.py --sizes 16,17,18,19,20,21,22,23,24,25,26 --curves bn128,bls12381 --repeats 7 \
  --json $OUT/ntt.json 2>&1 | grep -E "^\| (bn|bls)" | awk -F'|' '{print $2 "|" $3 "|" $5 "|" $6 "|" $7}'
echo "== $(date +%T) sppark again, BN254 (drift)"
/tmp/sppark_ntt_BN254 16 26 7 2>&1 | tail -11
echo "== $(date +%T) done"
