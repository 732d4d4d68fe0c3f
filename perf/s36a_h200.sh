#!/usr/bin/env bash
# Session 36, call 1 (carry [".whl", ".kcache", ".sppark"]): where a small NTT's time goes, ours against sppark's,
# under Nsight Compute: each pass's duration, occupancy, warp stall reasons and scheduler issue, BN254 Fr,
# forward, 2^16 and 2^17 (ours: perf/ntt.py's DIT passes; sppark: perf/sppark_ntt.cu's kernels).
#   OUT=/tmp/out bash perf/s36a_h200.sh
set -u
. perf/s31_env.sh
S=$PWD/.sppark
( cd $S/blst && ./build.sh > /tmp/blst.log 2>&1 && nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -DFEATURE_BN254 \
  -DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE -I$S/sppark -I$S/blst/src -Xcompiler -Wno-unused-function \
  $PWD/perf/sppark_ntt.cu -x cu $S/sppark/util/all_gpus.cpp -L$S/blst -lblst -o /tmp/sppark_ntt_BN254 \
  > /tmp/nvcc.log 2>&1 ) &
bpid=$!
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SourceCounters"
for k in 16 17; do
  echo "== $(date +%T) ours, 2^$k"
  timeout 120 ncu --clock-control none -k regex:ntt_dit_pass --launch-skip 4 --launch-count 2 $SECTIONS \
    python3 perf/ntt.py --sizes $k --curves bn128 --repeats 1 > $OUT/ncu_ours_$k.txt 2>&1; echo "ncu exit $?"
done
wait $bpid || { tail -20 /tmp/nvcc.log; }
for k in 16 17; do
  echo "== $(date +%T) sppark, 2^$k"
  timeout 120 ncu --clock-control none -k regex:_CT_NTT --launch-skip 2 --launch-count 2 $SECTIONS \
    /tmp/sppark_ntt_BN254 $k $k 1 > $OUT/ncu_sppark_$k.txt 2>&1; echo "ncu exit $?"
done
for f in $OUT/ncu_*.txt; do
  echo "== $f"
  grep -E "^  [a-z_A-Z<].*\(|Duration|Block Size|Grid Size|Registers Per|Achieved Occupancy|Theoretical Occ|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Executed Ipc A|Dynamic Shared" $f | head -60
done
echo "== $(date +%T) queued timings, ours then sppark"
python3 perf/ntt.py --sizes 16,17,18 --curves bn128 --repeats 7 2>&1 | tail -8
/tmp/sppark_ntt_BN254 16 18 7
echo "== $(date +%T) done"
