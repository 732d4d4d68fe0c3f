"""The CLI as a process: signals other than Ctrl-C, standard streams that are closed, full or gone, odd paths,
a deleted working directory, too little memory to load, and usage errors under --json.

Each test names what used to happen.  Signals are sent by the process to itself from a patched stage (through
runpy, as `python -m engine` runs), so they land at a known moment whatever this machine's speed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, FIXTURES, REPO

TINY = FIXTURES / "tiny" / "bn128"
SUDOKU = EXAMPLES / "bn128"

# Every process below this one, as /proc lists them (the CPU pool's forkserver and its workers included)
DESCENDANTS = """
def descendants(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            for child in f.read().split():
                out += [int(child), *descendants(int(child))]
    return out
"""


def _env(tmp_path: Path, **extra) -> dict:
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO), *inherited]), **extra}


def _run_module(tmp_path: Path, name: str, body: str, *argv, preexec_fn=None) -> subprocess.CompletedProcess:
    """`python -m <name>`: a module that patches the engine, then runs `python -m engine <argv>` as __main__."""
    (tmp_path / f"{name}.py").write_text("import os\n" + textwrap.dedent(DESCENDANTS) + textwrap.dedent(body)
                                         + textwrap.dedent(f"""
        import runpy, sys
        sys.argv = ["engine", *{[str(a) for a in argv]!r}]
        runpy.run_module("engine", run_name="__main__", alter_sys=True)
        """))
    return subprocess.run([sys.executable, "-m", name], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120, preexec_fn=preexec_fn)


def _engine(tmp_path: Path, *argv, preexec_fn=None, env=None, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], cwd=cwd or tmp_path,
                          env=env or _env(tmp_path), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                          text=True, timeout=120, preexec_fn=preexec_fn)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _gone(pids: list[int], within_s: float = 10.0) -> list[int]:
    """The pids still running (a zombie waiting for init counts as gone) after up to `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.append(pid)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _out(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    return out


@pytest.mark.parametrize("signame, extra", [("SIGTERM", []), ("SIGHUP", ["--json"]), ("SIGQUIT", [])])
def test_a_stop_signal_while_proving_exits_128_plus_it_with_one_line_no_files_no_workers(tmp_path, signame, extra):
    """SIGTERM, SIGHUP and SIGQUIT killed the command where it stood: no word on stderr, the CPU pool's workers
    left running as orphans, a temporary file where the proof was being written (SIGQUIT dumped core)."""
    out, kids = _out(tmp_path), tmp_path / "kids.json"
    proc = _run_module(tmp_path, "stop_in_prove", f"""
        import json, signal
        import engine.groth16.prover as prover
        from engine.algebra import msm

        real_prove = prover.prove

        def prove_then_stopped(*args, **kwargs):
            msm.warm_pool(2)  # the CPU MSM's workers, as a large proof starts them
            open({str(kids)!r}, "w").write(json.dumps(descendants(os.getpid())))
            os.kill(os.getpid(), signal.{signame})
            sum(range(10))  # a Python handler runs between bytecodes
            return real_prove(*args, **kwargs)

        prover.prove = prove_then_stopped
        """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", out / "proof.json", out / "public.json",
                       "--backend", "cpu", *extra)
    signum = getattr(signal, signame)
    assert proc.returncode == 128 + signum, (proc.returncode, proc.stderr)
    if extra:  # every line JSON (the stages), the last one the error
        lines = [json.loads(line) for line in _lines(proc.stderr)]
        assert lines[-1] == {"event": "error", "error": "Interrupted", "message": f"interrupted by {signame}",
                             "exit_code": 128 + signum}
    else:
        assert _lines(proc.stderr) == [f"interrupted by {signame}"]
    assert sorted(os.listdir(out)) == []
    pids = json.loads(kids.read_text())
    assert len(pids) >= 3, pids  # the forkserver and two workers (and the resource tracker)
    assert _gone(pids) == []


def test_sigterm_on_the_engines_path_leaves_no_timeline_shared_memory_or_workers(tmp_path):
    """It left the started timeline, the witness's /dev/shm blocks and the synthesis pool's workers behind."""
    out, kids = _out(tmp_path), tmp_path / "kids.json"
    proc = _run_module(tmp_path, "stop_in_engine", f"""
        import json, signal
        from engine.backends.cpu import CpuBackend

        real_core = CpuBackend.prove_core

        def core_then_stopped(self, *args, **kwargs):
            open({str(kids)!r}, "w").write(json.dumps([os.getpid(), descendants(os.getpid())]))
            os.kill(os.getpid(), signal.SIGTERM)
            return real_core(self, *args, **kwargs)

        CpuBackend.prove_core = core_then_stopped
        """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", out / "proof.json", out / "public.json",
                       "--backend", "cpu", "--timeline", out / "t.jsonl")
    assert proc.returncode == 143, (proc.returncode, proc.stderr)
    assert _lines(proc.stderr) == ["interrupted by SIGTERM"], proc.stderr
    assert sorted(os.listdir(out)) == []
    pid, pids = json.loads(kids.read_text())
    assert _gone(pids) == []
    shm = Path("/dev/shm")  # the witness blocks: g16w-PID-... and g16w.owner-PID-...
    assert [n for n in (os.listdir(shm) if shm.is_dir() else []) if f"-{pid}-" in n] == []


def test_a_stop_signal_once_the_proof_is_being_written_is_too_late_to_stop_it(tmp_path):
    """SIGTERM while the files were written ended the process by the signal (-15) after a proof was made."""
    out = _out(tmp_path)
    proc = _run_module(tmp_path, "stop_in_write", """
        import signal
        from engine.groth16.proof import Proof

        real_write = Proof.write

        def write_after_sigterm(self, *args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)
            sum(range(10))
            return real_write(self, *args, **kwargs)

        Proof.write = write_after_sigterm
        """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", out / "proof.json", out / "public.json",
                       "--backend", "cpu")
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stderr == ""
    assert json.loads((out / "proof.json").read_text())["protocol"] == "groth16"


def test_an_inherited_ignored_sigint_stays_ignored(tmp_path):
    """A job a script started in the background (`cmd &` ignores SIGINT and SIGQUIT) was made interruptible
    again: the terminal's Ctrl-C meant for the script stopped the proof too (exit 130)."""
    out = _out(tmp_path)
    proc = _run_module(tmp_path, "ignored_sigint", """
        import signal
        import engine.groth16.prover as prover

        real_prove = prover.prove

        def prove_with_ctrl_c(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGQUIT)
            sum(range(10))
            return real_prove(*args, **kwargs)

        prover.prove = prove_with_ctrl_c
        """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", out / "proof.json", out / "public.json",
                       "--backend", "cpu",
                       preexec_fn=lambda: [signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGQUIT)])
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert (out / "proof.json").exists() and (out / "public.json").exists()


@pytest.mark.parametrize("argv", [
    ["verify", SUDOKU / "verification_key.json", SUDOKU / "public.json", SUDOKU / "proof.json"],
    ["info", SUDOKU / "sudoku.zkey"],
    ["prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "p.json", "pub.json", "--backend", "cpu", "--json"],
    ["prove", "--help"],
], ids=["verify", "info", "prove --json", "help"])
def test_a_full_stdout_is_one_error_line(tmp_path, argv):
    """`verify ... > /dev/full` printed an OSError traceback and exited 1 (verify's "invalid proof"); `--help`
    printed "Exception ignored" with a traceback and exited 120."""
    with open("/dev/full", "w") as full:
        proc = _engine(tmp_path, *argv, stdout=full)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert _lines(proc.stderr)[-1:] == ["error: standard output: cannot write: No space left on device"] or \
        json.loads(_lines(proc.stderr)[-1])["message"] == "standard output: cannot write: No space left on device"


def test_a_closed_stdout_is_one_error_line_when_something_is_printed(tmp_path):
    """`verify ... >&-`: AttributeError: 'NoneType' object has no attribute 'flush', exit 1."""
    proc = _engine(tmp_path, "verify", SUDOKU / "verification_key.json", SUDOKU / "public.json",
                   SUDOKU / "proof.json", preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert _lines(proc.stderr) == ["error: standard output: cannot write: Bad file descriptor"], proc.stderr


def test_a_closed_stderr_does_not_stop_a_witness_nor_move_errors_to_stdout(tmp_path):
    """`witness ... 2>&-` failed (exit 1) without writing the witness; an error line went to stdout."""
    proc = _engine(tmp_path, "witness", SUDOKU / "sudoku.wasm", SUDOKU / "input.json", tmp_path / "w.wtns",
                   preexec_fn=lambda: os.close(2))
    assert proc.returncode == 0, proc.stdout
    assert (tmp_path / "w.wtns").read_bytes() == (SUDOKU / "sudoku.wtns").read_bytes()
    proc = _engine(tmp_path, "info", tmp_path / "missing.zkey", preexec_fn=lambda: os.close(2))
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout


def test_a_full_stderr_keeps_the_errors_exit_code(tmp_path):
    """An error that could not be printed on a full stderr exited 1 (a traceback nobody saw), not 2."""
    with open("/dev/full", "w") as full:
        proc = _engine(tmp_path, "info", tmp_path / "missing.zkey", stderr=full)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout


@pytest.mark.parametrize("closed", [0, 1])
def test_the_engines_path_proves_with_stdin_or_stdout_closed(tmp_path, closed):
    """uvloop took descriptor 0 or 1 for its own pipe and aborted on closing it (SIGABRT, exit 134)."""
    proc = _engine(tmp_path, "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "p.json", "pub.json",
                   "--backend", "cpu", "--timeline", "t.jsonl", preexec_fn=lambda: os.close(closed))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert json.loads((tmp_path / "p.json").read_text())["protocol"] == "groth16"


def test_a_path_with_control_characters_is_still_one_error_line(tmp_path):
    """A newline in a file name split the error over two lines; an escape sequence reached the terminal."""
    proc = _engine(tmp_path, "info", "a\nb\x1b[2J.zkey")
    assert proc.returncode == 2
    assert proc.stderr == "error: a\\nb\\x1b[2J.zkey: no such file\n"


def test_a_usage_error_with_json_is_one_json_line(tmp_path):
    """argparse's usage and message were printed as text under --json."""
    proc = _engine(tmp_path, "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "p.json", "pub.json",
                   "--bogus", "--json")
    assert proc.returncode == 2
    (line,) = _lines(proc.stderr)
    assert json.loads(line) == {"event": "error", "error": "UsageError", "message": "unrecognized arguments: --bogus",
                                "exit_code": 2}


def test_a_relative_output_in_a_deleted_directory_is_one_line_naming_it(tmp_path):
    """It printed a FileNotFoundError traceback from os.path.realpath (exit 1)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = _engine(tmp_path, "export-vkey", SUDOKU / "sudoku.zkey", "vk.json", cwd=gone,
                   preexec_fn=lambda: os.rmdir(gone))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert _lines(proc.stderr) == ["error: vk.json: cannot write: the current directory no longer exists"]


@pytest.mark.parametrize("failure, detail", [
    ('OSError(errno.ENOMEM, "Cannot allocate memory", "/work/engine/formats")',
     "OSError: [Errno 12] Cannot allocate memory: '/work/engine/formats'"),
    ('ImportError("\\n\\nIMPORTANT: PLEASE READ THIS\\nmany lines")'
     ' from ImportError("libquadmath.so.0: failed to map segment from shared object")',
     "ImportError: libquadmath.so.0: failed to map segment from shared object"),
], ids=["ENOMEM", "numpy's ImportError"])
def test_too_little_memory_to_load_the_engine_is_one_line(tmp_path, failure, detail):
    """An import that ran out of memory (RLIMIT_AS) printed the import's traceback (OSError ENOMEM, or numpy's
    thirty-line ImportError around "failed to map segment from shared object")."""
    proc = _run_module(tmp_path, "no_memory_to_import", f"""
        import errno, sys

        class NoMemory:
            def find_spec(self, name, path=None, target=None):
                if name == "engine.formats.zkey":
                    raise {failure}

        sys.meta_path.insert(0, NoMemory())
        """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", tmp_path / "p.json", tmp_path / "pub.json",
                       "--backend", "cpu")
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert _lines(proc.stderr) == [f"error: out of host memory while loading the engine ({detail}); raise the "
                                   "memory limit (ulimit -v)"], proc.stderr


def test_no_thread_for_the_interrupt_watchdog_still_proves(tmp_path):
    """Under a small RLIMIT_AS the watchdog's thread could not start: RuntimeError: can't start new thread."""
    out = _out(tmp_path)
    proc = _run_module(tmp_path, "no_thread", """
        import threading

        real_start = threading.Thread.start

        def start_unless_watchdog(self):
            if self.name == "interrupt-watch":
                raise RuntimeError("can't start new thread")
            return real_start(self)

        threading.Thread.start = start_unless_watchdog
        """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", out / "proof.json", out / "public.json",
                       "--backend", "cpu")
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert sorted(os.listdir(out)) == ["proof.json", "public.json"]


def test_a_cache_home_whose_top_folder_is_missing_leaves_nothing_in_the_working_directory(tmp_path):
    """With HOME=/nonexistent (a service user's) and Python not writing bytecode beside the sources, the
    bytecode cache's folders were made relative to the working directory: ./nonexistent/.cache/..."""
    missing = f"/g16-missing-{os.getpid()}-{time.time_ns()}"
    env = {k: v for k, v in _env(tmp_path).items() if k not in ("XDG_CACHE_HOME", "GROTH16_PYCACHE")}
    env.update(HOME=missing, PYTHONDONTWRITEBYTECODE="1")
    work = tmp_path / "work"
    work.mkdir()
    proc = _engine(tmp_path, "info", SUDOKU / "sudoku.zkey", env=env, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(work) == []
    assert not os.path.exists(missing)


def test_a_progress_reader_that_left_on_the_engines_path_leaves_no_timeline(tmp_path):
    """`prove --timeline t.jsonl --json 2>&1 | head -c 10` exited 141 without a proof but left t.jsonl."""
    out = _out(tmp_path)
    proc = _run_module(tmp_path, "reader_left", """
        from engine.progress import JsonProgress

        real_emit = JsonProgress._emit

        def emit_to_a_reader_that_left(self, msg):
            if msg.get("name") == "write":  # the proof is made, the timeline written: the reader leaves now
                raise BrokenPipeError(32, "Broken pipe")
            return real_emit(self, msg)

        JsonProgress._emit = emit_to_a_reader_that_left
        """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", out / "proof.json", out / "public.json",
                       "--backend", "cpu", "--timeline", out / "t.jsonl", "--json")
    assert proc.returncode == 141, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert sorted(os.listdir(out)) == []


def test_a_stop_signal_while_a_circuit_wasm_never_returns_still_ends_the_command(tmp_path):
    """A circuit.wasm that loops forever held the main thread inside wasmtime, where Python's signal handlers
    never run: Ctrl-C and SIGTERM were both ignored and only SIGKILL ended `witness`."""
    import wasmtime  # noqa: PLC0415

    wasm = tmp_path / "loops.wasm"
    wasm.write_bytes(wasmtime.wat2wasm("""
        (module
          (import "runtime" "exceptionHandler" (func (param i32)))
          (import "runtime" "printErrorMessage" (func))
          (import "runtime" "writeBufferMessage" (func))
          (import "runtime" "showSharedRWMemory" (func))
          (memory (export "memory") 2)
          (func (export "getVersion") (result i32) (i32.const 2))
          (func (export "getFieldNumLen32") (result i32) (loop $forever (br $forever)) (i32.const 8))
          (func (export "getRawPrime"))
          (func (export "readSharedRWMemory") (param i32) (result i32) (i32.const 0))
          (func (export "writeSharedRWMemory") (param i32 i32))
          (func (export "init") (param i32))
          (func (export "setInputSignal") (param i32 i32 i32))
          (func (export "getWitnessSize") (result i32) (i32.const 3))
          (func (export "getWitness") (param i32)))"""))
    proc = subprocess.Popen([sys.executable, "-m", "engine", "witness", str(wasm), str(SUDOKU / "input.json"),
                             str(tmp_path / "w.wtns"), "--json"], cwd=tmp_path, env=_env(tmp_path),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:  # the circuit's load is where it loops
            if json.loads(line).get("name") == "load circuit":
                break
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, (proc.returncode, rest)
    assert [json.loads(line) for line in _lines(rest)] == [
        {"event": "error", "error": "Interrupted", "message": "interrupted by SIGTERM", "exit_code": 143}]
    assert os.listdir(tmp_path) == ["loops.wasm"]


def test_an_output_to_a_standard_stream_the_command_was_started_without_is_an_error(tmp_path):
    """/dev/stdout with descriptor 1 closed: the proof must not go quietly to the /dev/null put in its place."""
    proc = _engine(tmp_path, "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "/dev/stdout", "pub.json",
                   "--backend", "cpu", preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert _lines(proc.stderr) == ["error: /dev/stdout: cannot write: standard output is closed"], proc.stderr
    assert not (tmp_path / "pub.json").exists()


def test_json_with_verbose_on_the_engines_path_is_json_lines_only(tmp_path):
    """`prove --timeline t --json --verbose` printed the --verbose text table among the JSON lines."""
    proc = _engine(tmp_path, "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "p.json", "pub.json",
                   "--backend", "cpu", "--timeline", "t.jsonl", "--json", "--verbose")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in _lines(proc.stderr) + _lines(proc.stdout)]
    (result,) = [line for line in lines if line["event"] == "result"]
    assert result["timings"]["engine"] > 0 and result["timings"]["  msm_h"] > 0


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_while_the_command_loads_is_its_json_line_with_json(tmp_path, signame):
    """Ctrl-C while the modules loaded printed a bare "interrupted" under --json (and SIGTERM killed it)."""
    proc = _run_module(tmp_path, "signal_while_loading", f"""
        import signal, sys

        class SignalOnce:
            def find_spec(self, name, path=None, target=None):
                if name == "engine.formats.zkey":  # one of prove's preloaded modules
                    sys.meta_path.remove(self)
                    os.kill(os.getpid(), signal.{signame})
                    sum(range(10))

        sys.meta_path.insert(0, SignalOnce())
        """, "prove", TINY / "tiny.zkey", TINY / "tiny.wtns", tmp_path / "p.json", tmp_path / "pub.json",
                       "--backend", "cpu", "--json")
    code = 128 + getattr(signal, signame)
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    message = "interrupted" if signame == "SIGINT" else f"interrupted by {signame}"
    assert [json.loads(line) for line in _lines(proc.stderr)] == [
        {"event": "error", "error": "Interrupted", "message": message, "exit_code": code}]


@pytest.mark.parametrize("argv", [
    ["export-vkey", SUDOKU / "sudoku.zkey", "/dev/stdout"],
    ["prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "/dev/stdout", "pub.json", "--backend", "cpu"],
    ["prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "/dev/stdout", "pub.json", "--backend", "cpu",
     "--timeline", "t.jsonl"],
], ids=["export-vkey", "prove", "prove --timeline"])
def test_an_output_on_dev_stdout_whose_reader_left_ends_quietly_with_141(tmp_path, argv):
    """`setup c.r1cs /dev/stdout | head -c 1` said "error: /dev/stdout: cannot write: Broken pipe" (exit 2), not
    the quiet 141 of every other reader that leaves early."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _engine(tmp_path, *argv, stdout=write)
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_proof_waiting_for_a_pipes_reader_can_still_be_stopped(tmp_path, signame):
    """`prove k w FIFO pub.json` with nobody reading the FIFO waited for a reader for ever with Ctrl-C ignored
    there (the proof was made: "too late"); SIGTERM or SIGKILL then left .pub.json.PID.0.tmp behind."""
    out = _out(tmp_path)
    os.mkfifo(out / "fifo")
    body = f"""
        import signal, threading
        from engine.groth16.proof import Proof

        real_write = Proof.write

        def write_then_signal(self, *args, **kwargs):
            # the main thread is about to wait in open() for the FIFO's reader: the signal comes while it waits
            threading.Timer(1.0, os.kill, (os.getpid(), signal.{signame})).start()
            return real_write(self, *args, **kwargs)

        Proof.write = write_then_signal
        """
    (tmp_path / "waits_for_reader.py").write_text("import os\n" + textwrap.dedent(body) + textwrap.dedent(f"""
        import runpy, sys
        sys.argv = ["engine", "prove", {str(TINY / "tiny.zkey")!r}, {str(TINY / "tiny.wtns")!r},
                    {str(out / "fifo")!r}, {str(out / "public.json")!r}, "--backend", "cpu"]
        runpy.run_module("engine", run_name="__main__", alter_sys=True)
        """))
    proc = subprocess.Popen([sys.executable, "-m", "waits_for_reader"], cwd=tmp_path, env=_env(tmp_path),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + getattr(signal, signame), (proc.returncode, stderr)
    assert _lines(stderr) == ["interrupted" if signame == "SIGINT" else f"interrupted by {signame}"]
    assert sorted(os.listdir(out)) == ["fifo"]


def test_a_circuits_log_lines_under_json_are_json_too(tmp_path):
    """`witness --json` printed the circuit's log() lines ("guarded.wasm: log: x is 7") as text among the JSON."""
    from conftest import CIRCUITS, circom_compile  # noqa: PLC0415

    _, wasm = circom_compile(CIRCUITS / "witness" / "guarded.circom", "bn128", tmp_path / "guarded")
    (tmp_path / "input.json").write_text('{"x": 7}')
    proc = _engine(tmp_path, "witness", wasm, "input.json", "w.wtns", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in _lines(proc.stderr)]
    assert {"event": "log", "text": f"{wasm}: log: x is 7"} in [
        {k: v for k, v in line.items() if k != "t"} for line in lines]


def test_a_cli_py_or_scheduler_package_in_the_working_directory_does_not_replace_the_engines(tmp_path):
    """`python -m engine` puts the working directory first on sys.path: a project's own cli.py (or scheduler/)
    ran instead of the engine's command line (here: "this is the user's cli.py", exit 7)."""
    work = tmp_path / "project"
    (work / "scheduler").mkdir(parents=True)
    (work / "cli.py").write_text("raise SystemExit(\"this is the user's cli.py\")\n")
    (work / "scheduler" / "__init__.py").write_text("raise SystemExit(\"this is the user's scheduler\")\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = _engine(tmp_path, "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", "p.json", "pub.json",
                   "--backend", "cpu", "--timeline", "t.jsonl", env=env, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(work)) == ["cli.py", "p.json", "pub.json", "scheduler", "t.jsonl"]


def _wait_until_blocked_on_a_fifo(pid: int, timeout: float = 60.0) -> None:
    """Until the process waits in open() for a FIFO's other end (the kernel's wchan says "wait_for_partner")."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/wchan") as f:
                if f.read().strip() == "wait_for_partner":
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never waited for the FIFO's reader")


def test_a_timeline_fifo_without_a_reader_does_not_make_ctrl_c_wait(tmp_path):
    """`prove --timeline FIFO` with nobody reading it waited in the Engine's open() of the FIFO, where one Ctrl-C
    (the asyncio Runner's cancellation) could not reach it: it waited for ever."""
    out = _out(tmp_path)
    os.mkfifo(out / "tl")
    proc = subprocess.Popen([sys.executable, "-m", "engine", "prove", str(SUDOKU / "sudoku.zkey"),
                             str(SUDOKU / "sudoku.wtns"), str(out / "p.json"), str(out / "pub.json"), "--backend",
                             "cpu", "--timeline", str(out / "tl")], cwd=tmp_path, env=_env(tmp_path),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_until_blocked_on_a_fifo(proc.pid)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert _lines(stderr) == ["interrupted"]
    assert sorted(os.listdir(out)) == ["tl"]


def test_the_progress_bar_fits_a_narrow_terminal():
    """The bar's line was 76 characters whatever the terminal: on a narrower one each update wrapped, and the
    carriage return went back to the start of the wrapped part only, leaving a line of bar per stage."""
    import fcntl  # noqa: PLC0415
    import pty  # noqa: PLC0415
    import struct  # noqa: PLC0415
    import termios  # noqa: PLC0415

    from engine.progress import BarProgress  # noqa: PLC0415

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    with open(slave, "w", closefd=True) as stream:
        bar = BarProgress("bench-circuit", stream)
        for name, fraction in (("read key", 0.0), ("a stage with a long name", 0.5), ("write", 0.95)):
            bar.stage(name, fraction)
        bar.note("a note")
        bar.done()
    os.set_blocking(master, False)
    text = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    os.close(master)
    pieces = text.decode().replace("\r\n", "\n").replace("\n", "\r").split("\r")
    assert max(len(piece) for piece in pieces) < 40, pieces
    assert "a note" in pieces
