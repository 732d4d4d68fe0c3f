"""The perf/ scripts as tools a user runs, without a GPU: a bad argument, a missing or wrong input, an output
folder that is no folder are one line and exit 2 (perf/script_args.py), never a traceback, never a run that
goes on with a number int() or float() took ('٣', -3, 1e400); --help works everywhere; outputs whole or none.

CUDA_VISIBLE_DEVICES="" hides any device, so these hold on a GPU machine too.
"""
from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

PERF = REPO / "perf"
ZKEY, WTNS = str(EXAMPLES / "bn128" / "sudoku.zkey"), str(EXAMPLES / "bn128" / "sudoku.wtns")


def _run(script: str, *argv: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, str(PERF / f"{script}.py"), *argv], cwd=cwd or REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def _one_line(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr[-2000:]
    return lines[0]


# (script, argv, what the one line must name): each of these ran on (or hung, or ended in a traceback)
BAD_NUMBERS = [
    ("wtns_pool", [WTNS, "--repeats", "٣"], "--repeats"),  # int() reads any Unicode digit: 3 repeats ran
    ("wtns_pool", [WTNS, "--repeats", "1_0"], "--repeats"),  # and underscores: 10
    ("subgroup", ["--repeats", "0"], "--repeats"),  # statistics.median([]): StatisticsError
    ("timeline_gaps", [str(REPO), "--batches", "-3"], "--batches"),  # a negative count was taken
    ("cancel_drain", ["--jobs", "2", "--after", "nan"], "--after"),  # EngineClosedError's traceback
    ("cancel_drain", ["--jobs", "2", "--after", "-1"], "--after"),  # a cancel before the start: ran, exit 0
    ("wire", ["--delay-ms", "1e400"], "--delay-ms"),  # float('1e400') is inf
    ("sweep", ["--simulate", "--concurrency", "1,,2"], "--concurrency"),  # the empty item was dropped
    ("ntt", ["--repeats", "٣"], "--repeats"),  # a GPU script: read before the device check, not after
    ("msm", ["--sizes", "16,x"], "--sizes"),  # int('x') after the device's set-up: ValueError
    ("pairing_latency", ["--curves", "bn128,foo"], "unknown curve 'foo'"),  # matched literally: timed nothing
    ("ray_throughput", ["--engines", "0"], "--engines"),
]


@pytest.mark.parametrize("script,argv,named", BAD_NUMBERS, ids=[f"{s}:{' '.join(a[-2:])}" for s, a, _ in BAD_NUMBERS])
def test_a_bad_number_or_name_is_one_line_and_exit_2(script, argv, named):
    line = _one_line(_run(script, *argv))
    assert line.startswith(f"{script}.py: error: ") and named in line, line


def test_a_curve_alias_is_read_as_the_engine_names_it(tmp_path):
    """--curves bn254 (the engine's alias) was compared with Curve.name literally by pairing_latency: no chain
    timed, no word said; an alias now reaches the GPU check like the name itself."""
    line = _one_line(_run("pairing_latency", "--curves", "BN254,bls12-381"))
    assert "needs a CUDA device" in line, line
    sys.path.insert(0, str(REPO / "perf"))
    try:
        import script_args  # noqa: PLC0415 - perf/'s, as the scripts import it
    finally:
        sys.path.remove(str(REPO / "perf"))
    assert script_args.curve_list("BN254,bls12-381") == "bn128,bls12381"  # the names the scripts compare with
    assert script_args.curve_name(" bn254 ") == "bn128"


@pytest.mark.parametrize("script,argv", [
    ("wtns_pool", ["/nonexistent/x.wtns"]),  # InputFileError's traceback
    ("cancel_drain", ["--zkey", "/nonexistent/x.zkey"]),
    ("ctrl_c", ["/nonexistent/x.zkey", WTNS]),  # "the proof ended before 0.3 s", a wrong diagnosis
    ("cli_profile", [str(REPO), WTNS]),  # a folder for a key
    ("sass_mix", ["--cubin", "/nonexistent/k.cubin"]),  # cuobjdump's CalledProcessError
])
def test_a_missing_input_file_is_one_line_naming_it(script, argv):
    line = _one_line(_run(script, *argv))
    bad = next(a for a in argv if a.startswith("/nonexistent") or a == str(REPO))
    assert bad in line and "error: argument" in line, line


def test_an_input_of_the_wrong_kind_is_the_engines_one_line():
    """A .zkey given as the witness: the engine's FormatError, which the script let out as a traceback."""
    line = _one_line(_run("wtns_pool", ZKEY))
    assert line == f"wtns_pool.py: {ZKEY}: is a .zkey file, not a .wtns file", line


def test_a_file_that_is_no_cubin_is_one_line():
    proc = _run("sass_mix", "--cubin", ZKEY)
    line = _one_line(proc, proc.returncode if "cuobjdump not found" in proc.stderr else 2)
    assert ZKEY in line or "cuobjdump not found" in line, line


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_an_output_folder_that_is_no_folder_is_one_line_before_any_run(tmp_path, kind):
    """sweep.py --out FILE ran the whole sweep, then os.makedirs raised FileExistsError (a traceback)."""
    out = tmp_path / "out"
    out.write_text("") if kind == "file" else os.mkfifo(out)
    proc = _run("sweep", "--simulate", "--proofs", "1", "--concurrency", "1", "--slots", "1", "--modes", "split",
                "--no-plots", "--out", str(out))
    line = _one_line(proc)
    assert "--out" in line and str(out) in line and "not a folder" in line, line
    assert proc.stdout == ""


@pytest.mark.parametrize("argv", [["--json", "{tmp}"], ["--json", "{tmp}/missing/rows.json"]])
def test_a_json_output_that_cannot_be_written_is_refused_before_the_device_check(tmp_path, argv):
    argv = [a.format(tmp=tmp_path) for a in argv]
    line = _one_line(_run("msm", *argv))
    assert "argument --json" in line and argv[1] in line, line


def test_ntt_ab_without_a_device_says_so_in_one_line(tmp_path):
    """run and plans loaded the driver first: DynamicLibNotFoundError's traceback."""
    assert "needs a CUDA device" in _one_line(_run("ntt_ab", "run", str(tmp_path)))
    assert "is not a folder" in _one_line(_run("ntt_ab", "run", str(tmp_path / "none")))
    afile = tmp_path / "f"
    afile.write_text("")
    assert "is a file, not a folder" in _one_line(_run("ntt_ab", "build", str(afile)))  # FileExistsError


def test_field_mul_has_a_help_and_refuses_what_it_does_not_take():
    """It had no parser: --help said "needs a CUDA device" (exit 2), and any flag was ignored."""
    proc = _run("field_mul", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: field_mul.py") and "Fr product" in proc.stdout
    assert "unrecognized arguments: --bogus" in _one_line(_run("field_mul", "--bogus"))


@pytest.mark.parametrize("argv,said", [
    (["build", "out"], "build takes 2 to 3 arguments"),  # sys.argv[3]: IndexError
    (["ptx"], "ptx takes 1 to 2 arguments"),
    (["ptx", "/nonexistent"], "holds no cuda_kernels/"),  # NVRTC's CompileFailed traceback
    (["ptx", str(REPO), "foo"], "unknown curve 'foo'"),
    (["sass", "/nonexistent"], "holds no .cubin"),  # printed nothing, exit 0
])
def test_tower_probe_reads_its_command_line_before_it_compiles(argv, said, tmp_path):
    line = _one_line(_run("tower_probe", *argv, cwd=tmp_path))
    assert line.startswith("usage: tower_probe.py") and said in line, line


def test_tower_probe_help_is_its_docstring():
    proc = _run("tower_probe", "--help")
    assert proc.returncode == 0 and "tower_probe.py build OUT TREE" in proc.stdout, proc.stderr


def test_every_script_help_exits_0():
    """One process for all: each script's --help (its parser built before any device or key work)."""
    code = ("import runpy, sys, io, contextlib\n"
            f"sys.path.insert(0, {str(PERF)!r})\n"
            "bad = []\n"
            "for name in sys.argv[1:]:\n"
            "    sys.argv = [name, '--help']\n"
            "    try:\n"
            "        with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "            runpy.run_path(name, run_name='__main__')\n"
            "        code = 0\n"
            "    except SystemExit as e:\n"
            "        code = e.code\n"
            "    if code not in (0, None) or 'usage' not in out.getvalue().lower():\n"
            "        bad.append((name, code))\n"
            "print(bad)\n")
    scripts = sorted(str(p) for p in PERF.glob("*.py") if '\nif __name__ == "__main__":' in p.read_text())
    proc = subprocess.run([sys.executable, "-c", code, *scripts], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "[]", (proc.stdout[-2000:],
                                                                                   proc.stderr[-2000:])


def test_sweeps_png_is_whole_or_none(tmp_path, monkeypatch):
    """The throughput PNG was savefig'd straight to its name: a write that failed half-way (a full disk) left
    half a PNG under the name; it is now written beside it and renamed (engine/file_writes.py)."""
    import matplotlib  # (the test extra installs it)
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    monkeypatch.syspath_prepend(str(PERF))
    import sweep

    monkeypatch.setattr(Figure, "savefig", _half_then_full_disk)
    png = tmp_path / "throughput.png"
    rows = [dict(mode="split", slots=1, conc=c, proofs_per_min=60.0 * c) for c in (1, 2)]
    with pytest.raises(Exception):  # noqa: B017, PT011 - the writer's error type is the engine's to choose
        sweep.plot_throughput(rows, str(png), "t")
    assert not png.exists() and list(tmp_path.iterdir()) == []


def _half_then_full_disk(self, fname, *a, **kw):
    """Figure.savefig writing part of a PNG, then the disk full."""
    if isinstance(fname, (str, os.PathLike)):
        with open(fname, "wb") as f:
            f.write(b"\x89PNG half")
    else:
        fname.write(b"\x89PNG half")
    raise OSError(errno.ENOSPC, "No space left on device")


def test_the_gantt_png_is_whole_or_none_and_an_old_one_stays(tmp_path, monkeypatch):
    """perf/timeline.py's plot_gantt (timeline.py --gantt, sweep.py's gantt.png) savefig'd straight to the name:
    a full disk left half a PNG there, over the last run's whole one."""
    import matplotlib  # (the test extra installs it)
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from scheduler.timeline import Event

    monkeypatch.syspath_prepend(str(PERF))
    import timeline

    events = [Event(t_ns=10 + i, stage=stage, job=0, partition=0)
              for i, stage in enumerate(("SUBMIT", "SYNTH_START", "SYNTH_END", "DONE"))]
    png = tmp_path / "gantt.png"
    png.write_bytes(b"the last run's whole PNG")
    monkeypatch.setattr(Figure, "savefig", _half_then_full_disk)
    with pytest.raises(OSError, match="No space left"):
        timeline.plot_gantt(events, str(png))
    assert png.read_bytes() == b"the last run's whole PNG" and [p.name for p in tmp_path.iterdir()] == ["gantt.png"]


def test_keyload_host_makes_a_workdir_that_is_not_there_yet(tmp_path):
    """--workdir NEW: the synthetic key's write said "cannot write: No such file or directory" (a traceback)."""
    work = tmp_path / "new" / "work"
    proc = _run("keyload_host", "--log-constraints", "8", "--workdir", str(work))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "cached host pipeline" in proc.stdout and any(work.iterdir())
