#!/usr/bin/env bash
# Which change makes two queued GPU proofs of one key come out equal (the same pi_a: the
# closing call of 2026-12-01 evening, tests/test_gpu_msm_engine.py::test_queued_...): the merged
# tree, and copies of it each with one suspect undone (Python only, so the carried kernels serve
# all of them).  From the checkout root on the GPU machine, after scripts/final_h200.sh's set-up.
set -u
run() {  # name, patch (python code run in the copy's root)
  d=/tmp/v_$1; rm -rf "$d"; mkdir -p "$d"; cp -r engine scheduler cuda_kernels tests cli.py pyproject.toml "$d"/
  ( cd "$d" && python3 -c "$2" ) || { echo "$1: patch failed"; return; }
  for i in 1 2 3; do
    ( cd "$d" && PYTHONPATH=/tmp/site:$d timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu \
        tests/test_gpu_msm_engine.py -k queued 2>&1 | tail -1 | sed "s/^/$1 run $i: /" )
  done
}
sub() { echo "from pathlib import Path; p = Path('$1'); s = p.read_text(); assert '''$2''' in s, 'no match'; p.write_text(s.replace('''$2''', '''$3'''))"; }
run head "pass"
run no_pool_attr "$(sub cuda_kernels/driver.py 'REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                                       0))' 'REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                                       1))')"
run no_urgent "$(sub cuda_kernels/driver.py 'if not urgent:' 'if True:')"
run full_plans "$(sub engine/backends/gpu/key.py '        if self.tables_built():' '        if True:')"
run no_copy_rows "$(sub engine/backends/gpu/pipeline.py 'copy_rows(words[:wit.size].reshape(wit.shape), wit)' 'words[:wit.size] = wit.reshape(-1)')"
