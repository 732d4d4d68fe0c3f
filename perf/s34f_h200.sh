#!/usr/bin/env bash
# Session 34, call 6 (carry [".whl", ".kcache"]): whether the image's numpy (and the carried wheels) have bytecode;
# numpy's import as the image has it and from a byte-compiled copy (PYTHONPYCACHEPREFIX, compileall), as an
# installed package would be; then the cold CLI in turns without and with that prefix.
#   OUT=/tmp/out bash perf/s34f_h200.sh
set -u
. perf/s31_env.sh
python3 - <<'PY'
import os, sys, numpy
d = os.path.dirname(numpy.__file__)
pc = os.path.join(d, "__pycache__")
print("numpy", numpy.__version__, d, "writable:", os.access(d, os.W_OK), "dont_write_bytecode:", sys.flags.dont_write_bytecode)
print("numpy/__pycache__:", sorted(os.listdir(pc))[:4] if os.path.isdir(pc) else "none")
import cuda.bindings
cb = os.path.dirname(cuda.bindings.__file__)
print("cuda.bindings", cb, "pycache:", os.path.isdir(os.path.join(cb, "__pycache__")))
PY
export PYC=/tmp/pyc
byte_compile_into $PYC
for i in 1 2 3 4 5; do
  a=$( { /usr/bin/time -f %e python3 -c "import numpy" ; } 2>&1 )
  b=$( { PYTHONPYCACHEPREFIX=$PYC /usr/bin/time -f %e python3 -c "import numpy" ; } 2>&1 )
  c=$( { PYTHONPYCACHEPREFIX=$PYC OPENBLAS_NUM_THREADS=1 /usr/bin/time -f %e python3 -c "import numpy, cuda_kernels.driver" ; } 2>&1 )
  echo "import numpy: as the image has it $a s, byte-compiled $b s; numpy + cuda_kernels.driver byte-compiled, 1 BLAS thread $c s"
done
python3 perf/cli_start.py --runs 1 --workdir /tmp/cs 2>&1 | grep -E "^\| (python|prove)"
echo "== $(date +%T) in turns: as the image has it / byte-compiled (PYTHONPYCACHEPREFIX)"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --out /tmp/ab \
  image=. compiled=.:PYTHONPYCACHEPREFIX=$PYC 2>&1 | head -24
echo "== $(date +%T) the floor rows byte-compiled"
PYTHONPYCACHEPREFIX=$PYC python3 perf/cli_start.py --runs 5 --workdir /tmp/cs 2>&1 | grep -E "^\| |^  "
echo "== $(date +%T) done"
