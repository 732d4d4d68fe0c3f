#!/usr/bin/env bash
# Session 30, call 1 (carry [".whl", ".kcache"]): the cold CLI as it stands, and whether the device's start
# can overlap the host's (perf/s30_overlap.py).  OUT=/tmp/out bash perf/s30a_h200.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2
nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode --format=csv,noheader
echo "== $(date +%T) overlap probe"
python3 perf/s30_overlap.py --runs 3 2>&1
echo "== $(date +%T) cold CLI"
python3 perf/cli_start.py --runs 4 --workdir /tmp/cs 2>&1
echo "== $(date +%T) done"
