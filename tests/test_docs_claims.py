"""What README.md, docs/*.md and the commands' --help promise a new user, checked by running it (CPU only)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "bn128"
SUDOKU = ROOT / "examples" / "bn128"


def run_inproc(capsys, *args) -> tuple[int, str, str]:
    """The command through cli.main in this process (quick)."""
    from cli import main

    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def engine(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -m engine ...` as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "engine", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_setup_quiet_prints_nothing_on_success(capsys, tmp_path):
    """`setup --quiet` printed its `wrote ...` line and the DEVELOPMENT KEY warning, unlike `prove --quiet`."""
    code, out, err = run_inproc(capsys, "setup", TINY / "tiny.r1cs", tmp_path / "k.zkey", "--backend", "cpu",
                                "--workers", "1", "--quiet")
    assert code == 0, err
    assert (out, err) == ("", "")
    assert (tmp_path / "k.zkey").stat().st_size > 0


def test_setup_without_quiet_still_says_what_it_wrote(capsys, tmp_path):
    code, out, err = run_inproc(capsys, "setup", TINY / "tiny.r1cs", tmp_path / "k.zkey", "--backend", "cpu",
                                "--workers", "1")
    assert code == 0, err
    assert out.startswith(f"wrote {tmp_path / 'k.zkey'}: bn128")
    assert "DEVELOPMENT KEY" in err


def test_setup_quiet_still_reports_errors(capsys, tmp_path):
    code, out, err = run_inproc(capsys, "setup", tmp_path / "missing.r1cs", tmp_path / "k.zkey", "--backend",
                                "cpu", "--quiet")
    assert code != 0
    assert out == ""
    assert err.startswith("error: ") and "missing.r1cs" in err and err.count("\n") == 1


def test_bench_circuit_quiet_prints_nothing_on_success(capsys, tmp_path):
    """`bench-circuit --quiet` printed its `wrote ...` line."""
    code, out, err = run_inproc(capsys, "bench-circuit", "--constraints", "20", tmp_path / "b", "--quiet")
    assert code == 0, err
    assert (out, err) == ("", "")
    assert (tmp_path / "b" / "bench.r1cs").exists() and (tmp_path / "b" / "bench.wtns").exists()


@pytest.mark.parametrize("command", ["setup", "bench-circuit"])
def test_quiet_help_says_nothing_is_printed(capsys, command):
    """The --quiet help said only "no progress bar" for commands that also print a summary."""
    with pytest.raises(SystemExit):
        run_inproc(capsys, command, "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "--quiet nothing printed on success" in text


@pytest.mark.parametrize("path", [SUDOKU / "public.json", SUDOKU / "sudoku.zkey", TINY / "tiny.r1cs"])
def test_info_json_is_one_line(capsys, path):
    """`info --json` printed indented JSON over many lines; the other commands' --json print one object a line."""
    code, out, err = run_inproc(capsys, "info", path, "--json")
    assert code == 0, err
    assert out.count("\n") == 1, out[:200]
    assert json.loads(out)["file"] == str(path)


@pytest.mark.parametrize("slot", [0, 1, 2])
def test_verify_names_a_binary_file_in_a_json_place(capsys, slot):
    """`verify circuit.zkey public.json proof.json` (the zkey first, as prove takes it) said "is not a JSON text
    file (not UTF-8)" after reading the whole key into memory."""
    args = [SUDOKU / "verification_key.json", SUDOKU / "public.json", SUDOKU / "proof.json"]
    args[slot] = SUDOKU / "sudoku.zkey"
    code, out, err = run_inproc(capsys, "verify", *args)
    assert code == 2 and out == ""
    what = ["verification_key.json", "public.json", "proof.json"][slot]
    assert err == f"error: {SUDOKU / 'sudoku.zkey'}: is a .zkey file, not a {what}" + \
        (" (`python -m engine export-vkey` writes one from it)\n" if slot == 0 else "\n")


def test_verify_does_not_read_a_huge_key_given_as_verification_key(tmp_path):
    """A zkey of many GiB in the verification key's place was read whole (out of memory, or minutes) before its
    refusal; its first bytes say what it is."""
    big = tmp_path / "big.zkey"
    with open(big, "wb") as f:
        f.write(b"zkey\x01\x00\x00\x00")
        f.truncate(1 << 40)  # sparse: 1 TiB that a whole read cannot hold
    res = engine("verify", big, SUDOKU / "public.json", SUDOKU / "proof.json")
    assert res.returncode == 2
    assert res.stderr == f"error: {big}: is a .zkey file, not a verification_key.json " \
        "(`python -m engine export-vkey` writes one from it)\n"


def _r1cs_with_header_word(tmp_path, word: int, value: int) -> Path:
    """tiny.r1cs with the header's u32 `word` after the prime (0 nWires, 2 nPubIn, 6 mConstraints) set to value."""
    import struct

    from engine.formats.binfile import open_binfile

    src = TINY / "tiny.r1cs"
    data = bytearray(src.read_bytes())
    off = open_binfile(src, "r1cs", max_version=1).section(1).offset
    struct.pack_into("<I", data, off + 4 + struct.unpack_from("<I", data, off)[0] + 4 * word, value)
    out = tmp_path / f"w{word}.r1cs"
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("word, words", [(6, "too few for mConstraints = 134217728"),
                                         (0, "nWires = 2147483648")])
def test_info_refuses_an_r1cs_whose_header_its_sections_cannot_hold(capsys, tmp_path, word, words):
    """`info` showed "constraints: 134,217,728" (exit 0) for a 600-byte .r1cs whose header says so; the section
    table alone shows the file is corrupt, as `setup` and `prove --r1cs` then say."""
    path = _r1cs_with_header_word(tmp_path, word, 1 << 27 if word == 6 else 1 << 31)
    code, out, err = run_inproc(capsys, "info", path)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {path}: ") and words in err and err.count("\n") == 1


def test_setup_json_keeps_stderr_to_json_lines(capsys, monkeypatch, tmp_path):
    """`setup --json` on a machine whose GPU setup cannot load printed a plain "note: ..." line among its JSON lines
    (every --json keeps its output to JSON objects, one a line)."""
    import engine.backends.select as select

    monkeypatch.setattr(select, "cuda_device_count", lambda: 1)
    monkeypatch.setitem(sys.modules, "engine.backends.gpu", None)  # its import fails: the CPU does the setup
    code, out, err = run_inproc(capsys, "setup", TINY / "tiny.r1cs", tmp_path / "k.zkey", "--workers", "1", "--json")
    assert code == 0, err
    events = [json.loads(line) for line in err.splitlines()]
    notes = [e for e in events if e.get("event") == "warning"]
    assert len(notes) == 1 and "GPU setup is not available" in notes[0]["message"], err
    assert json.loads(out)["backend"] == "cpu"


def test_verify_reads_a_named_pipe_once(tmp_path):
    """A proof.json given as a named pipe (mkfifo) must meet one reader: a look at its first bytes before the JSON
    reader left the writer's data behind and the command waiting for ever."""
    fifo = tmp_path / "proof.json"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat '{SUDOKU / 'proof.json'}' > '{fifo}'"])
    try:
        res = engine("verify", SUDOKU / "verification_key.json", SUDOKU / "public.json", fifo, timeout=20)
    finally:
        writer.kill()
        writer.wait()
    assert (res.returncode, res.stdout, res.stderr) == (0, "OK!\n", "")
