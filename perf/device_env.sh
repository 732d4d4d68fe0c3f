# Sourced by a device script from the checkout root (carry [".whl", ".kcache"]): the wheels into /tmp/site,
# the environment, the kernel builds carried from the development machine (scripts/carry_kernels.py).
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GROTH16_KERNEL_CACHE=$PWD/.kcache
python3 scripts/carry_kernels.py install .kcache main="$PWD" 2>&1 | tail -2
