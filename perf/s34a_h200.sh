#!/usr/bin/env bash
# Session 34, call 1 (carry [".whl", ".kcache"]): what a process's end costs with a device context and what the
# exit's hand-off (engine/exit_handoff.py) takes off it (perf/exit_handoff.py); the cold CLI's floor rows and
# stages with the hand-off, the same CLI in turns with GROTH16_EXIT_HANDOFF=0 / 1 (perf/cli_ab.py); prove's
# imports on this host; processes left holding the device; the CLI's own tests over the real driver; the NTT's
# passes under Nsight Compute.   OUT=/tmp/out bash perf/s34a_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) the process's end (perf/exit_handoff.py)"
python3 perf/exit_handoff.py --runs 9 --json $OUT/exit_handoff.json 2>&1
echo "== $(date +%T) cold CLI: floor rows and stages (hand-off on)"
python3 perf/cli_start.py --runs 7 --workdir /tmp/cs --json $OUT/cli_start.json 2>&1
echo "== $(date +%T) in turns: hand-off off / on"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --out /tmp/ab \
  off=.:GROTH16_EXIT_HANDOFF=0 on=.:GROTH16_EXIT_HANDOFF=1 2>&1
python3 -X importtime -m engine prove --backend gpu --quiet /tmp/cs/bench.zkey /tmp/cs/bench.wtns /tmp/it-p.json \
  /tmp/it-q.json 2> $OUT/importtime.txt
python3 -m engine export-vkey /tmp/cs/bench.zkey /tmp/cs/vkey.json
echo "== $(date +%T) sudoku through the CLI (hand-off on), three runs a curve"
sudoku_through_cli /tmp/cs 3
sleep 1
echo "== $(date +%T) processes still holding a device file 1 s later:"
for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null | grep -q /dev/nvidia && echo "$p $(tr '\0' ' ' < $p/cmdline)"; done
echo "(end of list)"
cli_own_tests
echo "== $(date +%T) NTT passes under Nsight Compute (BN254 2^24 forward, the committed forms)"
timeout 150 ncu --clock-control none --target-processes all -k regex:ntt_dit_pass --launch-count 3 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section Occupancy --section MemoryWorkloadAnalysis python3 perf/ntt.py --sizes 24 --curves bn128 --repeats 1 \
  > $OUT/ncu_ntt.txt 2>&1; echo "ncu exit $?"
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc A|No Eligible|Achieved Occupancy|Registers Per" $OUT/ncu_ntt.txt | head -40
tar czf $OUT/files.tgz -C /tmp/cs vkey.json proof.json public.json sudoku-bn128-proof.json sudoku-bn128-public.json \
  sudoku-bls12381-proof.json sudoku-bls12381-public.json
echo "== $(date +%T) done"
