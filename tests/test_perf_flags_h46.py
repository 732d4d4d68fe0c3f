"""The perf/ scripts' list and word flags read at the parse (perf/script_args.py): a typo in --fix, --plans,
--budgets, --modes, --legacy ... was int() or a KeyError after the device's set-up (a traceback), a ConfigError
after the key's load, or on a machine without a GPU "needs a CUDA device", which hid it; now it is one line
naming the flag, exit 2, on any machine.  Good values still reach the device check, handed on as before.

CUDA_VISIBLE_DEVICES="" hides any device, so these hold on a GPU machine too.
"""
from __future__ import annotations

import argparse
import sys

import pytest

from conftest import EXAMPLES, REPO
from test_perf_scripts_h44 import PERF, _one_line, _run

ZKEY, WTNS = str(EXAMPLES / "bn128" / "sudoku.zkey"), str(EXAMPLES / "bn128" / "sudoku.wtns")
SWEEP = ["--simulate", "--proofs", "1", "--concurrency", "1", "--slots", "1", "--no-plots"]

# (script, argv, what the one line must say): each ran on past the parse before
BAD = [
    ("msm", ["--fix", "16:256"], "SERIAL:WARPMAX:PERLANE"),
    ("msm", ["--fix", "16:256:x"], "'16:256:x'"),
    ("msm", ["--affine", "128x8,256x"], "'256x'"),
    ("msm", ["--affine", "128x8ss"], "THREADSxM"),
    ("msm", ["--window", "base,1l"], "'1l'"),
    ("msm", ["--scalars", "witness:0.5,0.6"], "more than 1"),
    ("msm", ["--scalars", "witness:0.5"], "witness:ZERO,ONE"),
    ("msm", ["--scalars", "randon"], "'randon'"),
    ("msm", ["--combos", "ref"], "ABI:SORT"),  # unpacked as (abi, sort, *bound): ValueError
    ("msm", ["--combos", "ref:direct:x"], "'x' is no count"),
    ("msm", ["--combos", "ref:bin"], "'bin'"),
    ("msm", ["--product", "refx"], "'refx'"),
    ("msm", ["--sort", "bin"], "'bin'"),
    ("msm", ["--accumulation", "xyzz,afine"], "'afine'"),
    ("msm", ["--fold", "ful"], "'full'"),
    ("msm", ["--fold", "0"], "below 1"),
    ("msm", ["--min-segment", "1,,2"], "comma list"),
    ("msm", ["--threads-per-sm", "\u0663"], "no count"),  # int() read the Arabic-Indic 3
    ("msm", ["--heavy-slices", "0"], "below 1"),
    ("msm", ["--reduce-threads", "1_28"], "no count"),
    ("msm", ["--min-chunk", "-1"], "no count"),
    ("ntt_ab", ["plans", str(REPO), "--plans", "24=10-10-x"], "k=a-b-c"),
    ("ntt_ab", ["plans", str(REPO), "--plans", "24=10-10-5"], "adds up to 25, not 24"),  # an assert's traceback
    ("ntt_ab", ["plans", str(REPO), "--builds", "bn128=eo9"], "curve=variant"),
    ("ntt_ab", ["plans", str(REPO), "--builds", "foo=eo3"], "unknown curve 'foo'"),
    ("ntt_ab", ["plans", str(REPO)], "holds no bn128-eo3.cubin"),  # FileNotFoundError after the set-up
    ("c2", ["--zkey", ZKEY, "--wtns", WTNS, "--budgets", "16GiB,wole"], "'wole'"),
    ("c2", ["--zkey", ZKEY, "--wtns", WTNS, "--modes", "single,splt"], "'splt' is no lock mode"),
    ("c2", ["--zkey", ZKEY, "--wtns", WTNS, "--host-budget", "1e400"], "--host-budget"),
    ("c2", ["--zkey", ZKEY, "--wtns", WTNS, "--sort", "bin"], "--sort"),  # perf/sort_flags.py
    ("c2", ["--zkey", ZKEY, "--wtns", WTNS, "--binned-curves", "bn12"], "unknown curve 'bn12'"),
    ("sweep", [*SWEEP, "--modes", "single,splt"], "'splt' is no lock mode"),  # ran both, 'splt' a ConfigError
    ("sweep", [*SWEEP, "--vram-budget", "8Gx"], "--vram-budget"),
    ("sweep", [*SWEEP, "--sim-vram", "nan"], "--sim-vram"),
    ("sweep", [*SWEEP, "--sim-working-set", "5 GiBs"], "--sim-working-set"),
    ("sweep", [*SWEEP, "--gantt", "split:1"], "MODE:SLOTS:CONC"),  # unpacking's ValueError after the sweep
    ("sweep", [*SWEEP, "--gantt", "split:2:1"], "not one of this sweep's runs"),  # runs[chosen]: KeyError
    ("keyload", ["--legacy", "2x"], "--legacy"),
    ("keyload", ["--legacy", "20"], "not among the sizes timed"),  # timed nothing, said nothing
    ("keyload", ["--cold", "22,,24"], "--cold"),
    ("keyload", ["--tables-rerun", "al"], "'all'"),
    ("keyload", ["--zkey", ZKEY, "--cold", "22"], "--zkey times one key"),
    ("tables", ["--builds", "plain,e0"], "'e0' is no table build"),
    ("exit_handoff", ["--variants", "exit,handof"], "'handof' is no variant"),
]


@pytest.mark.parametrize("script,argv,said", BAD, ids=[f"{s}:{' '.join(a[-2:])}" for s, a, _ in BAD])
def test_a_bad_list_item_is_one_line_at_the_parse(script, argv, said):
    line = _one_line(_run(script, *argv))
    assert line.startswith(f"{script}.py: error: argument ") and said in line, line


@pytest.mark.parametrize("argv", [
    ["--fix", "16:256:8,8:16:4", "--affine", "128x8,256x4s", "--window", "base,11", "--fold", "2"],
    ["--scalars", "witness:0.1,0.2,random", "--combos", "default:binned:0,eo:direct", "--product", "ref,eo"],
    ["--accumulation", "xyzz, affine", "--sort", "direct", "--min-chunk", "64", "--threads-per-sm", "512"],
])
def test_good_lists_reach_the_device_check(argv):
    assert "needs a CUDA device" in _one_line(_run("msm", *argv))


def test_ntt_ab_plans_with_its_cubins_reach_the_device_check(tmp_path):
    for name in ("bn128-eo3", "bls12381-eo4"):
        (tmp_path / f"{name}.cubin").write_bytes(b"")
    line = _one_line(_run("ntt_ab", "plans", str(tmp_path), "--builds", "BN254=eo3,bls12381=eo4",
                          "--plans", "24=10-10-4/8-8-8,20=10-10"))
    assert "needs a CUDA device" in line, line


def test_the_readers_hand_on_what_main_splits(monkeypatch):
    """The value as main() reads it: items stripped (" affine" matched no mode), random first (main() split
    "witness:Z,O,random" into one kind, then a ValueError after the set-up), plans and builds as dicts."""
    monkeypatch.syspath_prepend(str(PERF))
    import msm
    import ntt_ab
    import script_args

    assert msm.scalar_list("witness:0.1,0.2, random") == "random,witness:0.1,0.2"
    assert msm.scalar_list("witness:0,1,witness:0.5,0.25") == "witness:0,1,witness:0.5,0.25"
    assert msm._accumulation("xyzz, affine") == "xyzz,affine"
    assert msm._fold(" full") == "full" and msm._fold("4") == "4" and msm._window("") == ""
    assert ntt_ab.plan_list("24=10-10-4/8-8-8,20=10-10") == {24: [[10, 10, 4], [8, 8, 8]], 20: [[10, 10]]}
    assert ntt_ab.build_list("bn254=eo3") == {"bn128": "eo3"}
    assert script_args.word_or("all", script_args.count_list, "x")("22, 24") == "22,24"
    with pytest.raises(argparse.ArgumentTypeError, match="is not a size"):
        script_args.size("8 parsecs")


def test_sort_flags_words_are_the_engines():
    from engine.backends.gpu import msm_sort

    sys.path.insert(0, str(PERF))
    import sort_flags

    assert sort_flags.SORTS == msm_sort.SORTS


def test_sweeps_own_errors_say_its_name_as_the_parser_does(tmp_path):
    """A ConfigError in the sweep said "sweep: ...", the parser and run_main "sweep.py: ..."."""
    proc = _run("sweep", *SWEEP, "--sim-vram", "0", "--out", str(tmp_path))
    assert _one_line(proc).startswith("sweep.py: simulation.vram: "), proc.stderr


def test_c2s_own_errors_say_its_name():
    """c2.py said "c2: ..." for an engine error (here: no device)."""
    proc = _run("c2", "--zkey", ZKEY, "--wtns", WTNS, "--budgets", "16GiB", "--modes", "split", "--jobs", "1",
                "--partitions", "1")
    assert _one_line(proc).startswith("c2.py: "), proc.stderr


def test_sass_mix_without_cuobjdump_is_one_line_and_exit_2(monkeypatch, capsys):
    """sys.exit(str): exit 1, without the script's name; now exit 2, as every other refusal."""
    monkeypatch.syspath_prepend(str(PERF))
    import shutil

    import sass_mix

    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setitem(sys.modules, "nvidia", None)  # (import nvidia: ImportError)
    with pytest.raises(SystemExit) as exit_:
        sass_mix.cuobjdump()
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and err[0].startswith("sass_mix.py: cuobjdump not found"), err
