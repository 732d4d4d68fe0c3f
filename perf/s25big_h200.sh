#!/usr/bin/env bash
# Session 25's 2^24 check: the BN254 2^24 bench key (bench-circuit + setup --backend gpu here), warm proofs on the
# whole H200 after the fold tables (perf/prove.py --files: it waits for them) with the binned bucket sort the key's
# footprint grants (msm_sort.SORT = auto) and without it (SORT = direct: no bins), alternating.
# Carry [".whl", ".kcache"].   OUT=/tmp/out bash perf/s25big_h200.sh
set -u
W=/tmp/s25big; mkdir -p $W
. scripts/gpu_env.sh || exit 2
export GROTH16_KEY_CACHE=$W/kc
t0=$(date +%s)
python3 -m engine bench-circuit --constraints 16777216 --curve bn128 --quiet $W/b24 &&
  python3 -m engine setup --backend gpu $W/b24/bench.r1cs $W/b24/bench.zkey --quiet 2>/dev/null
echo "key made in $(( $(date +%s) - t0 )) s"; rm -f $W/b24/bench.r1cs
for sort in auto direct auto; do
  echo "== msm_sort.SORT=$sort"
  timeout 45 python3 - $sort $W/b24 <<'PY' 2>&1 | grep "^| curve\|^| bn128"
import runpy, sys
import engine.backends.gpu.msm_sort as ms
ms.SORT = sys.argv[1]
d = sys.argv[2]
sys.argv = ["perf/prove.py", "--files", d + "/bench.zkey", d + "/bench.wtns", "--backend", "gpu", "--repeats", "3"]
runpy.run_path("perf/prove.py", run_name="__main__")
PY
done
