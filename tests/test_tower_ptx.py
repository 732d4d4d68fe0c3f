"""The tower's Fq12 operations compile without branches (NVRTC's PTX; no device needed).

Their lane groups pick their operands by data (fp2_group.cuh's pick: the part q of each group
differs), and a branch there is a divergent one: the warp runs the three parts' paths one after
another.  With `q == 0 ? a : q == 1 ? b : c` over operands in memory NVVM made each word a branch
and a conditional load (256 branches in a cyclotomic squaring, 288 in a product); the chains took
1.6-2.3x their time for it (perf/RESULTS.md, t13tower).  So: none in the product, the squarings and
the product by a line, on both curves.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("cuda.bindings.nvrtc")


def _probe():
    spec = importlib.util.spec_from_file_location("tower_probe", ROOT / "perf" / "tower_probe.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_tower_operations_have_no_branches(curve):
    probe = _probe()
    funcs = probe.ptx(ROOT, curve)
    ops = {"fp12 product": "_ZmlRK4fp12", "cyclotomic squaring": "7cyc_sqrEv", "squaring": "E3sqrEv",
           "product by a line": "10mul_line_"}
    found = {}
    for what, key in ops.items():
        names = [n for n in funcs if key in n and "fp12" in n]
        assert names, f"{what}: no PTX function matching {key}"
        found[what] = sum(probe.branches(funcs[n]) for n in names)
    assert found == {what: 0 for what in ops}
