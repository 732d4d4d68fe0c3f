# Source on the GPU machine (the device tool's checkout): installs the carried wheels
# (.whl/, made by ../shared/tools/device-wheels.sh), takes the kernel builds carried from the
# development machine where there are some (scripts/carry_kernels.py: GPU_ENV_KCACHE, default
# .kcache, under the tree name GPU_ENV_KNAME, default main), and builds both curves' kernels in
# parallel into the NVRTC cache (instant for carried builds), so that later steps measure work
# and not compiles.
#   . scripts/gpu_env.sh || exit 2                          # both curves
#   GPU_ENV_CURVES=bn128 . scripts/gpu_env.sh || exit 2     # one curve (BN254 builds in ~65 s, BLS12-381 ~110 s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
kc=${GPU_ENV_KCACHE:-.kcache}
if [ -z "${GROTH16_KERNEL_CACHE:-}" ] && [ -e "$kc/map.json" ]; then
  export GROTH16_KERNEL_CACHE=$PWD/$kc
  python3 scripts/carry_kernels.py install "$kc" "${GPU_ENV_KNAME:-main}=$PWD" 2>&1 | tail -2
fi
export GROTH16_KERNEL_CACHE=${GROTH16_KERNEL_CACHE:-/tmp/kernel-cache}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
for c in ${GPU_ENV_CURVES:-bn128 bls12381}; do
  python3 - "$c" <<'PY' &
import sys, time
from engine.algebra.curves import curve_by_name
from engine.backends.gpu.params import params_header
from cuda_kernels.build import compile_cubin
t = time.time()
compile_cubin(params_header(curve_by_name(sys.argv[1])), arch="sm_90")
print(f"kernels for {sys.argv[1]} built in {time.time() - t:.1f} s")
PY
done
wait
