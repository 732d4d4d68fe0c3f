#!/usr/bin/env bash
# Session 42, call 2 (carry [".whl", ".kcache"]): where BN254 G1's 2^24 MSM spends its time under Nsight Compute —
# the XYZZ accumulation (msm_accumulate_g1i, the default) and the batch-affine rounds over the same products
# (msm_affine_forward/backward_g1i) — to say how far each is from its pipe and memory limits.
#   OUT=/tmp/out bash perf/s42b_h200.sh
set -u
. perf/s31_env.sh
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats
  --section Occupancy --section MemoryWorkloadAnalysis --section InstructionStats --section LaunchStats"
echo "== $(date +%T) XYZZ accumulation, 2^24"
timeout 200 ncu --clock-control none -k regex:msm_accumulate_g1i --launch-count 1 $SECTIONS \
  python3 perf/msm.py --sizes 24 --curves bn128 --repeats 1 > $OUT/ncu_xyzz.txt 2>&1; echo "ncu exit $?"
echo "== $(date +%T) batch-affine rounds, 2^24"
timeout 250 ncu --clock-control none -k "regex:msm_affine_(forward|backward|invert)_g1i" --launch-count 6 $SECTIONS \
  python3 perf/msm.py --sizes 24 --curves bn128 --accumulation affine --repeats 1 > $OUT/ncu_affine.txt 2>&1
echo "ncu exit $?"
for f in $OUT/ncu_xyzz.txt $OUT/ncu_affine.txt; do
  echo "== $f"
  grep -E "^  msm_|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Issue Slots Busy|No Eligible|Achieved Occupancy|Registers Per|L1/TEX Hit|L2 Hit|Executed Ipc A" $f | head -80
done
echo "== $(date +%T) done"
