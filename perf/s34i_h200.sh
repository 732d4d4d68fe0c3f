#!/usr/bin/env bash
# Session 34, call 10 (carry [".whl", ".kcache"]): a lone CLI proof's key load with its staging buffers pinned
# first (the default until now) against pageable staging, at the 2^18, 2^20 and 2^22 domains, in turns, every
# module byte-compiled, runs 0.5 s apart.   OUT=/tmp/out bash perf/s34i_h200.sh
set -u
. perf/s31_env.sh
byte_compile_into /tmp/pyc
export PYTHONPYCACHEPREFIX=/tmp/pyc
for k in 18 20 22; do
  python3 perf/cli_start.py --runs 1 --domain-log $k --workdir /tmp/cs$k 2>&1 | grep -E "^\| prove \(key"
  echo "== $(date +%T) 2^$k domain: pinned staging / pageable, in turns, 0.5 s apart"
  python3 perf/cli_ab.py --zkey /tmp/cs$k/bench.zkey --wtns /tmp/cs$k/bench.wtns --runs 5 --gap 0.5 --out /tmp/ab$k \
    pin=.:GROTH16_PIN_ONE_LOAD_MIB=0 pageable=.:GROTH16_PIN_ONE_LOAD_MIB=1000000 2>&1 | \
    grep -E "^\| (wall|pin staging|load key|key: read|prove|gpu_upload) "
done
echo "== $(date +%T) done"
