"""`bench-circuit DIR`: what DIR is when it is no directory, and two runs making one new folder.

A FIFO, a socket, a device or a broken link given as DIR was "is a file, not a directory", and one under a parent
that is a FIFO "Not a directory".  The directories to remove on a failure were planned before os.makedirs, so a
folder another run made in between counted as this run's too, and this run's failure removed it under the other
(whose outputs then had no folder); a parent removed in between (another run's clean-up) failed the run.
"""
from __future__ import annotations

import os
import socket

import pytest

from conftest import run_engine
from test_edges_h34_bench import _run_module

# os.mkdir as seen by a run that another run beside it beats to OTHER (the other run's mkdir comes first), and
# whose build then fails; `gone`: the other run's clean-up removes OTHER again just before this run's next mkdir.
RACED = """
    import os
    import engine.groth16.bench_circuit as bench

    real_mkdir, calls = os.mkdir, []

    def raced(path, *args, **kwargs):
        calls.append(os.fsdecode(path))
        if os.fsdecode(path) == {other!r} and calls.count({other!r}) == 1:
            real_mkdir(path)  # the other run's
            if {gone!r}:
                os.mkdir = lambda p, *a, **k: (os.rmdir({other!r}), setattr(os, "mkdir", real_mkdir),
                                               real_mkdir(p, *a, **k))
        return real_mkdir(path, *args, **kwargs)

    os.mkdir = raced

    def no_memory(*args, **kwargs):
        raise MemoryError

    if {fail!r}:
        bench.make_bench_circuit = no_memory
"""


def test_a_failed_run_leaves_the_folder_another_run_made(tmp_path):
    proc = _run_module(tmp_path, RACED.format(other="shared", gone=False, fail=True),
                       "bench-circuit", "--constraints", "8", "shared/mine")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: out of host memory"), proc.stderr
    assert (tmp_path / "shared").is_dir()  # the other run's, which it still builds into
    assert not (tmp_path / "shared" / "mine").exists()  # this run's own


def test_an_interrupt_names_only_the_folders_this_run_made(tmp_path):
    proc = _run_module(tmp_path, RACED.format(other="a", gone=False, fail=False) + """
    import signal

    def stopped(*args, **kwargs):
        signal.raise_signal(signal.SIGTERM)
        sum(range(10))  # (the handler runs here)

    bench.make_bench_circuit = stopped
    """, "bench-circuit", "--constraints", "8", "a/b/c")
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr == "interrupted by SIGTERM; removed a/b/c and a/b, which this run had created\n"
    assert (tmp_path / "a").is_dir() and not (tmp_path / "a" / "b").exists()


def test_a_parent_removed_by_another_runs_clean_up_is_made_again(tmp_path):
    """The other run made `p` and, failing, removed it again between this run's two mkdirs: "cannot create the
    output directory: No such file or directory" before; now the plan is made again and both are this run's."""
    proc = _run_module(tmp_path, RACED.format(other="p", gone=True, fail=False),
                       "bench-circuit", "--constraints", "8", "p/q", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path / "p" / "q")) == ["bench.r1cs", "bench.wtns"]


def _fifo(path):
    os.mkfifo(path)


def _socket(path):
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))


def _broken_link(path):
    os.symlink("nowhere", path)


@pytest.mark.parametrize(("make", "what"), [
    (_fifo, "a pipe (FIFO)"),
    (_socket, "a socket"),
    (_broken_link, "a broken symbolic link (to nowhere)"),
    (lambda path: path.write_text("x"), "a file"),
])
def test_dir_that_is_no_directory_is_named_for_what_it_is(tmp_path, make, what):
    make(tmp_path / "out")
    proc = run_engine("bench-circuit", "--constraints", "8", "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (f"error: out: is {what}, not a directory: bench.r1cs and bench.wtns are written into a "
                           "directory\n")


def test_a_device_as_dir_is_a_device():
    proc = run_engine("bench-circuit", "--constraints", "8", "--name", "c", "/dev/null")
    assert proc.returncode == 2
    assert proc.stderr == ("error: /dev/null: is a device, not a directory: c.r1cs and c.wtns are written into a "
                           "directory\n")


@pytest.mark.parametrize(("make", "what"), [(_fifo, "a pipe (FIFO)"), (_broken_link, "a broken symbolic link (to "
                                                                                   "nowhere)")])
def test_a_parent_that_is_no_directory_is_named(tmp_path, make, what):
    make(tmp_path / "top")
    proc = run_engine("bench-circuit", "--constraints", "8", "top/sub/deeper", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"error: top/sub/deeper: cannot create the output directory: top is {what}, not a directory\n"


@pytest.mark.parametrize(("make", "what"), [(_fifo, "a pipe (FIFO)"), (_broken_link, "a broken symbolic link (to "
                                                                                     "nowhere)")])
def test_the_apis_dir_that_is_no_directory_is_named_for_what_it_is(tmp_path, make, what):
    """engine.groth16.write_bench_circuit (the API under the command) said "is a file" for a FIFO, and made a broken
    link's target, or failed with makedirs' "File exists"."""
    from engine.errors import InputFileError
    from engine.groth16.bench_circuit import write_bench_circuit

    make(tmp_path / "out")
    with pytest.raises(InputFileError) as info:
        write_bench_circuit(tmp_path / "out", "bn128", 8)
    assert str(info.value).endswith(f"out: is {what}, not a directory: bench.r1cs and bench.wtns are written into a "
                                    "directory"), str(info.value)
