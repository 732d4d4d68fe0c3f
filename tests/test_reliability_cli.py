"""`python -m engine prove` through the Engine (--timeline, --config, Engine flags) says what the direct path
says: the same one-line error and exit code for each user mistake, JSON with --json, no traceback; Ctrl-C
exits 130 within a second with no file left behind, on both paths."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import engine
from conftest import EXAMPLES, FIXTURES, REPO, run_engine

SUDOKU = EXAMPLES / "bn128"
TINY = FIXTURES / "tiny" / "bn128"


def _lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def _prove(tmp_path: Path, *args, timeline: bool = False):
    extra = ("--timeline", str(tmp_path / "t.jsonl")) if timeline else ()
    return run_engine("prove", *args, "--backend", "cpu", *extra, timeout=300)


def _witness_case(tmp_path: Path, case: str) -> list:
    out = [tmp_path / "out" / "proof.json", tmp_path / "out" / "public.json"]
    (tmp_path / "out").mkdir(exist_ok=True)
    if case == "input not json":
        (tmp_path / "input.json").write_text("{not json")
        return [SUDOKU / "sudoku.zkey", *out, "--wasm", SUDOKU / "sudoku.wasm", "--input", tmp_path / "input.json"]
    if case == "input lacks a signal":
        inputs = json.loads((SUDOKU / "input.json").read_text())
        del inputs["solution"]
        (tmp_path / "input.json").write_text(json.dumps(inputs))
        return [SUDOKU / "sudoku.zkey", *out, "--wasm", SUDOKU / "sudoku.wasm", "--input", tmp_path / "input.json"]
    if case == "wasm of the other curve":
        return [SUDOKU / "sudoku.zkey", *out, "--wasm", EXAMPLES / "bls12381" / "sudoku.wasm",
                "--input", SUDOKU / "input.json"]
    if case == "witness of another circuit":
        return [SUDOKU / "sudoku.zkey", TINY / "tiny.wtns", *out]
    if case == "empty witness":
        (tmp_path / "empty.wtns").write_bytes(b"")
        return [SUDOKU / "sudoku.zkey", tmp_path / "empty.wtns", *out]
    if case == "r1cs as the zkey":
        return [SUDOKU / "sudoku.r1cs", SUDOKU / "sudoku.wtns", *out]
    if case == "r1cs of another circuit":
        return [SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", *out, "--r1cs", TINY / "tiny.r1cs"]
    raise AssertionError(case)


CASES = ["input not json", "input lacks a signal", "wasm of the other curve", "witness of another circuit",
         "empty witness", "r1cs as the zkey", "r1cs of another circuit"]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_engine_path_gives_the_direct_paths_one_line_error(tmp_path, case):
    args = _witness_case(tmp_path, case)
    direct = _prove(tmp_path, *args)
    through_engine = _prove(tmp_path, *args, timeline=True)
    for proc in (direct, through_engine):
        assert "Traceback" not in proc.stderr, proc.stderr
        assert len(_lines(proc.stderr)) == 1, proc.stderr
        assert proc.returncode == 2
    assert _lines(through_engine.stderr) == _lines(direct.stderr)
    assert not (tmp_path / "out" / "proof.json").exists() and not (tmp_path / "out" / "public.json").exists()


@pytest.mark.parametrize("timeline", [False, True])
def test_output_in_a_missing_directory_names_the_users_path(tmp_path, timeline):
    proof = tmp_path / "no-such-dir" / "proof.json"
    proc = _prove(tmp_path, SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", proof, tmp_path / "public.json",
                  timeline=timeline)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert _lines(proc.stderr) == [f"error: {proof}: cannot write: the folder {proof.parent} does not exist"]
    assert not (tmp_path / "public.json").exists()


def test_timeline_in_a_missing_directory_is_one_line_naming_it(tmp_path):
    timeline = tmp_path / "no-such-dir" / "t.jsonl"
    proc = run_engine("prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", tmp_path / "p.json",
                      tmp_path / "pub.json", "--backend", "cpu", "--timeline", timeline, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert _lines(proc.stderr) == [f"error: {timeline}: cannot write: the folder {timeline.parent} does not exist"]
    assert sorted(os.listdir(tmp_path)) == []


def _copies(tmp_path: Path) -> dict:
    import shutil  # noqa: PLC0415

    names = {"zkey": SUDOKU / "sudoku.zkey", "wtns": SUDOKU / "sudoku.wtns", "wasm": SUDOKU / "sudoku.wasm",
             "input": SUDOKU / "input.json", "r1cs": SUDOKU / "sudoku.r1cs"}
    out = {}
    for role, src in names.items():
        out[role] = tmp_path / src.name
        shutil.copyfile(src, out[role])
    (tmp_path / "key-link.json").symlink_to(out["zkey"])
    return out


OVERWRITES = {  # case: (argv from the copies f and the tmp dir t, the words of the one-line error)
    "proof over the key": (lambda f, t: ["prove", f["zkey"], f["wtns"], f["zkey"], t / "pub.json", "--backend", "cpu"],
                           "the proof would overwrite the key read from the same file"),
    "public over the witness": (lambda f, t: ["prove", f["zkey"], f["wtns"], t / "p.json", f["wtns"], "--backend",
                                              "cpu"], "the public signals would overwrite the witness read from"),
    "proof through a link to the key": (lambda f, t: ["prove", f["zkey"], f["wtns"], t / "key-link.json",
                                                      t / "pub.json", "--backend", "cpu"],
                                        "the proof would overwrite the key"),
    "proof and public the same": (lambda f, t: ["prove", f["zkey"], f["wtns"], t / "o.json", t / "o.json",
                                                "--backend", "cpu"],
                                  "given for both the proof and the public signals; each output needs its own path"),
    "timeline over the key": (lambda f, t: ["prove", f["zkey"], f["wtns"], t / "p.json", t / "pub.json", "--backend",
                                            "cpu", "--timeline", f["zkey"]], "the timeline would overwrite the key"),
    "proof over input.json (--wasm)": (lambda f, t: ["prove", f["zkey"], "--wasm", f["wasm"], "--input", f["input"],
                                                     f["input"], t / "pub.json", "--backend", "cpu"],
                                       "the proof would overwrite the input signals"),
    "export-vkey over the key": (lambda f, t: ["export-vkey", f["zkey"], f["zkey"]],
                                 "the verification key would overwrite the key"),
    "witness over input.json": (lambda f, t: ["witness", f["wasm"], f["input"], f["input"]],
                                "the witness would overwrite the input signals"),
    "setup over the circuit": (lambda f, t: ["setup", f["r1cs"], f["r1cs"], "--backend", "cpu"],
                               "the key would overwrite the circuit read from the same file"),
}


@pytest.mark.parametrize("case", list(OVERWRITES))
def test_an_output_over_an_input_or_another_output_is_refused_before_any_work(tmp_path, case):
    """`prove k.zkey w.wtns k.zkey pub.json` wrote the proof over the key (exit 0); the same path for the proof
    and the public signals failed after the proof with "cannot write: No such file or directory"."""
    files = _copies(tmp_path)
    before = {role: path.read_bytes() for role, path in files.items()}
    argv, words = OVERWRITES[case]
    proc = run_engine(*argv(files, tmp_path), timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = _lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert {role: path.read_bytes() for role, path in files.items()} == before
    assert not any(tmp_path.glob(".*.tmp")) and not (tmp_path / "o.json").exists()


def test_writing_a_proof_to_one_path_twice_is_refused_by_name(tmp_path):
    from engine.errors import InputFileError  # noqa: PLC0415
    from engine.formats.json_text import write_atomically  # noqa: PLC0415

    target = tmp_path / "same.json"
    with pytest.raises(InputFileError, match="same.json: named twice among the files to write"):
        write_atomically([(target, "{}"), (tmp_path / "." / "same.json", "[]")])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("timeline", [False, True])
def test_too_small_host_budget_is_refused_on_both_paths(tmp_path, timeline):
    """Before, the direct path ignored --host-budget (and every other Engine flag) and proved anyway."""
    proc = _prove(tmp_path, SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", tmp_path / "p.json",
                  tmp_path / "pub.json", "--host-budget", "100", timeline=timeline)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = _lines(proc.stderr)
    assert "host budget is 100 B" in line and "--host-budget" in line
    assert not (tmp_path / "p.json").exists()


def test_engine_flags_on_the_direct_path_are_applied(tmp_path):
    proc = _prove(tmp_path, SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", tmp_path / "p.json",
                  tmp_path / "pub.json", "--synthesis-workers", "1", "--compute-slots", "1",
                  "--host-budget", "64MiB", "--lock-mode", "single")
    assert proc.returncode == 0, proc.stderr
    assert engine.read_proof(tmp_path / "p.json").pi_a


def test_errors_with_json_are_one_json_object(tmp_path):
    for timeline in (False, True):
        proc = _prove(tmp_path, SUDOKU / "sudoku.zkey", TINY / "tiny.wtns", tmp_path / "p.json",
                      tmp_path / "pub.json", "--json", timeline=timeline)
        assert proc.returncode == 2
        last = json.loads(_lines(proc.stderr)[-1])
        assert last["event"] == "error" and last["error"] == "MismatchError" and last["exit_code"] == 2
        assert str(TINY / "tiny.wtns") in last["message"]
        assert all(json.loads(line) for line in _lines(proc.stderr))  # progress lines are JSON too


def test_prove_help_offers_only_real_backends_and_explains_every_flag():
    proc = run_engine("prove", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "simulated" not in text
    for flag, words in (("--synthesis-workers N", "witnesses"), ("--lock-mode {split,single}", "lock"),
                        ("--no-verify", "skip")):
        after = text.rsplit(flag, 1)[1][:120]  # the options list, after the usage line
        assert words in after, f"{flag} has no help text: {after!r}"


def test_config_file_with_the_simulated_backend_is_refused_by_prove(tmp_path):
    cfg = tmp_path / "engine.toml"
    cfg.write_text('backend = "simulated"\n')
    proc = run_engine("prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns", tmp_path / "p.json",
                      tmp_path / "pub.json", "--config", cfg, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = _lines(proc.stderr)
    assert "simulated" in line and str(cfg) in line
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("timeline", [False, True])
def test_flipped_byte_in_a_key_point_names_both_files_as_possibly_corrupt(tmp_path, timeline):
    from test_cli_prove_errors import record

    data = bytearray((TINY / "tiny.zkey").read_bytes())
    a = record(bytes(data), 5)  # the A points (section 5)
    data[a.offset + 64 + 3] ^= 0x10  # the second point's x, a low byte: still < q, no longer on the curve
    zkey = tmp_path / "flipped.zkey"
    zkey.write_bytes(bytes(data))
    proc = _prove(tmp_path, zkey, TINY / "tiny.wtns", tmp_path / "p.json", tmp_path / "pub.json",
                  timeline=timeline)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = _lines(proc.stderr)
    assert str(zkey) in line and str(TINY / "tiny.wtns") in line and "corrupt" in line, line
    assert not (tmp_path / "p.json").exists()


async def test_engine_with_gpu_backend_and_no_device_says_no_cuda_device(monkeypatch, tmp_path):
    import engine.backends.select as select

    monkeypatch.setattr(select, "cuda_device_count", lambda: 0)
    timeline = tmp_path / "t.jsonl"
    with pytest.raises(engine.BackendUnavailableError, match="no CUDA device"):
        async with engine.Engine(engine.EngineConfig(backend="gpu", timeline=str(timeline))):
            pytest.fail("the body must not run")
    assert not timeline.exists()


# ---------------------------------------------------------------- Ctrl-C


@pytest.fixture(scope="module")
def bench_files(tmp_path_factory):
    """A circuit whose CPU proof takes a couple of seconds (2^14 domain), and how long one proof takes
    here (the signals land at fractions of it, whatever this machine's speed)."""
    d = tmp_path_factory.mktemp("bench")
    for cmd in (["bench-circuit", "--constraints", "14000", d, "--quiet"],
                ["setup", d / "bench.r1cs", d / "bench.zkey", "--backend", "cpu", "--quiet"]):
        proc = run_engine(*cmd, timeout=300)
        assert proc.returncode == 0, proc.stderr
    times = []
    for _ in range(2):  # the shorter of two: a first run's cold caches would put late signals past the end
        t0 = time.perf_counter()
        proc = run_engine("prove", d / "bench.zkey", d / "bench.wtns", d / "p.json", d / "pub.json",
                          "--backend", "cpu", timeout=300)
        assert proc.returncode == 0, proc.stderr
        times.append(time.perf_counter() - t0)
    return d / "bench.zkey", d / "bench.wtns", min(times)


def _interrupt(tmp_path: Path, zkey: Path, wtns: Path, after_s: float, *, timeline: bool, group: bool):
    out = tmp_path / "out"
    out.mkdir(parents=True)
    cmd = [sys.executable, "-m", "engine", "prove", str(zkey), str(wtns), str(out / "proof.json"),
           str(out / "public.json"), "--backend", "cpu"]
    if timeline:
        cmd += ["--timeline", str(out / "t.jsonl")]
    proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        time.sleep(after_s)
        if proc.poll() is not None:  # the proof ended before the signal: this run is not the case under test
            return None
        t0, sent = time.perf_counter(), time.time()
        # a terminal's Ctrl-C signals the whole group (workers too); `kill -INT pid` only the main process
        os.killpg(proc.pid, signal.SIGINT) if group else proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        exit_s = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    proof = out / "proof.json"
    if proc.returncode == 0 and proof.exists() and proof.stat().st_mtime < sent + 0.05:
        return None  # the proof was written before its signal (the process was exiting): too late to stop it
    return proc.returncode, exit_s, stderr, sorted(os.listdir(out))


@pytest.mark.slow
@pytest.mark.parametrize("timeline", [False, True], ids=["direct", "engine"])
@pytest.mark.parametrize("group", [False, True], ids=["pid", "group"])
def test_ctrl_c_exits_130_within_a_second_without_traceback_or_files(tmp_path, bench_files, timeline, group):
    zkey, wtns, proof_s = bench_files
    # starting up; synthesising or computing; computing (the Engine path takes longer than proof_s)
    for i, after_s in enumerate((0.25, 0.45 * proof_s, 0.8 * proof_s)):
        # a proof faster than the fixture's (a machine less loaded than when it measured) may end before a late
        # signal: that run proves nothing, so the signal comes earlier, down to a third of the delay
        for attempt in range(3):
            got = _interrupt(tmp_path / f"{i}-{attempt}", zkey, wtns, after_s * 0.6 ** attempt, timeline=timeline,
                             group=group)
            if got is not None:
                break
        assert got is not None, f"every proof ended before its signal (from {after_s:.2f} s): make the circuit larger"
        rc, exit_s, stderr, left = got
        assert rc == 130, stderr
        assert "Traceback" not in stderr and _lines(stderr) == ["interrupted"], stderr
        assert exit_s < 1.0, f"{exit_s:.2f} s to exit after SIGINT at {after_s:.2f} s"
        assert left == [], left


@pytest.mark.parametrize("timeline", [False, True], ids=["direct", "engine"])
def test_a_key_and_witness_given_as_pipes_prove(tmp_path, timeline):
    """`prove <(cat k.zkey) <(cat w.wtns) ...` failed with "/dev/fd/63: is empty, not a .zkey file" (the reader
    mapped the pipe by its size, 0); on the Engine's path a pool worker cannot open this process's pipe at all."""
    extra = f"--timeline {tmp_path / 't.jsonl'}" if timeline else ""
    line = (f'"{sys.executable}" -m engine prove <(cat "{SUDOKU / "sudoku.zkey"}") <(cat "{SUDOKU / "sudoku.wtns"}") '
            f'"{tmp_path / "p.json"}" "{tmp_path / "pub.json"}" --backend cpu {extra}')
    proc = subprocess.run(["bash", "-c", line], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    check = run_engine("verify", SUDOKU / "verification_key.json", tmp_path / "pub.json", tmp_path / "p.json")
    assert check.returncode == 0 and check.stdout.strip() == "OK!"


def test_pipes_and_devices_get_a_reader_each_can_serve(tmp_path):
    """A pipe is read whole (and its key is never cached by its path); a device such as /dev/zero, which would
    never end, is refused by name; `info`, which reads its file twice, says so for a pipe."""
    import threading  # noqa: PLC0415

    from engine.errors import FormatError  # noqa: PLC0415
    from engine.formats import read_wtns, read_zkey  # noqa: PLC0415
    from engine.formats.key_cache import identity_of  # noqa: PLC0415

    made = []

    def piped(src: Path) -> Path:
        made.append(src)
        fifo = tmp_path / f"{len(made)}-{src.name}.fifo"
        os.mkfifo(fifo)
        threading.Thread(target=lambda: fifo.write_bytes(src.read_bytes()), daemon=True).start()
        return fifo

    zkey = read_zkey(piped(SUDOKU / "sudoku.zkey"))
    assert zkey.n_vars == read_zkey(SUDOKU / "sudoku.zkey").n_vars and zkey.file_size == 0
    assert identity_of(zkey, "any") is None and identity_of(read_zkey(SUDOKU / "sudoku.zkey"), "any") is not None
    assert (read_wtns(piped(SUDOKU / "sudoku.wtns")).values == read_wtns(SUDOKU / "sudoku.wtns").values).all()
    with pytest.raises(FormatError, match="/dev/zero: is not a file or a pipe"):
        read_wtns("/dev/zero")
    fifo = tmp_path / "info.fifo"
    os.mkfifo(fifo)  # no writer: info must refuse it without opening it
    proc = run_engine("info", fifo)
    assert proc.returncode == 2 and _lines(proc.stderr) == [
        f"error: {fifo}: is a pipe, and info reads its file more than once: give the file's path"]


def test_piped_inputs_on_the_engines_path(tmp_path):
    """With --timeline (the Engine: synthesis in pool workers) a piped input.json failed with "/dev/fd/63: no such
    file": it is now read here and named as the pipe in errors.  A piped circuit.wasm, which every worker opens by
    its path, is one line saying so."""
    t = tmp_path / "t.jsonl"
    out = f'"{tmp_path / "p.json"}" "{tmp_path / "pub.json"}" --backend cpu --timeline "{t}"'
    head = f'"{sys.executable}" -m engine prove "{SUDOKU / "sudoku.zkey"}" '

    def bash(line: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", line], cwd=REPO, capture_output=True, text=True, timeout=300)

    ok = bash(head + f'--wasm "{SUDOKU / "sudoku.wasm"}" --input <(cat "{SUDOKU / "input.json"}") {out}')
    assert ok.returncode == 0, ok.stderr
    assert run_engine("verify", SUDOKU / "verification_key.json", tmp_path / "pub.json",
                      tmp_path / "p.json").stdout.strip() == "OK!"
    bad = bash(head + f'--wasm "{SUDOKU / "sudoku.wasm"}" --input <(echo \'{{"nope": 1}}\') {out}')
    assert bad.returncode == 2 and re.fullmatch(r"error: /dev/fd/\d+: unknown input signal 'nope' .*",
                                                bad.stderr.strip()), bad.stderr
    wasm = bash(head + f'--wasm <(cat "{SUDOKU / "sudoku.wasm"}") --input "{SUDOKU / "input.json"}" {out}')
    assert wasm.returncode == 2 and wasm.stderr.strip().endswith(
        "is a pipe; the synthesis workers open circuit.wasm by its path: give the file"), wasm.stderr


def test_a_config_files_timeline_over_the_key_is_refused_before_any_work(tmp_path):
    """Only --timeline was checked: `timeline = "k.zkey"` in the --config file emptied the key."""
    files = _copies(tmp_path)
    before = files["zkey"].read_bytes()
    config = tmp_path / "engine.toml"
    config.write_text(f'[engine]\nbackend = "cpu"\ntimeline = "{files["zkey"]}"\n')
    proc = run_engine("prove", files["zkey"], files["wtns"], tmp_path / "p.json", tmp_path / "pub.json",
                      "--config", config, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = _lines(proc.stderr)
    assert f"the timeline of {config} would overwrite the key read from the same file" in line
    assert files["zkey"].read_bytes() == before and not (tmp_path / "p.json").exists()


def test_too_few_file_descriptors_to_start_the_engine_names_the_limit(tmp_path):
    """It said only "OSError: [Errno 24] Too many open files"."""
    def few_files() -> None:
        import resource  # noqa: PLC0415

        resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))

    proc = subprocess.run([sys.executable, "-m", "engine", "prove", SUDOKU / "sudoku.zkey", SUDOKU / "sudoku.wtns",
                           tmp_path / "p.json", tmp_path / "pub.json", "--backend", "cpu", "--timeline",
                           tmp_path / "t.jsonl"], capture_output=True, text=True, timeout=300, cwd=REPO,
                          preexec_fn=few_files)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = _lines(proc.stderr)
    assert line.startswith("error: the engine could not start: OSError: [Errno 24] ")  # "Too many open files", or
    assert "may hold 16 open files: raise the limit, ulimit -n" in line  # the pool's count before any worker starts
    assert sorted(os.listdir(tmp_path)) == []
