"""perf/'s table printers under a reader of stdout that left (`python perf/timeline.py run.jsonl | head -1`): they
ended in a BrokenPipeError traceback; now quietly with 141, as the engine's CLI and a C tool killed by SIGPIPE do."""
from __future__ import annotations

import os
import subprocess
import sys

import msgspec

from conftest import REPO
from scheduler.timeline import Event

PIPE_GONE = 141


def _timeline(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [Event(t_ns=10 + i, stage=stage, job=0, partition=0)
             for i, stage in enumerate(("SUBMIT", "SYNTH_START", "SYNTH_END", "DONE"))]
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in lines))
    return path


def _run_reader_gone(argv: list[str], cwd) -> subprocess.CompletedProcess:
    """`argv` with stdout on a pipe whose reader has already left."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, *argv], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=60, cwd=cwd)
    finally:
        os.close(write_end)


def test_timeline_with_its_reader_gone_leaves_quietly(tmp_path):
    path = _timeline(tmp_path)
    for extra in ([], ["--json"]):
        proc = _run_reader_gone([str(REPO / "perf" / "timeline.py"), str(path), *extra], tmp_path)
        assert proc.returncode == PIPE_GONE, proc.stderr
        assert proc.stderr == "", proc.stderr


def test_timeline_gaps_with_its_reader_gone_leaves_quietly(tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    _timeline(tmp_path).rename(sweep / "timeline-split-s1-c1.jsonl")  # a perf/sweep.py --out folder
    proc = _run_reader_gone([str(REPO / "perf" / "timeline_gaps.py"), str(sweep)], tmp_path)
    assert proc.returncode == PIPE_GONE, proc.stderr
    assert proc.stderr == "", proc.stderr


def test_the_helper_ends_a_long_table_on_the_first_write_after_the_reader_left(tmp_path):
    """A table printed a row at a time, its reader gone after the first (`| head -1`): 141 at the next flush,
    no traceback, the script's `finally` run (its clean-up), nothing more written."""
    script = tmp_path / "rows.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO / 'perf')!r})\n"
        "import pipe_exit\n"
        "pipe_exit.install()\n"
        "try:\n"
        "    for i in range(100000):\n"
        "        print('row', i, flush=True)\n"
        "finally:\n"
        "    open(sys.argv[1], 'w').write('cleaned')\n")
    done = tmp_path / "done"
    proc = subprocess.run(f"{sys.executable} {script} {done} | head -1", shell=True, capture_output=True,
                          text=True, timeout=60, executable="/bin/bash")
    assert proc.stdout == "row 0\n"
    assert proc.stderr == "", proc.stderr
    assert done.read_text() == "cleaned"
    status = subprocess.run(f"set -o pipefail; {sys.executable} {script} {done} | head -1 >/dev/null",
                            shell=True, timeout=60, executable="/bin/bash")
    assert status.returncode == PIPE_GONE


def test_a_gpu_benchmark_gets_the_helper_from_require_gpu():
    """perf/'s GPU scripts each call needs_gpu.require_gpu(): that call installs it for all of them."""
    text = (REPO / "perf" / "needs_gpu.py").read_text()
    assert "pipe_exit" in text
    printers = [p.name for p in (REPO / "perf").glob("*.py") if '__name__ == "__main__"' in p.read_text()
                and p.name != "instant_serve.py"]  # (a test's server, no table: its stdout is its port line)
    missing = [name for name in printers
               if "require_gpu" not in (REPO / "perf" / name).read_text()
               and "pipe_exit" not in (REPO / "perf" / name).read_text()]
    assert missing == [], missing


def test_timeline_gantt_to_a_path_it_cannot_write_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "perf" / "timeline.py"), str(_timeline(tmp_path)), "--gantt",
                           str(tmp_path / "missing" / "g.png")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"error: {tmp_path / 'missing' / 'g.png'}: cannot write: No such file or directory\n"


def test_timeline_gantt_without_matplotlib_says_so_before_the_summary(tmp_path):
    script = (f"import sys, runpy; sys.modules['matplotlib'] = None; "
              f"sys.argv = ['timeline.py', {str(_timeline(tmp_path))!r}, '--gantt', {str(tmp_path / 'g.png')!r}]; "
              f"sys.path.insert(0, {str(REPO / 'perf')!r}); "
              f"runpy.run_path({str(REPO / 'perf' / 'timeline.py')!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "error: --gantt needs matplotlib (pip install matplotlib)\n"
    assert proc.stdout == "" and not (tmp_path / "g.png").exists()


def test_timeline_gantt_of_a_kind_matplotlib_cannot_write_is_one_line(tmp_path):
    out = tmp_path / "g.xyz"
    proc = subprocess.run([sys.executable, str(REPO / "perf" / "timeline.py"), str(_timeline(tmp_path)), "--gantt",
                           str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: {out}: matplotlib writes no .xyz files (name one of: ")
    assert len(proc.stderr.splitlines()) == 1 and proc.stdout == ""


def test_help_with_its_reader_gone_is_141_unbuffered_too(tmp_path):
    """`python -u -m engine --help | head` (PYTHONUNBUFFERED=1, common in images): argparse drops the
    BrokenPipeError of its write, and the command said 0 where the buffered one says 141 (README)."""
    for argv in (["--help"], ["witness", "--help"]):
        proc = _run_reader_gone(["-u", "-m", "engine", *argv], REPO)
        assert (proc.returncode, proc.stderr) == (PIPE_GONE, ""), argv
