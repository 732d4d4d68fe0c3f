#!/usr/bin/env bash
# h13load's device call (issue 13, keys at disk speed), from .wt/h13load with carry [".whl", ".wt/h13load"]
# and the kernels carried in .kcache (python scripts/carry_kernels.py build .kcache h13load=$PWD):
# the GPU tests of the key-load path, then perf/keyload.py on synthetic BN254 zkeys at 2^22 and 2^24:
# read, first load, from the cache (usable, and until the fold tables are done), cache off, cold, and a
# proof's latency right after load_key returns and after the tables.  Logs under $OUT.
#   OUT=/tmp/out bash perf/h13load_h200.sh
set -u
K=/tmp/kl
mkdir -p "$K" "$OUT"
export GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache h13load="$PWD" 2>&1 | tail -2 | tee "$OUT/log"
. scripts/gpu_env.sh >>"$OUT/log" 2>&1
export GROTH16_KEY_CACHE=$K/kc
# the synthetic zkeys (CPU only) beside the tests
python3 - >"$OUT/write.log" 2>&1 <<'PY' &
import sys, time
sys.path.insert(0, "perf")
from pathlib import Path
from keyload import synthetic_zkey
for k in (22, 24):
    t = time.time()
    synthetic_zkey(Path(f"/tmp/kl/synthetic_bn128_{k}.zkey.part"), "bn128", k)
    Path(f"/tmp/kl/synthetic_bn128_{k}.zkey.part").rename(f"/tmp/kl/synthetic_bn128_{k}.zkey")
    print(f"2^{k} written in {time.time() - t:.1f} s", flush=True)
PY
wpid=$!
echo "== $(date +%T) GPU tests" | tee -a "$OUT/log"
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_key_tables.py tests/test_key_cache.py \
  tests/test_gpu_pipeline.py tests/test_gpu_failure_paths.py 2>&1 | tail -25 | tee -a "$OUT/log"
wait $wpid; cat "$OUT/write.log" | tee -a "$OUT/log"
echo "== $(date +%T) keyload 2^22" | tee -a "$OUT/log"
timeout 60 python3 perf/keyload.py --log-constraints 22 --repeats 2 --cold 22 --proofs 3 --keep --workdir $K \
  --json "$OUT/k22.json" 2>&1 | tee -a "$OUT/log"
echo "== $(date +%T) keyload 2^24" | tee -a "$OUT/log"
timeout 100 python3 perf/keyload.py --log-constraints 24 --repeats 1 --tables-rerun none --proofs 2 --keep \
  --workdir $K --json "$OUT/k24.json" 2>&1 | tee -a "$OUT/log"
echo "== $(date +%T) done" | tee -a "$OUT/log"
