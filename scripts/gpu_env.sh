# Source on the GPU machine (the device tool's checkout): installs the carried wheels
# (.whl/, made by ../shared/tools/device-wheels.sh) and builds both curves' kernels in
# parallel into the NVRTC cache, so that later steps measure work and not compiles.
#   . scripts/gpu_env.sh                          # both curves
#   GPU_ENV_CURVES=bn128 . scripts/gpu_env.sh     # one curve (BN254 builds in ~65 s, BLS12-381 ~110 s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
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
