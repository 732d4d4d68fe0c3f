#!/usr/bin/env bash
# Lead: one warm proof on one time line (perf/proof_timeline.py) at the 2^14 and 2^17 domains, and the cold
# CLI's stages.  Carry [".whl", ".kcache"].  OUT=/tmp/o bash perf/lead23b_h200.sh
set -u
W=/tmp/l23b; R=$OUT; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KEY_CACHE=$W/kc GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2
for c in 8189 65535; do
  d=$W/b$c; python3 -m engine bench-circuit --constraints $c --curve bn128 --quiet $d &&
    python3 -m engine setup --backend gpu $d/bench.r1cs $d/key.zkey --quiet 2>/dev/null
  timeout 40 python3 perf/proof_timeline.py --zkey $d/key.zkey --wtns $d/bench.wtns --repeats 15 2>&1 | tail -20
  timeout 30 python3 perf/host_split.py --zkey $d/key.zkey --wtns $d/bench.wtns --repeats 15 2>&1 | tail -3
done
timeout 60 python3 perf/cli_start.py --runs 3 --workdir $W/cli 2>&1 | tail -24
