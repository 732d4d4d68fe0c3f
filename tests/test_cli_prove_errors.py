"""`python -m engine prove` on bad inputs: one clear line, a non-zero exit, no traceback, no output files.

Every case starts from the tiny snarkjs fixtures (tests/fixtures/tiny), breaks
one file in a copy, and checks that the error line names that file and says
what is wrong.  File layouts are parsed here independently of engine.formats
(the binfile container: magic, u32 version, u32 nSections, then records of
u32 id, u64 size, payload), so a reader bug cannot hide its own error.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import EXAMPLES, FIXTURES, REPO, run_engine

from engine.algebra.curves import curve_by_name
from engine.formats import read_wtns, write_wtns
from engine.algebra.limbs import from_ints, to_ints

TINY = FIXTURES / "tiny"


# ---------------------------------------------------------------- binfile helpers


@dataclass(frozen=True)
class Record:
    id: int
    at: int  # offset of the record header (u32 id, u64 size)
    offset: int  # first payload byte
    size: int


def records(data: bytes) -> list[Record]:
    (n,) = struct.unpack_from("<I", data, 8)
    out, pos = [], 12
    for _ in range(n):
        sid, size = struct.unpack_from("<IQ", data, pos)
        out.append(Record(sid, pos, pos + 12, size))
        pos += 12 + size
    return out


def record(data: bytes, sid: int) -> Record:
    return next(r for r in records(data) if r.id == sid)


def patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new) :]


def r1cs_constraints(data: bytes) -> list[tuple[dict, dict, dict]]:
    """The constraints of an .r1cs as (A, B, C) dicts wire -> coefficient."""
    hdr = record(data, 1)
    (n8,) = struct.unpack_from("<I", data, hdr.offset)
    (m,) = struct.unpack_from("<I", data, hdr.offset + 4 + n8 + 24)
    pos, out = record(data, 2).offset, []
    for _ in range(m):
        lcs = []
        for _ in range(3):
            (k,) = struct.unpack_from("<I", data, pos)
            pos += 4
            lc = {}
            for _ in range(k):
                (wire,) = struct.unpack_from("<I", data, pos)
                lc[wire] = int.from_bytes(data[pos + 4 : pos + 4 + n8], "little")
                pos += 4 + n8
            lcs.append(lc)
        out.append(tuple(lcs))
    return out


def first_failing(constraints, w: list[int], r: int) -> int:
    dot = lambda lc: sum(c * w[i] for i, c in lc.items()) % r  # noqa: E731
    return next(i for i, (a, b, c) in enumerate(constraints) if dot(a) * dot(b) % r != dot(c))


# ---------------------------------------------------------------- running prove


@dataclass
class Inputs:
    zkey: Path
    wtns: Path
    r1cs: Path
    proof: Path
    public: Path

    def prove(self, *extra):
        return run_engine("prove", self.zkey, self.wtns, self.proof, self.public, "--backend", "cpu", *extra)


def tiny_inputs(tmp_path: Path, curve: str = "bn128") -> Inputs:
    """Writable copies of the tiny fixture's key, witness and r1cs; outputs in tmp_path/out/."""
    src = TINY / curve
    for name in ("tiny.zkey", "tiny.wtns", "tiny.r1cs"):
        shutil.copyfile(src / name, tmp_path / name)
    (tmp_path / "out").mkdir()
    return Inputs(tmp_path / "tiny.zkey", tmp_path / "tiny.wtns", tmp_path / "tiny.r1cs",
                  tmp_path / "out" / "proof.json", tmp_path / "out" / "public.json")


def assert_clear_error(proc, inputs: Inputs, names: Path | tuple[Path, ...], problem: str) -> str:
    """The CLI contract for a user's mistake (naming `names`, or one of them); returns the error line."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 0, f"exit 0 on a bad input:\n{proc.stdout}\n{proc.stderr}"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{proc.stderr}"
    line = lines[0]
    names = names if isinstance(names, tuple) else (names,)
    assert any(str(n) in line for n in names), f"the error does not name {' or '.join(map(str, names))}: {line}"
    assert re.search(problem, line, re.IGNORECASE), f"the error does not say /{problem}/: {line}"
    assert not inputs.proof.exists(), "a proof file was written for bad inputs"
    assert not inputs.public.exists(), "a public file was written for bad inputs"
    return line


def test_valid_tiny_inputs_prove(tmp_path):
    """The baseline the error cases break: the untouched copies prove (with the r1cs check on)."""
    inp = tiny_inputs(tmp_path)
    proc = inp.prove("--r1cs", inp.r1cs)
    assert proc.returncode == 0, proc.stderr
    assert inp.proof.exists() and inp.public.exists()


# ---------------------------------------------------------------- broken files


def truncated_half(data: bytes) -> bytes:
    return data[: len(data) // 2]


def truncated_in_last_section(data: bytes) -> bytes:
    return data[:-1]


def truncated_in_magic(data: bytes) -> bytes:
    return data[:3]


def empty(data: bytes) -> bytes:
    return b""


def wrong_magic(data: bytes) -> bytes:
    return b"zzzz" + data[4:]


def wrong_version(data: bytes) -> bytes:
    return patch(data, 4, struct.pack("<I", 7))


def section_size_past_end(data: bytes) -> bytes:
    return patch(data, records(data)[0].at + 4, struct.pack("<Q", 1 << 40))


def zkey_plonk_protocol(data: bytes) -> bytes:
    return patch(data, record(data, 1).offset, struct.pack("<I", 2))


def zkey_unknown_base_field(data: bytes) -> bytes:
    at = record(data, 2).offset + 4  # q, after u32 n8q
    return patch(data, at, bytes([data[at] ^ 0x02]))


def wtns_count_beyond_values(data: bytes) -> bytes:
    hdr = record(data, 1)
    (n8,) = struct.unpack_from("<I", data, hdr.offset)
    at = hdr.offset + 4 + n8
    (n,) = struct.unpack_from("<I", data, at)
    return patch(data, at, struct.pack("<I", n + 1))


def wtns_value_not_reduced(data: bytes) -> bytes:
    hdr = record(data, 1)
    (n8,) = struct.unpack_from("<I", data, hdr.offset)
    prime = data[hdr.offset + 4 : hdr.offset + 4 + n8]
    return patch(data, record(data, 2).offset + n8, prime)  # w[1] = r


def r1cs_unknown_prime(data: bytes) -> bytes:
    at = record(data, 1).offset + 4
    return patch(data, at, bytes([data[at] ^ 0x02]))


TRUNCATED = r"truncat|too short|ends|end of file|past the end"
NOT_A = r"not an? |magic"
CASES = [
    # (file, mutation, what the message must say)
    ("zkey", truncated_half, TRUNCATED),
    ("zkey", truncated_in_last_section, TRUNCATED),
    ("zkey", truncated_in_magic, TRUNCATED + r"|not a"),
    ("zkey", empty, r"empty|truncat"),
    ("zkey", wrong_magic, NOT_A),
    ("zkey", wrong_version, r"version"),
    ("zkey", section_size_past_end, TRUNCATED + r"|size"),
    ("zkey", zkey_plonk_protocol, r"plonk|groth16|protocol"),
    ("zkey", zkey_unknown_base_field, r"prime|field|curve"),
    ("wtns", truncated_half, TRUNCATED),
    ("wtns", truncated_in_last_section, TRUNCATED + r"|bytes"),
    ("wtns", empty, r"empty|truncat"),
    ("wtns", wrong_magic, NOT_A),
    ("wtns", wrong_version, r"version"),
    ("wtns", section_size_past_end, TRUNCATED + r"|size"),
    ("wtns", wtns_count_beyond_values, r"nWitness|bytes|values|" + TRUNCATED),
    ("wtns", wtns_value_not_reduced, r"reduced|modulo|range|>= ?r"),
    ("r1cs", truncated_half, TRUNCATED),
    ("r1cs", empty, r"empty|truncat"),
    ("r1cs", wrong_magic, NOT_A),
    ("r1cs", wrong_version, r"version"),
    ("r1cs", section_size_past_end, TRUNCATED + r"|size"),
    ("r1cs", r1cs_unknown_prime, r"prime|field|curve"),
]


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("target, mutate, problem", CASES, ids=[f"{t}-{m.__name__}" for t, m, _ in CASES])
def test_broken_file_is_clear_error(tmp_path, curve, target, mutate, problem):
    inp = tiny_inputs(tmp_path, curve)
    path = getattr(inp, target)
    path.write_bytes(mutate(path.read_bytes()))
    extra = ("--r1cs", inp.r1cs) if target == "r1cs" else ()
    assert_clear_error(inp.prove(*extra), inp, path, problem)


def test_files_given_in_the_wrong_order_is_clear_error(tmp_path):
    inp = tiny_inputs(tmp_path)
    inp.zkey, inp.wtns = inp.wtns, inp.zkey
    assert_clear_error(inp.prove(), inp, inp.zkey, r"wtns|not a")


# ---------------------------------------------------------------- files that do not belong together


def test_witness_of_another_circuit_is_clear_error(tmp_path):
    inp = tiny_inputs(tmp_path)
    inp.wtns = EXAMPLES / "bn128" / "sudoku.wtns"
    wtns_n = struct.unpack_from("<I", (data := inp.wtns.read_bytes()), record(data, 1).offset + 4 + 32)[0]
    zkey = inp.zkey.read_bytes()
    (n8q,) = struct.unpack_from("<I", zkey, record(zkey, 2).offset)
    (n_vars,) = struct.unpack_from("<I", zkey, record(zkey, 2).offset + 4 + n8q + 4 + 32)
    line = assert_clear_error(inp.prove(), inp, inp.wtns, r"another circuit|expect|wires|values")
    assert str(wtns_n) in line and str(n_vars) in line, f"the error should give both sizes: {line}"


def test_r1cs_of_another_circuit_is_clear_error(tmp_path):
    inp = tiny_inputs(tmp_path)
    other = EXAMPLES / "bn128" / "sudoku.r1cs"
    assert_clear_error(inp.prove("--r1cs", other), inp, other, r"another circuit|expect|wires")


@pytest.mark.parametrize("key_curve, wtns_curve", [("bn128", "bls12381"), ("bls12381", "bn128")])
def test_zkey_of_the_other_curve_than_the_witness_is_clear_error(tmp_path, key_curve, wtns_curve):
    inp = tiny_inputs(tmp_path, key_curve)
    shutil.copyfile(TINY / wtns_curve / "tiny.wtns", inp.wtns)
    line = assert_clear_error(inp.prove(), inp, inp.wtns, wtns_curve)
    assert key_curve in line, f"the error should name both curves: {line}"


def unsatisfied_witness(inp: Inputs, curve: str) -> int:
    """Change one witness value in place; returns the first constraint that then fails.

    The wire changed is the one that first appears latest, so the failing
    constraint is not simply constraint 0.
    """
    r = curve_by_name(curve).r
    constraints = r1cs_constraints(inp.r1cs.read_bytes())
    wtns = read_wtns(inp.wtns)
    w = to_ints(wtns.values)
    first_use = {}
    for i, abc in enumerate(constraints):
        for lc in abc:
            for wire in lc:
                first_use.setdefault(wire, i)
    wire = max((wi for wi in first_use if wi != 0), key=lambda wi: first_use[wi])
    w[wire] = (w[wire] + 1) % r
    values = from_ints(w, 4)
    del wtns  # release the mapping before rewriting the file
    write_wtns(inp.wtns, r, values)
    return first_failing(constraints, w, r)


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_unsatisfied_witness_with_r1cs_names_the_first_failing_constraint(tmp_path, curve):
    inp = tiny_inputs(tmp_path, curve)
    bad = unsatisfied_witness(inp, curve)
    line = assert_clear_error(inp.prove("--r1cs", inp.r1cs), inp, inp.wtns, r"constraint")
    assert re.search(rf"constraint\s*#?\s*{bad}\b", line), f"expected constraint {bad} to be named: {line}"


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_unsatisfied_witness_without_r1cs_fails_self_verification(tmp_path, curve):
    inp = tiny_inputs(tmp_path, curve)
    unsatisfied_witness(inp, curve)
    assert_clear_error(inp.prove(), inp, (inp.zkey, inp.wtns), r"verif")


def test_zkey_with_altered_points_fails_self_verification(tmp_path):
    """Two A points swapped: every section still has its size, only the proof check can notice.

    The two wires have different points and different witness values, so pi_a
    changes by (w_i - w_j)(A_j - A_i) != 0.
    """
    inp = tiny_inputs(tmp_path)
    data, wtns = inp.zkey.read_bytes(), inp.wtns.read_bytes()
    values = record(wtns, 2)
    w = [wtns[values.offset + 32 * k : values.offset + 32 * (k + 1)] for k in range(values.size // 32)]
    a = record(data, 5)
    g1 = 64
    pts = [data[a.offset + i * g1 : a.offset + (i + 1) * g1] for i in range(a.size // g1)]
    i, j = next((i, j) for i in range(len(pts)) for j in range(i + 1, len(pts)) if pts[i] != pts[j] and w[i] != w[j])
    pts[i], pts[j] = pts[j], pts[i]
    inp.zkey.write_bytes(patch(data, a.offset, b"".join(pts)))
    assert_clear_error(inp.prove(), inp, inp.zkey, r"verif")


# ---------------------------------------------------------------- files that cannot be read


@pytest.mark.parametrize("target", ["zkey", "wtns", "r1cs"])
def test_missing_file_is_clear_error(tmp_path, target):
    inp = tiny_inputs(tmp_path)
    path = getattr(inp, target)
    path.unlink()
    extra = ("--r1cs", inp.r1cs) if target == "r1cs" else ()
    assert_clear_error(inp.prove(*extra), inp, path, r"no such file|not found|does not exist|missing")


@pytest.mark.parametrize("target", ["zkey", "wtns", "r1cs"])
def test_directory_instead_of_file_is_clear_error(tmp_path, target):
    inp = tiny_inputs(tmp_path)
    path = getattr(inp, target)
    path.unlink()
    path.mkdir()
    extra = ("--r1cs", inp.r1cs) if target == "r1cs" else ()
    assert_clear_error(inp.prove(*extra), inp, path, r"directory")


@pytest.mark.parametrize("target", ["zkey", "wtns"])
def test_unreadable_file_is_clear_error(tmp_path, target):
    inp = tiny_inputs(tmp_path)
    path = getattr(inp, target)
    path.chmod(0)
    cmd = ["prove", inp.zkey, inp.wtns, inp.proof, inp.public, "--backend", "cpu"]
    if os.geteuid() == 0:
        # root reads a chmod 000 file anyway: run the command without the capabilities that
        # override file permissions, as an ordinary user would be
        proc = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m",
                               "engine", *map(str, cmd)], cwd=REPO, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
    else:
        proc = run_engine(*cmd)
    try:
        assert_clear_error(proc, inp, path, r"permission|cannot read|unreadable|denied")
    finally:
        path.chmod(0o644)


def _refused_on_the_cpu(tmp_path, flags: list[str], words: str) -> None:
    """`prove FLAGS --backend cpu` on the example: one error line starting `words`, exit 2, no proof."""
    key = EXAMPLES / "bn128" / "sudoku"
    r = run_engine("prove", *flags, "--backend", "cpu", "--quiet", f"{key}.zkey", f"{key}.wtns",
                   tmp_path / "proof.json", tmp_path / "public.json")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"error: {words}"), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "proof.json").exists()


@pytest.mark.parametrize("flags,words", [
    (["--deadline", "5"], "--deadline acts only with --server"),
    (["--priority", "high"], "--priority acts only with --server"),
    (["--priority", "normal"], "--priority acts only with --server"),
    (["--token-file", "token"], "--token-file acts only with --server"),
    (["--engines", "2"], "--engines acts only with --ray"),
    (["--server", "http://127.0.0.1:9", "--engines", "2"], "--engines acts only with --ray"),
    (["--server", "http://127.0.0.1:9", "--ray", "local"], "--server and --ray are two places to prove"),
], ids=["deadline", "priority", "priority-normal", "token-file", "engines", "engines-server", "server-and-ray"])
def test_a_flag_for_a_server_or_a_cluster_is_refused_where_it_would_do_nothing(tmp_path, flags, words):
    """`prove --deadline 5` on this machine proved with no deadline at all, without a word (likewise --priority,
    --token-file, and --engines without --ray); --server with --ray went to the server and ignored --ray."""
    _refused_on_the_cpu(tmp_path, flags, words)


@pytest.mark.parametrize("flags,words", [
    (["--devices", "0"], "--devices acts only where a GPU proves"),
    (["--vram-budget", "8GiB"], "--vram-budget acts only where a GPU proves"),
    (["--key-cache-dir", "cache"], "--key-cache-dir acts only where a GPU proves"),
    (["--no-key-cache"], "--no-key-cache acts only where a GPU proves"),
    (["--devices", "1", "--no-key-cache"], "--devices and --no-key-cache act only where a GPU proves"),
], ids=["devices", "vram-budget", "key-cache-dir", "no-key-cache", "two"])
def test_a_gpu_flag_with_the_cpu_backend_is_refused(tmp_path, flags, words):
    """`prove --backend cpu --devices 1` (or --vram-budget, --key-cache-dir, --no-key-cache) proved on the CPU
    and dropped the flag without a word, on the direct path and the Engine's alike."""
    _refused_on_the_cpu(tmp_path, flags, words)


@pytest.mark.parametrize("flags,named", [
    (["--key-cache-dir", "cache"], "--key-cache-dir"),  # the direct path
    (["--devices", "0", "--vram-budget", "1GiB"], "--devices and --vram-budget"),  # the Engine's
], ids=["direct", "engine"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_gpu_flag_where_auto_finds_no_device_is_a_warning_and_the_proof_is_made(tmp_path, flags, named, as_json):
    """With the auto backend on a machine without a CUDA device (hidden here, so that a GPU machine runs it
    too) the flags were dropped without a word; now one warning line says so, and the proof is made."""
    key = EXAMPLES / "bn128" / "sudoku"
    cmd = [sys.executable, "-m", "engine", "prove", *flags, "--json" if as_json else "--quiet", f"{key}.zkey",
           f"{key}.wtns", tmp_path / "proof.json", tmp_path / "public.json"]
    r = subprocess.run(list(map(str, cmd)), cwd=REPO, capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 0, r.stderr
    text = f"no CUDA device here, so the CPU proves and {named} ha"
    if as_json:
        import json

        events = [json.loads(line) for line in r.stderr.splitlines()]
        warned = [e for e in events if e["event"] == "warning"]
        assert len(warned) == 1 and warned[0]["message"].startswith(text), r.stderr
    else:
        assert r.stderr.strip().splitlines() == [r.stderr.strip()] and r.stderr.startswith(f"warning: {text}"), \
            r.stderr
    assert (tmp_path / "proof.json").exists() and (tmp_path / "public.json").exists()
