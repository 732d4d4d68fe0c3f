#!/usr/bin/env bash
# Issue 15's NTT ratio measured in one run: sppark's forward NTT (perf/sppark_ntt.cu, built here with nvcc against
# sppark's and blst's sources) beside ours (perf/ntt.py), both curves, 2^16 .. 2^26, CUDA events and wall clock.
# Carry [".whl", ".kcache", ".sppark"]; .sppark/sppark = `git archive HEAD ff ntt util` of supranational/sppark,
# .sppark/blst = `git archive HEAD src build build.sh bindings/blst.h bindings/blst_aux.h` of supranational/blst
# (the commits are printed).
#   OUT=/tmp/out bash perf/sppark_ntt.sh
set -u
. perf/s31_env.sh
S=$PWD/.sppark
echo "== $(date +%T) sppark $(cat $S/sppark.commit 2>/dev/null), blst $(cat $S/blst.commit 2>/dev/null); $(nvcc --version | tail -1)"
build_sppark
wait
for f in BN254 BLS12_381; do
  echo "== $(date +%T) sppark, $f Fr, forward (ms)"
  /tmp/sppark_ntt_$f 16 26 7 2>&1 || tail -5 /tmp/nvcc_$f.log
done
echo "== $(date +%T) ours (perf/ntt.py), both curves"
python3 perf/ntt.py --sizes 16,17,18,19,20,21,22,23,24,25,26 --repeats 7 --json $OUT/ntt.json 2>&1 | tail -40
echo "== $(date +%T) sppark again, BN254 (drift)"
/tmp/sppark_ntt_BN254 20 26 7 2>&1
echo "== $(date +%T) done"
