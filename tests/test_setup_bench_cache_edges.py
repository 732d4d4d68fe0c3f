"""Edges of `setup`, `bench-circuit`, `cache` and the key cache (engine/formats/key_cache.py), found by probing.

Each fault's test failed before its fix (its docstring says how); a few more pin the other side of a fix (a dead
writer's file is still removed, a file system without locks, numpy counts)."""
from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from engine.formats import key_cache as kc
from engine.formats.zkey import read_zkey

ROOT = Path(__file__).resolve().parent.parent
SUDOKU = ROOT / "examples" / "bn128" / "sudoku.zkey"
LAYOUT = "gpu-csr-v1"


@pytest.fixture()
def zkey_file(tmp_path):
    p = tmp_path / "k.zkey"
    shutil.copyfile(SUDOKU, p)
    return p


def _arrays():
    return {"row_ptr": np.arange(9, dtype=np.uint32), "values": np.arange(20, dtype=np.uint64).reshape(5, 4)}


# ---------------------------------------------------------------- key cache: clear against live writers

def test_cache_clear_leaves_a_live_writers_temporary_file_alone(zkey_file, tmp_path, monkeypatch):
    """`cache clear` removed the temporary file another process was writing an entry into: its entry was lost."""
    cache = kc.KeyCache(tmp_path / "cache")
    ident = kc.identity_of(read_zkey(zkey_file), LAYOUT)
    written, go_on = threading.Event(), threading.Event()
    real_replace = os.replace

    def slow_replace(src, dst):  # the writer, paused between its last byte and its rename
        if os.path.basename(os.fspath(src)).startswith(".tmp-"):
            written.set()
            go_on.wait(10)
        return real_replace(src, dst)

    monkeypatch.setattr(kc.os, "replace", slow_replace)
    result = {}
    writer = threading.Thread(target=lambda: result.setdefault("path", cache.store(ident, _arrays())))
    writer.start()
    try:
        assert written.wait(10)
        (tmp_path / "cache" / ".tmp-dead.gkc").write_bytes(b"left by a writer that died")
        removed, _ = cache.clear()
    finally:
        go_on.set()
        writer.join(10)
    assert removed == 1  # the dead writer's leftover only
    assert result["path"] and cache.load(ident) is not None
    assert not (tmp_path / "cache" / ".tmp-dead.gkc").exists()
    assert [n for n in os.listdir(tmp_path / "cache") if n.startswith(".tmp-")] == []


def test_cache_clear_spares_another_process_writing_and_removes_its_file_once_it_died(tmp_path):
    """The lock is what tells a live writer from a dead one, across processes: killed, its file is a leftover."""
    import subprocess
    import sys

    d = tmp_path / "cache"
    d.mkdir()
    code = ("import sys, time; from pathlib import Path; from engine.formats import key_cache as kc; "
            "fd, p = kc._locked_tmp(Path(sys.argv[1])); os = __import__('os'); os.write(fd, b'x' * 100); "
            "print(p, flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(d)], stdout=subprocess.PIPE, text=True)
    try:
        tmp = proc.stdout.readline().strip()
        assert tmp and os.path.exists(tmp)
        assert kc.KeyCache(d).clear() == (0, 0) and os.path.exists(tmp)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert kc.KeyCache(d).clear() == (1, 100) and not os.path.exists(tmp)


# ---------------------------------------------------------------- `cache list` / `clear` on hostile directories

def _hand_made_entry(d: Path, name: str, identity: dict, created=1.0) -> Path:
    import json

    raw = json.dumps({"identity": identity, "meta": {}, "created": created, "arrays": []}).encode()
    p = d / f"{name}{kc.SUFFIX}"
    p.write_bytes(kc._PREFIX.pack(kc.MAGIC, kc.FORMAT_VERSION, len(raw)) + raw)
    return p


GOOD_ID = {"zkey_path": "/nonexistent/k.zkey", "size": 1, "mtime_ns": 1, "sha": "00", "curve": "bn128",
           "layout": LAYOUT}


@pytest.mark.parametrize("field, value", [("created", 1e300), ("created", float("nan")), ("created", -1e300),
                                          ("zkey_path", ["x"]), ("size", "1"), ("mtime_ns", None)])
def test_cache_list_of_an_entry_with_odd_header_values_lists_it_not_a_traceback(tmp_path, capsys, field, value):
    """A hand-made (or foreign) header with a huge `created` or a zkey path that is no string: a traceback
    (OverflowError from localtime, TypeError from os.stat), and NaN made `--json` print invalid JSON."""
    import json

    from cli import main

    d = tmp_path / "cache"
    d.mkdir()
    ident, created = dict(GOOD_ID), 1.0
    if field == "created":
        created = value
    else:
        ident[field] = value
    _hand_made_entry(d, "odd", ident, created)
    assert main(["cache", "list", "--dir", str(d)]) == 0
    out = capsys.readouterr().out
    assert "1 entry" in out and "stale" in out
    assert main(["cache", "list", "--json", "--dir", str(d)]) == 0
    rows = json.loads(capsys.readouterr().out)["entries"]
    assert len(rows) == 1 and rows[0]["stale"] is True
    assert main(["cache", "clear", "--stale", "--dir", str(d)]) == 0
    assert os.listdir(d) == []


def test_cache_list_and_clear_do_not_hang_on_a_fifo_in_the_directory(tmp_path, capsys):
    """A named pipe called *.gkc (or .tmp-*.gkc) in the cache directory: `cache list` waited forever for a writer."""
    import subprocess
    import sys

    d = tmp_path / "cache"
    d.mkdir()
    os.mkfifo(d / f"pipe{kc.SUFFIX}")
    os.mkfifo(d / f".tmp-pipe{kc.SUFFIX}")
    fifo_key = tmp_path / "k.zkey"  # an entry's zkey path that is now a FIFO of the size and time it names
    os.mkfifo(fifo_key)
    _hand_made_entry(d, "fifo-key", {**GOOD_ID, "zkey_path": str(fifo_key), "size": 0,
                                     "mtime_ns": os.stat(fifo_key).st_mtime_ns})
    for action in ("list", "clear"):
        proc = subprocess.run([sys.executable, "-m", "engine", "cache", action, "--dir", str(d)], cwd=ROOT,
                              capture_output=True, text=True, timeout=15)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    assert os.listdir(d) == []  # clear removed both: neither is an entry, nor a live writer's file


def test_cache_clear_that_cannot_remove_an_entry_fails_with_one_line(zkey_file, tmp_path, capsys, monkeypatch):
    """A read-only cache (a read-only mount, another user's files): `cache clear` printed "removed 0 file(s)"
    and exited 0, with a log line per file on the side."""
    from cli import main

    d = tmp_path / "cache"
    cache = kc.KeyCache(d)
    cache.store(kc.identity_of(read_zkey(zkey_file), LAYOUT), _arrays())
    (d / ".tmp-dead.gkc").write_bytes(b"x")
    real_unlink = os.unlink

    def read_only(path, *a, **k):
        if os.fspath(path).startswith(os.fspath(d)):
            raise OSError(30, "Read-only file system")
        return real_unlink(path, *a, **k)

    monkeypatch.setattr(os, "unlink", read_only)
    assert main(["cache", "clear", "--dir", str(d)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {d}: could not remove 2 file(s)") and "Read-only file system" in err
    monkeypatch.setattr(os, "unlink", real_unlink)
    assert main(["cache", "clear", "--dir", str(d)]) == 0
    assert "removed 2 file(s)" in capsys.readouterr().out and os.listdir(d) == []


# ---------------------------------------------------------------- setup

def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_setup_pool_workers_do_not_outlive_a_killed_setup(tmp_path, sig):
    """`kill <setup pid>` (or the OOM killer) left the setup's forked workers running, then asleep for ever."""
    import signal
    import time

    code = ("import os, sys, time\nfrom scheduler.setup_pool import fork_map\n"
            "def f(st, a, b):\n    open(os.path.join(st['d'], str(os.getpid())), 'w').close()\n"
            "    time.sleep(30)\n    return []\n"
            "fork_map(f, 8, {'d': sys.argv[1]}, workers=2, min_parallel=1)\n")
    with _pool_child(tmp_path, code) as (proc, pids):
        proc.send_signal(getattr(signal, sig))
        proc.wait(10)
        deadline = time.monotonic() + 5
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in pids), "the workers outlived their setup"


@contextlib.contextmanager
def _pool_child(tmp_path, code: str):
    """A child running `code` (a fork_map of two workers that each drop a file named by its pid in tmp_path and
    sleep): (the child, its two workers' pids) once both started; the child and those workers killed after."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT)
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while len(pids) < 2 and time.monotonic() < deadline:
            pids = [int(n) for n in os.listdir(tmp_path)]
            time.sleep(0.05)
        assert len(pids) == 2
        yield proc, pids
    finally:
        proc.kill()
        proc.wait()
        for p in pids:  # only the workers this test's own child forked
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def test_setup_pool_stage_stops_at_once_on_ctrl_c(tmp_path):
    """Ctrl-C during a pool stage of `setup` (hours for a large key on the CPU) waited for the running chunks and
    then for the queued ones (shutdown(wait=True)) before the command could end."""
    import signal

    code = ("import os, signal, sys, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "from scheduler.setup_pool import fork_map\n"
            "def f(st, a, b):\n    open(os.path.join(st['d'], str(os.getpid())), 'w').close()\n"
            "    time.sleep(30)\n    return []\n"
            "try:\n    fork_map(f, 8, {'d': sys.argv[1]}, workers=2, min_parallel=1)\n"
            "except KeyboardInterrupt:\n    sys.exit(130)\n")
    with _pool_child(tmp_path, code) as (proc, pids):
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 130
        assert not any(_alive(p) for p in pids)


def test_setup_of_a_key_that_cannot_fit_in_memory_is_refused_before_work(tmp_path, capsys, monkeypatch):
    """A circuit whose key the CPU setup cannot hold (an .r1cs of a few bytes may declare 2^27 wires) ran for
    hours, then was killed for memory: now one line before any work, no file written."""
    from cli import main
    from engine.groth16 import setup_scalars
    from engine.groth16.bench_circuit import write_bench_circuit

    r1cs, _, _ = write_bench_circuit(tmp_path, "bn128", 3000)
    monkeypatch.setattr(setup_scalars, "available_memory", lambda: 2 << 20, raising=False)
    out = tmp_path / "k.zkey"
    assert main(["setup", "--backend", "cpu", r1cs, str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {r1cs}: ") and "memory" in err, err
    assert "MiB available" in err and not out.exists()
    monkeypatch.setattr(setup_scalars, "available_memory", lambda: None)  # unknown: no refusal
    assert main(["setup", "--backend", "cpu", "--quiet", r1cs, str(out)]) == 0 and out.exists()


# ---------------------------------------------------------------- bench-circuit

def test_bench_circuit_too_large_for_memory_is_refused_before_work(tmp_path, capsys, monkeypatch):
    """`bench-circuit --constraints 100000000` (within the curve's domain) built until the OOM killer came."""
    from cli import main
    from engine.groth16 import setup_scalars

    monkeypatch.setattr(setup_scalars, "available_memory", lambda: 16 << 20, raising=False)
    d = tmp_path / "out"
    assert main(["bench-circuit", "--constraints", "200000", str(d)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--constraints 200000" in err and "memory" in err, err
    assert not d.exists()


def test_bench_circuit_that_fails_to_write_its_witness_leaves_the_old_pair(tmp_path, capsys, monkeypatch):
    """A full disk after the .r1cs was written: the directory held the new circuit beside the old run's witness,
    a pair that does not belong together (prove then refused it, or worse, a reader took it as one run)."""
    import errno

    from cli import main
    from engine.errors import write_error
    from engine.groth16 import bench_circuit

    d = tmp_path / "out"
    assert main(["bench-circuit", "--constraints", "10", "--quiet", str(d)]) == 0
    old = {n: (d / n).read_bytes() for n in ("bench.r1cs", "bench.wtns")}
    capsys.readouterr()

    def full_disk(path, *a, **k):
        raise write_error(path, OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr(bench_circuit, "write_wtns", full_disk)
    assert main(["bench-circuit", "--constraints", "150", "--quiet", str(d)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {d / 'bench.wtns'}: cannot write: No space left on device"
    assert sorted(os.listdir(d)) == ["bench.r1cs", "bench.wtns"]
    assert {n: (d / n).read_bytes() for n in old} == old
    new = tmp_path / "new"
    assert main(["bench-circuit", "--constraints", "150", "--quiet", str(new)]) == 2
    assert not new.exists()  # neither file, nor the folder this run made (engine/commands/bench_circuit.py)


def test_cache_clear_with_an_empty_dir_flag_is_refused_not_the_default_cache(zkey_file, tmp_path, capsys,
                                                                            monkeypatch):
    """`cache clear --dir "$UNSET"` emptied the default cache ($GROTH16_KEY_CACHE's), a directory never named."""
    from cli import main

    d = tmp_path / "default"
    monkeypatch.setenv(kc.ENV, str(d))
    kc.KeyCache(d).store(kc.identity_of(read_zkey(zkey_file), LAYOUT), _arrays())
    for blank in ("", "  "):
        assert main(["cache", "clear", "--dir", blank]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: --dir is empty") and len(err.splitlines()) == 1
    assert len(kc.KeyCache(d).entries()) == 1


@pytest.mark.parametrize("args, words", [
    (["--name", "x" * 300, "{d}"], "--name 'xxxx"),  # NAME_MAX: refused only after the circuit was built
    ([""], "the output directory is an empty path"),  # "cannot create the output directory: No such file..."
    (["{d}"], "bench.r1cs: is a directory, cannot write a file there"),  # "cannot write: Is a directory", after
])
def test_bench_circuit_bad_paths_are_named_and_refused_before_work(tmp_path, capsys, monkeypatch, args, words):
    from cli import main
    from engine.groth16 import bench_circuit

    def no_work(*a, **k):
        raise AssertionError("the circuit was built before the request was checked")

    monkeypatch.setattr(bench_circuit, "make_bench_circuit", no_work)
    d = tmp_path / "out"
    if "directory," in words:
        (d / "bench.r1cs").mkdir(parents=True)
    assert main(["bench-circuit", "--constraints", "5"] + [a.format(d=d) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
    assert not d.exists() or os.listdir(d) == ["bench.r1cs"]


@pytest.mark.parametrize("action", ["list", "clear"])
def test_cache_command_on_an_unreadable_directory_is_an_error_not_an_empty_cache(tmp_path, capsys, monkeypatch,
                                                                                 action):
    """A cache directory this user may not read (another user's, mode 700) answered "0 entries" / "removed 0"."""
    from cli import main

    d = tmp_path / "cache"
    d.mkdir()
    real_listdir = os.listdir

    def denied(path="."):
        if os.fspath(path) == os.fspath(d):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", denied)
    assert main(["cache", action, "--dir", str(d)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == f"error: {d}: cannot read the key cache's directory: permission denied"


def test_cache_clear_removes_only_its_own_kind_of_temporary_file(tmp_path, capsys):
    """`cache clear --dir` pointed at a shared folder removed every `.tmp-*` in it (a foreign file, or a folder,
    which then failed the whole clear): only the writers' own `.tmp-*.gkc` files are its leftovers."""
    from cli import main

    d = tmp_path / "cache"
    d.mkdir()
    (d / ".tmp-notes.txt").write_text("someone else's")
    (d / f".tmp-folder{kc.SUFFIX}").mkdir()
    (d / f".tmp-dead{kc.SUFFIX}").write_bytes(b"x")
    assert main(["cache", "clear", "--dir", str(d)]) == 0
    assert "removed 1 file(s)" in capsys.readouterr().out
    assert sorted(os.listdir(d)) == [".tmp-folder.gkc", ".tmp-notes.txt"]


def test_cache_on_a_file_system_without_locks_spares_recent_temporary_files(zkey_file, tmp_path, monkeypatch):
    """Where flock fails (some network file systems), writers still write and `clear` goes by age instead."""
    import errno

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(kc.fcntl, "flock", no_locks)
    cache = kc.KeyCache(tmp_path / "cache")
    ident = kc.identity_of(read_zkey(zkey_file), LAYOUT)
    assert cache.store(ident, _arrays()) and cache.load(ident) is not None
    recent, old = tmp_path / "cache" / f".tmp-recent{kc.SUFFIX}", tmp_path / "cache" / f".tmp-old{kc.SUFFIX}"
    recent.write_bytes(b"r")
    old.write_bytes(b"o")
    t = os.stat(old).st_mtime - 2 * kc.LEFTOVER_AGE_S
    os.utime(old, (t, t))
    entry_bytes = os.path.getsize(cache.path_for(ident))
    assert cache.clear() == (2, entry_bytes + 1)  # the entry and the old leftover
    assert recent.exists() and not old.exists() and cache.entries() == []


def test_setup_unknown_curve_is_refused_before_the_circuit_is_read(tmp_path, capsys, monkeypatch):
    """`setup --curve bn245 big.r1cs` read (and range-checked) the whole circuit before naming the typo."""
    from cli import main
    from engine.groth16 import setup as setup_mod

    def no_read(*a, **k):
        raise AssertionError("the circuit was read before --curve was checked")

    monkeypatch.setattr(setup_mod, "read_r1cs", no_read)
    r1cs = tmp_path / "c.r1cs"
    r1cs.write_bytes(b"r1cs")
    assert main(["setup", "--backend", "cpu", "--curve", "bn245", str(r1cs), str(tmp_path / "k.zkey")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown curve 'bn245'" in err, err


def test_key_cache_entry_serves_the_same_key_under_another_path(zkey_file, tmp_path):
    """A key reached by two paths (a symlink, a hard link, `cp -p`) has one entry name (the digest leaves the
    path out), but the load compared the path too: each path missed and rewrote the entry for the other."""
    link = tmp_path / "link.zkey"
    os.symlink(zkey_file, link)
    cache = kc.KeyCache(tmp_path / "cache")
    a = kc.identity_of(read_zkey(zkey_file), LAYOUT)
    b = kc.identity_of(read_zkey(link), LAYOUT)
    assert a.zkey_path != b.zkey_path and a.digest() == b.digest()
    cache.store(a, _arrays())
    entry = cache.load(b)
    assert entry is not None and np.array_equal(entry.arrays["values"], _arrays()["values"])
    entry.close()
    other = kc.Identity(b.zkey_path, b.size + 1, b.mtime_ns, b.sha, b.curve, b.layout)
    assert cache.load(other) is None  # any other field still tells keys apart


@pytest.mark.parametrize("mode", ["text", "json"])
def test_setup_key_written_to_stdout_is_not_followed_by_the_summary(tmp_path, mode):
    """`setup c.r1cs /dev/stdout > k.zkey` (or `| ...`): the "wrote ..." line (or the JSON result) went to stdout
    after the key, so the key came out with text at its end."""
    import subprocess
    import sys

    from engine.groth16.bench_circuit import write_bench_circuit

    r1cs, _, _ = write_bench_circuit(tmp_path, "bn128", 5)
    out = tmp_path / "k.zkey"
    flags = ["--json"] if mode == "json" else []
    with open(out, "wb") as f:
        argv = [sys.executable, "-m", "engine", "setup", "--backend", "cpu", *flags, r1cs, "/dev/stdout"]
        proc = subprocess.run(argv, cwd=ROOT, stdout=f, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr
    key = read_zkey(out)  # whole, nothing after its last section
    assert key.n_public == 2 and os.path.getsize(out) == max(off + n for off, n in key.sections.values())
    assert (b'"event": "result"' if mode == "json" else b"wrote /dev/stdout") in proc.stderr


def test_setup_workers_beyond_the_machine_are_refused_and_the_api_bounds_them(tmp_path, capsys):
    """`setup --workers 100000` forked one process per worker at the first large stage (until fork failed with a
    traceback, or the machine's process table filled)."""
    from cli import main
    from engine.groth16.setup_points import CpuSetupOps
    from scheduler.setup_pool import default_workers

    from engine.groth16.bench_circuit import write_bench_circuit

    r1cs, _, _ = write_bench_circuit(tmp_path, "bn128", 5)  # small: no pool, so nothing forks before the fix
    limit = 4 * default_workers()
    assert main(["setup", "--backend", "cpu", "--workers", str(100000), r1cs, str(tmp_path / "k.zkey")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --workers 100000: more than 4 processes per CPU this process may use "
                   f"({default_workers()}) only slow the setup down; give at most {limit}")
    assert CpuSetupOps(workers=100000).workers == limit and CpuSetupOps(workers=limit).workers == limit


@pytest.mark.parametrize("field, value", [("n_constraints", 5.5), ("n_constraints", True), ("n_constraints", "5"),
                                          ("n_public", 1.0), ("seed", 0.5)])
def test_bench_circuit_api_counts_of_another_type_are_a_type_error_naming_them(tmp_path, field, value):
    """write_bench_circuit(d, "bn128", 5.5) failed deep inside (AttributeError: 'float' object has no attribute
    'bit_length'), True built a 1-constraint circuit, and "5" a TypeError about '<'."""
    from engine.groth16.bench_circuit import write_bench_circuit

    kwargs = {"n_constraints": 5, "n_public": 2, "seed": 0, field: value}
    n = kwargs.pop("n_constraints")
    with pytest.raises(TypeError, match=f"{field} must be an integer, not {type(value).__name__}"):
        write_bench_circuit(tmp_path / "d", "bn128", n, **kwargs)
    assert not (tmp_path / "d").exists()


def test_bench_circuit_api_takes_numpy_counts(tmp_path):
    """numpy's integers are integers: np.int64(5) failed in log_domain ('numpy.int64' has no 'bit_length')."""
    from engine.groth16.bench_circuit import write_bench_circuit

    _, _, bench = write_bench_circuit(tmp_path, "bn128", np.int64(5), n_public=np.int32(2), seed=np.uint8(3))
    assert bench.r1cs.n_constraints == 5 and bench.r1cs.n_public == 2
