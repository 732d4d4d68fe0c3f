"""An output being written when its process is killed (SIGKILL: the OOM killer while a large key is written, a
closed terminal's shell killed): the output stays old or absent, and the partial temporary file it left beside it
is removed by the next write of that output, which says so.  Before, each such death left a hidden
`.NAME.PID.N.tmp` (as large as the key it was writing) beside the output for good."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest

from engine.file_writes import write_file, write_files

ROOT = Path(__file__).resolve().parents[1]

_WRITER = """
    import sys, time
    from engine.file_writes import write_file
    def content(f):
        f.write(b"partial " * 1000)
        f.flush()
        print("writing", flush=True)
        time.sleep(60)
    write_file(sys.argv[1], content)
"""


def _stuck_writer(target: Path) -> subprocess.Popen:
    """A process halfway through writing `target`, stopped there."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_WRITER), str(target)], cwd=ROOT,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline() == b"writing\n"
    return proc


def _leftovers(folder: Path, name: str) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.startswith(f".{name}.") and n.endswith(".tmp"))


def test_a_killed_writers_partial_file_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "proof.json"
    target.write_text("old")
    proc = _stuck_writer(target)
    proc.kill()
    proc.wait()
    assert target.read_text() == "old"
    assert len(_leftovers(tmp_path, "proof.json")) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write_file(target, "new")
    assert target.read_text() == "new"
    assert _leftovers(tmp_path, "proof.json") == [], "the killed writer's partial file is still there"
    said = [str(w.message) for w in caught]
    assert any("partial" in m and "proof.json" in m for m in said), said


def test_a_live_writers_temporary_file_is_left_alone(tmp_path):
    target = tmp_path / "k.zkey"
    proc = _stuck_writer(target)
    try:
        theirs = _leftovers(tmp_path, "k.zkey")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            write_file(target, b"mine")
        assert target.read_bytes() == b"mine"
        assert _leftovers(tmp_path, "k.zkey") == theirs, "a live writer's file was removed"
        assert not caught, [str(w.message) for w in caught]
    finally:
        proc.kill()
        proc.wait()


def test_threads_writing_one_output_never_remove_each_others_files(tmp_path):
    target = tmp_path / "out.json"
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for k in range(40):
                write_files([(target, f"{i}-{k}"), (tmp_path / f"p{i}.json", str(k))])
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert not caught, [str(w.message) for w in caught]
    assert sorted(os.listdir(tmp_path)) == ["out.json", "p0.json", "p1.json", "p2.json", "p3.json"]


@pytest.mark.parametrize("command", ["setup", "export-vkey"])
def test_the_cli_says_it_removed_a_partial_file(tmp_path, command):
    """The next run of the command whose write was killed: its output whole, the leftover gone, one warning line."""
    sudoku = ROOT / "examples" / "bn128" / "sudoku"
    out = tmp_path / ("o.zkey" if command == "setup" else "vk.json")
    proc = _stuck_writer(out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    argv = (["setup", f"{sudoku}.r1cs", str(out), "--backend", "cpu", "--quiet"] if command == "setup"
            else ["export-vkey", f"{sudoku}.zkey", str(out)])
    done = subprocess.run([sys.executable, "-m", "engine", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert _leftovers(tmp_path, out.name) == []
    lines = [ln for ln in done.stderr.splitlines() if "partial" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: ") and out.name in lines[0], done.stderr


# ---------------------------------------------------------------- the key cache (engine/formats/key_cache.py)

def _cache_writer(directory: Path) -> tuple[subprocess.Popen, str]:
    """A process halfway through writing a key cache entry: its locked temporary file, 100 bytes so far."""
    code = ("import os, sys, time; from pathlib import Path; from engine.formats import key_cache as kc; "
            "fd, p = kc._locked_tmp(Path(sys.argv[1])); os.write(fd, b'x' * 100); print(p, flush=True); "
            "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(directory)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    tmp = proc.stdout.readline().strip()
    assert tmp and os.path.exists(tmp)
    return proc, tmp


def _store(directory: Path, tmp_path: Path) -> str | None:
    import shutil  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    from engine.formats import key_cache as kc  # noqa: PLC0415
    from engine.formats.zkey import read_zkey  # noqa: PLC0415

    zkey = tmp_path / "k.zkey"
    shutil.copyfile(ROOT / "examples" / "bn128" / "sudoku.zkey", zkey)
    ident = kc.identity_of(read_zkey(zkey), "gpu-csr-v1")
    return kc.KeyCache(directory).store(ident, {"row_ptr": np.arange(9, dtype=np.uint32)})


def test_a_killed_key_cache_writers_file_is_removed_by_the_next_store(tmp_path, caplog):
    """A load killed while it wrote its entry (a large key's, GBs) left its temporary file in the cache for good:
    only an explicit `cache clear` removed it, and `cache list` did not show it."""
    d = tmp_path / "cache"
    d.mkdir()
    proc, tmp = _cache_writer(d)
    proc.kill()
    proc.wait()
    proc.stdout.close()
    with caplog.at_level("WARNING", logger="engine.key_cache"):
        assert _store(d, tmp_path)
    assert not os.path.exists(tmp), "the killed writer's partial entry is still in the cache"
    assert any("partial" in r.getMessage() and os.path.basename(tmp) in r.getMessage() for r in caplog.records), \
        [r.getMessage() for r in caplog.records]


def test_a_live_key_cache_writers_file_survives_a_store(tmp_path, caplog):
    d = tmp_path / "cache"
    d.mkdir()
    proc, tmp = _cache_writer(d)
    try:
        with caplog.at_level("WARNING", logger="engine.key_cache"):
            assert _store(d, tmp_path)
        assert os.path.exists(tmp), "a live writer's file was removed"
        assert not caplog.records, [r.getMessage() for r in caplog.records]
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_cache_list_shows_a_killed_writers_partial_entry(tmp_path):
    """`cache list` said "0 entries, 0.0 MiB" of a cache holding a killed load's partial entry (as large as the
    key's): where the disk went was nowhere to be seen; `cache clear` removed it without having shown it."""
    import json  # noqa: PLC0415

    d = tmp_path / "cache"
    d.mkdir()
    proc, tmp = _cache_writer(d)
    proc.kill()
    proc.wait()
    proc.stdout.close()
    listed = subprocess.run([sys.executable, "-m", "engine", "cache", "list", "--dir", str(d)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "partial" in listed.stdout and "cache clear" in listed.stdout, listed.stdout
    as_json = subprocess.run([sys.executable, "-m", "engine", "cache", "list", "--dir", str(d), "--json"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert json.loads(as_json.stdout)["partial"] == [{"file": tmp, "bytes": 100}], as_json.stdout


_BENCH_STALLS = """
    import runpy, sys, time
    from engine.file_writes import write_file
    from engine.groth16 import bench_circuit

    def stall(path, r1cs):  # the .r1cs half written when the process is killed
        def content(f):
            f.write(b"partial " * 1000)
            f.flush()
            print("writing", flush=True)
            time.sleep(60)
        write_file(path, content)

    bench_circuit.write_r1cs = stall
    sys.argv = ["engine", "bench-circuit", "--constraints", "64", "--curve", "bn128", sys.argv[1]]
    runpy.run_module("engine", run_name="__main__", alter_sys=True)
"""


def test_bench_circuit_killed_while_writing_leaves_nothing_the_next_run_keeps(tmp_path):
    """bench-circuit writes its pair to temporary names of its own, each written through another temporary file: a
    kill left `..bench.r1cs.PID.tmp.0.tmp` (the circuit's size) that no later run ever looked for."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "stalls.py").write_text(textwrap.dedent(_BENCH_STALLS))
    proc = subprocess.Popen([sys.executable, str(tmp_path / "stalls.py"), str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline() == b"writing\n"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert os.listdir(out), "the killed run left nothing to clean: the test does not test"
    again = subprocess.run([sys.executable, "-m", "engine", "bench-circuit", "--constraints", "64", "--curve", "bn128",
                            str(out)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert sorted(os.listdir(out)) == ["bench.r1cs", "bench.wtns"]
    assert [ln for ln in again.stderr.splitlines() if ln.startswith("warning: ") and "partial" in ln], again.stderr
