"""Output files: written all or nothing, through a symlink, in place on a device or a pipe, their permissions
kept, and an output that cannot be made refused before any work.

Before engine/file_writes.py each output was written to `NAME.tmp-PID` and renamed over NAME: as root,
`prove ... /dev/full pub.json` replaced the /dev/full device node with the proof (exit 0), `/dev/stdout`
replaced the link, a symlink became a regular file, a pipe was replaced instead of written, a key or witness
was written in place (a failed write left half a file), and an output in a folder that does not exist failed
only after the proof."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, run_engine
from engine.errors import InputFileError

SUDOKU = EXAMPLES / "bn128"


def _prove(*outputs, extra=()):
    return run_engine("prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", *outputs, "--backend", "cpu",
                      *extra, timeout=300)


def _one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr
    return lines[0]


def test_a_device_that_cannot_take_the_proof_is_an_error_and_stays_a_device(tmp_path):
    before = os.stat("/dev/full")
    proc = _prove("/dev/full", tmp_path / "pub.json")
    assert "/dev/full: cannot write: No space left on device" in _one_error_line(proc)
    after = os.stat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert list(tmp_path.iterdir()) == []  # the other output is not written either


def test_dev_null_takes_both_outputs(tmp_path):
    proc = _prove("/dev/null", "/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_pipe_is_written_not_replaced(tmp_path):
    fifo = tmp_path / "proof.fifo"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.update(text=fifo.read_text()), daemon=True)
    reader.start()
    proc = _prove(fifo, tmp_path / "pub.json")
    reader.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got["text"])["protocol"] == "groth16"
    assert json.loads((tmp_path / "pub.json").read_text()) == json.loads((SUDOKU / "public.json").read_text())


def test_a_symlink_is_written_through_and_a_file_keeps_its_permissions(tmp_path):
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    (tmp_path / "pub.json").write_text("old")
    os.chmod(tmp_path / "pub.json", 0o600)
    proc = _prove(tmp_path / "link.json", tmp_path / "pub.json")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "link.json").is_symlink() and os.readlink(tmp_path / "link.json") == "real.json"
    assert json.loads((tmp_path / "real.json").read_text())["protocol"] == "groth16"
    assert stat.S_IMODE(os.stat(tmp_path / "pub.json").st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "pub.json", "real.json"]


@pytest.mark.parametrize("where", ["missing folder", "a folder", "timeline in a missing folder"])
def test_an_output_that_cannot_be_made_is_refused_before_any_work(tmp_path, where):
    """Checked with a witness of another circuit: the output is named first, so nothing was read or proved."""
    outputs = {"missing folder": (tmp_path / "no" / "p.json", tmp_path / "pub.json"),
               "a folder": (tmp_path, tmp_path / "pub.json"),
               "timeline in a missing folder": (tmp_path / "p.json", tmp_path / "pub.json")}[where]
    extra = ("--timeline", str(tmp_path / "no" / "t.jsonl")) if where.startswith("timeline") else ()
    proc = run_engine("prove", SUDOKU / "sudoku.zkey", EXAMPLES / "bls12381" / "sudoku.wtns", *outputs,
                      "--backend", "cpu", *extra, timeout=300)
    line = _one_error_line(proc)
    if where == "a folder":
        assert line == f"error: {tmp_path}: is a directory, cannot write a file there"
    else:
        assert f"cannot write: the folder {tmp_path / 'no'} does not exist" in line
    assert not (tmp_path / "pub.json").exists()


def test_a_failed_binary_write_leaves_the_old_file_whole(tmp_path):
    """write_binfile (setup's key, witness's .wtns) wrote in place: an error half way left half a file.
    The failure is the OS's own, from a file size limit in a child process."""
    target = tmp_path / "w.wtns"
    target.write_bytes(b"the old witness")
    code = textwrap.dedent(f"""
        import resource, signal
        import numpy as np
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        from engine.errors import InputFileError
        from engine.formats.binfile import write_binfile
        try:
            write_binfile({str(target)!r}, "wtns", 2, [(1, [b"header"]), (2, [np.zeros(8192, np.uint8)])])
        except InputFileError as exc:
            print(exc)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env=QUIET_ENV)
    assert proc.stdout.strip() == f"{target}: cannot write: File too large", proc.stdout + proc.stderr
    assert target.read_bytes() == b"the old witness"
    assert [p.name for p in tmp_path.iterdir()] == ["w.wtns"]


def test_the_cli_clients_proof_files_take_the_same_path(tmp_path):
    from engine.client import ProofResult  # noqa: PLC0415

    result = ProofResult({"pi_a": ["1", "2", "1"], "protocol": "groth16"}, ["7"], "job", "key", {})
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    result.write(tmp_path / "link.json", "/dev/null")
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads((tmp_path / "real.json").read_text())["pi_a"] == ["1", "2", "1"]
    with pytest.raises(InputFileError, match="named twice"):
        result.write(tmp_path / "a.json", tmp_path / "a.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_concurrent_writers_of_one_folder_do_not_share_a_temporary_file(tmp_path):
    from engine.formats.json_text import write_atomically  # noqa: PLC0415

    errors = []

    def write(i: int) -> None:
        try:
            for k in range(50):
                write_atomically([(tmp_path / "out.json", f"{i}-{k}")])
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    assert (tmp_path / "out.json").read_text() in {f"{i}-49" for i in range(4)}


def test_a_name_at_the_length_limit_can_still_be_written(tmp_path):
    """The temporary name was NAME + ".tmp-PID": a 255-byte name could not be written at all."""
    from engine.formats.json_text import write_atomically  # noqa: PLC0415

    name = tmp_path / ("p" * 250 + ".json")
    write_atomically([(name, "{}")])
    assert Path(name).read_text() == "{}"


# The children below write nothing but their output: Python's own bytecode writes do not check for a short
# write, and under the size limit they would leave truncated .pyc files behind for every later run.
QUIET_ENV = {**os.environ, "GROTH16_PYCACHE": "off", "PYTHONDONTWRITEBYTECODE": "1"}


def _limited_file_size() -> None:  # in the child: writes past 2 KiB fail with EFBIG (the signal ignored)
    import resource  # noqa: PLC0415
    import signal  # noqa: PLC0415

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


def test_a_failed_witness_write_keeps_the_older_witness(tmp_path):
    """`witness` deleted its output after a failed write: an older witness at that path was lost with it."""
    target = tmp_path / "old.wtns"
    target.write_bytes((SUDOKU / "sudoku.wtns").read_bytes())
    proc = subprocess.run([sys.executable, "-m", "engine", "witness", SUDOKU / "sudoku.wasm", SUDOKU / "input.json",
                           target], capture_output=True, text=True, timeout=300, cwd=REPO,
                          preexec_fn=_limited_file_size, env=QUIET_ENV)
    assert f"{target}: cannot write: File too large" in _one_error_line(proc)
    assert target.read_bytes() == (SUDOKU / "sudoku.wtns").read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["old.wtns"]


def test_a_witness_to_a_full_device_leaves_the_device(tmp_path):
    """As root, `witness ... /dev/full` deleted /dev/full after its failed write."""
    before = os.stat("/dev/full")
    proc = run_engine("witness", SUDOKU / "sudoku.wasm", SUDOKU / "input.json", "/dev/full", timeout=300)
    assert "/dev/full: cannot write: No space left on device" in _one_error_line(proc)
    assert os.path.exists("/dev/full") and os.stat("/dev/full").st_rdev == before.st_rdev


def test_bench_circuit_into_a_file_says_it_needs_a_directory(tmp_path):
    """It said "cannot create the output directory: File exists"."""
    (tmp_path / "a.json").write_text("x")
    proc = run_engine("bench-circuit", "--constraints", "100", tmp_path / "a.json", timeout=300)
    assert _one_error_line(proc) == (f"error: {tmp_path / 'a.json'}: is a file, not a directory: bench.r1cs and "
                                     "bench.wtns are written into a directory")
    assert (tmp_path / "a.json").read_text() == "x"


@pytest.mark.parametrize("argv", [
    ["info", SUDOKU / "sudoku.zkey"],
    ["verify", SUDOKU / "verification_key.json", SUDOKU / "public.json", SUDOKU / "proof.json"],
    ["cache", "list"],
    ["prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "p.json", "pub.json", "--backend", "cpu", "--json"],
], ids=["info", "verify", "cache", "prove --json"])
def test_a_reader_that_left_ends_the_command_quietly(tmp_path, argv):
    """`python -m engine verify ... | head -0` printed a BrokenPipeError traceback; now it leaves as a C tool
    ended by SIGPIPE would (exit 141), with nothing on stderr but what the command said before."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes its first byte
    try:
        proc = subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


def test_a_timeline_that_cannot_be_written_stops_itself_not_the_proofs():
    """JsonlSink raised its OSError into whatever emitted the event (a proof's stage), and again at close."""
    from scheduler.timeline import Event, JsonlSink, Timeline  # noqa: PLC0415

    sink = JsonlSink("/dev/full", flush_every_s=0)
    timeline = Timeline([sink])
    t0 = time.monotonic_ns()
    for i in range(3):
        timeline.emit("GPU_START", job=i, t_ns=t0 + 10**9 * (i + 1))  # each flushes: the first fails, the rest skip
    assert isinstance(sink.error, OSError) and sink.error.errno == 28
    sink.close()
    quiet = JsonlSink(os.devnull)
    quiet(Event(t_ns=1, stage="DONE"))
    quiet.close()
    assert quiet.error is None


@pytest.mark.parametrize("json_lines", [False, True])
def test_prove_with_a_timeline_that_cannot_be_written_is_one_error_naming_it_and_keeps_the_proof(tmp_path,
                                                                                              json_lines):
    """It was a traceback from the Engine's teardown (exit 1); then one error line, but the proof, made and
    verified while the warning said the run went on without the timeline, was thrown away.  Now the proof is
    written and the exit (2) and the line say what failed."""
    proc = _prove(tmp_path / "p.json", tmp_path / "pub.json",
                  extra=("--timeline", "/dev/full", *(["--json"] if json_lines else [])))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    said = (f"/dev/full: cannot write the timeline: No space left on device (the proof was written to "
            f"{tmp_path / 'p.json'} and {tmp_path / 'pub.json'})")
    if json_lines:
        events = [json.loads(line) for line in lines]
        assert events[-1]["message"] == said
    else:
        assert lines[-1] == f"error: {said}"
        assert all(line.startswith(("warning: ", "error: ")) for line in lines), lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json", "pub.json"]
    public = json.loads((tmp_path / "pub.json").read_text())
    assert run_engine("verify", SUDOKU / "verification_key.json", tmp_path / "pub.json",
                      tmp_path / "p.json").returncode == 0 and len(public) == 16


def test_a_path_given_as_bytes_is_written(tmp_path):
    """The temporary name was made with an f-string: a bytes path became "b'...'" and failed."""
    from engine.formats.json_text import write_atomically  # noqa: PLC0415

    write_atomically([(os.fsencode(tmp_path / "p.json"), "{}")])
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"] and (tmp_path / "p.json").read_text() == "{}"


def test_dev_stdout_redirected_to_a_file_writes_that_file_not_a_new_one(tmp_path):
    """/dev/stdout resolved to the shell's file, which was replaced by a rename: the descriptor the shell
    opened was left on a file without a name (a `tail -f` of it saw nothing)."""
    out = tmp_path / "out.json"
    with open(out, "wb") as sink:
        inode = os.fstat(sink.fileno()).st_ino
        proc = subprocess.run([sys.executable, "-m", "engine", "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns",
                               "/dev/stdout", tmp_path / "pub.json", "--backend", "cpu", "--quiet"], stdout=sink,
                              stderr=subprocess.PIPE, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert os.stat(out).st_ino == inode
    assert json.loads(out.read_text())["protocol"] == "groth16"
