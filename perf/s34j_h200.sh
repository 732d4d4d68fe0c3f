#!/usr/bin/env bash
# Session 34, call 11 (carry [".whl", ".kcache"]): the final code's CLI over the real driver: its own tests, the GPU
# tests of its start and end, a 2^20-domain proof with the new default (pageable staging below PIN_ONE_LOAD_MIB)
# brought back for snarkjs.   OUT=/tmp/out bash perf/s34j_h200.sh
set -u
. perf/s31_env.sh
cli_own_tests
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_exit_handoff.py tests/test_cli_startup.py \
  tests/test_key_cache.py 2>&1 | tail -2
python3 perf/cli_start.py --runs 2 --domain-log 20 --workdir /tmp/cs20 2>&1 | grep -E "^\| prove|pin staging|read \+ upload"
python3 -m engine export-vkey /tmp/cs20/bench.zkey /tmp/cs20/vkey.json
tar czf $OUT/p20.tgz -C /tmp/cs20 vkey.json proof.json public.json
echo "== $(date +%T) done"
