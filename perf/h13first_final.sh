#!/usr/bin/env bash
# h13first's figures for the closing device call (about 45 s; BN254 kernels ready, the environment of
# scripts/final_h200.sh: PYTHONPATH, GROTH16_KERNEL_CACHE): perf/keyload.py on synthetic BN254 zkeys,
# 2^24 then 2^22, each size in a fresh process: the read, the first load (a cache miss: the CSR built on
# the device from the raw coeffs records), then a second miss in the same process (device memory and
# pinned buffers already used once), each until usable ("first / read", "miss again / read") and until
# its fold tables are done; and the device CSR's kernels alone (CUDA events).  No loads from the cache
# (perf/h13load_final.sh has those, and a proof right after a load).
#   OUT=/tmp/out bash perf/h13first_final.sh      (log: $OUT/h13first_final.log)
set -u
K=${W:-/tmp}/h13fk
mkdir -p "$K" "$OUT"
A="--repeats 0 --tables-rerun none --no-cache-off --no-cached --miss-again --workdir $K"
timeout 58 bash -c "python3 perf/keyload.py --log-constraints 24 $A && python3 perf/keyload.py --log-constraints 22 $A" \
  2>&1 | grep -v '^{' | tee "$OUT/h13first_final.log"
rm -rf "$K"
