#!/usr/bin/env bash
# Session 35, call 1 (carry [".whl", ".kcache", ".wt/base", ".wt/bc"]; .wt/base = `git archive ddcebc4 engine
# cuda_kernels scheduler cli.py` (stop 34), .wt/bc = the same of 22cd92a (the CLI's bytecode cache alone); "." adds
# the key's candidates and kernels made beside the context): the cold CLI in turns as the image has it (numpy
# without bytecode, PYTHONDONTWRITEBYTECODE=1) and with every module byte-compiled; the CLI's own tests and the
# CLI's GPU tests.
#   OUT=/tmp/out bash perf/s35a_h200.sh
set -u
. perf/s31_env.sh
echo "== $(date +%T) the image: PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset}; stdlib bytecode:" \
  "$(ls /usr/lib/python3.12/__pycache__ 2>/dev/null | wc -l) files"
python3 perf/cli_start.py --runs 1 --workdir /tmp/cs 2>&1 | grep -E "^\| (python|prove)"
echo "== $(date +%T) in turns, as the image has it, runs 0.5 s apart"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --gap 0.5 --out /tmp/ab \
  base=.wt/base bc=.wt/bc new=. 2>&1 | head -40
echo "== $(date +%T) in turns, as the image has it, back to back"
python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 --out /tmp/ab1 \
  base=.wt/base bc=.wt/bc new=. 2>&1 | head -3
echo "== $(date +%T) the bytecode cache: $(find ~/.cache/groth16-engine/pycache -name '*.pyc' | wc -l) files," \
  "$(du -sh ~/.cache/groth16-engine/pycache | cut -f1)"
PYC=/tmp/pyc
byte_compile_into $PYC $PWD/.wt
echo "== $(date +%T) in turns, every module byte-compiled (PYTHONPYCACHEPREFIX), runs 0.5 s apart"
PYTHONPYCACHEPREFIX=$PYC python3 perf/cli_ab.py --zkey /tmp/cs/bench.zkey --wtns /tmp/cs/bench.wtns --runs 11 \
  --gap 0.5 --out /tmp/ab2 base=.wt/base new=. 2>&1 | head -40
python3 -m engine export-vkey /tmp/cs/bench.zkey /tmp/cs/vkey.json
cp /tmp/ab/new-proof.json /tmp/cs/new-proof.json; cp /tmp/ab/new-public.json /tmp/cs/new-public.json
tar czf $OUT/cli.tgz -C /tmp/cs vkey.json new-proof.json new-public.json
cli_own_tests
echo "== $(date +%T) the CLI's GPU tests and the bytecode cache's"
python3 -m pytest -q -rf tests/test_cli_startup.py tests/test_bytecode_cache.py tests/test_exit_handoff.py \
  tests/test_key_cache.py tests/test_gpu_failure_paths.py -p no:cacheprovider 2>&1 | tail -3
echo "== $(date +%T) done"
