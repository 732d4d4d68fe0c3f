#!/usr/bin/env bash
# h13load's figures for the closing device call (about 55 s; BN254 kernels ready, the environment of
# scripts/final_h200.sh: PYTHONPATH, GROTH16_KERNEL_CACHE): perf/keyload.py on synthetic BN254 zkeys,
# 2^24 then 2^22: the read, the first load (its cache entry now written after it returns) and the load
# from the cache, each until usable and until its fold tables are done, keys unloaded as the Engine
# unloads them (the device call of 18:55 re-pinned an unloaded key's proof buffers at each next load),
# and at 2^22 a proof right after load_key returns (beside the tables) and one after them.  Each size runs
# in a fresh process, so "first / read" is the "first load <= 2x the read" at 2^24 and 2^22 (the
# CSR built on the device, the load's kernels preloaded: 0.77x / 1.52x in h13first's call); its cached
# load follows the first in the same process.  perf/h13first_final.sh adds a second miss.
#   OUT=/tmp/out bash perf/h13load_final.sh      (log: $OUT/h13load_final.log)
set -u
K=${W:-/tmp}/h13kl
mkdir -p "$K" "$OUT"
timeout 57 bash -c "python3 perf/keyload.py --log-constraints 24 --repeats 0 --tables-rerun none --no-cache-off \
  --workdir $K && python3 perf/keyload.py --log-constraints 22 --repeats 0 --proofs 1 --tables-rerun none --no-cache-off \
  --workdir $K" 2>&1 | tee "$OUT/h13load_final.log"
rm -rf "$K"
