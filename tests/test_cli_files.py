"""`python -m engine info | export-vkey | verify`: results on good files, one-line errors on bad ones."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "tiny"
CURVES = ["bn128", "bls12381"]


def engine(*args, cwd=None) -> subprocess.CompletedProcess:
    """Run `python -m engine ...` as a user would (for exit codes and the absence of tracebacks)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "engine", *map(str, args)], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def run_inproc(capsys, *args) -> tuple[int, str, str]:
    """The same command through cli.main in this process (quicker, for the good paths)."""
    from cli import main

    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def fx(curve: str, name: str) -> Path:
    return FIX / curve / name


def assert_clean_failure(res: subprocess.CompletedProcess, name, *words: str, code: int | None = None) -> None:
    assert res.returncode != 0, res.stdout
    if code is not None:
        assert res.returncode == code, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert str(name) in err, err
    for w in words:
        assert w in err, err


# ---------------------------------------------------------------- info

def test_info_json_describes_every_fixture(capsys):
    expect = {
        "tiny.r1cs": {"kind": "r1cs", "constraints": 3, "wires": 7, "public_outputs": 2, "public_inputs": 1,
                      "private_inputs": 2},
        "tiny.wtns": {"kind": "wtns", "witness_values": 7, "w0": "1"},
        "tiny.zkey": {"kind": "zkey", "vars": 7, "public_signals": 3, "domain_size": 8, "coefficients": 8,
                      "contributions": 1},
        "tiny_0.zkey": {"kind": "zkey", "contributions": 0},
        "proof.json": {"kind": "proof", "protocol": "groth16"},
        "public.json": {"kind": "public", "public_signals": 3, "values": ["165", "27", "3"]},
        "verification_key.json": {"kind": "verification_key", "public_signals": 3, "ic_points": 4},
    }
    for curve in CURVES:
        for name, fields in expect.items():
            code, out, err = run_inproc(capsys, "info", fx(curve, name), "--json")
            assert code == 0, err
            got = json.loads(out)
            assert {k: got[k] for k in fields} == fields
            if name != "public.json":
                assert got["curve"] == curve


def test_info_text_shows_sections_and_counts(capsys):
    res = engine("info", fx("bn128", "tiny.zkey"))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "curve:" in out and "bn128" in out and "domain size:" in out and "sections:" in out
    assert "9 (H)" in out and "10 (MPC parameters)" in out
    code, out, _ = run_inproc(capsys, "info", fx("bls12381", "tiny.r1cs"))
    assert code == 0 and "public outputs: 2" in out and "constraints:    3" in out


def _truncated(tmp_path, name, cut):
    p = tmp_path / name
    p.write_bytes(fx("bn128", name).read_bytes()[:cut])
    return p


def _plonk(tmp_path):
    raw = bytearray(fx("bn128", "tiny.zkey").read_bytes())
    struct.pack_into("<I", raw, 24, 2)  # section 1 payload: the protocol id
    p = tmp_path / "plonk.zkey"
    p.write_bytes(raw)
    return p


@pytest.mark.parametrize(
    "make,words",
    [
        (lambda t: t / "missing.zkey", ["no such file"]),
        (lambda t: t, ["is a directory"]),
        (lambda t: _truncated(t, "tiny.zkey", 1000), ["truncated", "section"]),
        (lambda t: _truncated(t, "tiny.r1cs", 30), ["truncated"]),
        (lambda t: _truncated(t, "tiny.wtns", 0), ["is empty"]),
        (_plonk, ["PLONK zkey, only Groth16"]),
        (lambda t: (t / "notes.txt").write_text("hello") and t / "notes.txt", ["is not a .r1cs, .wtns, .zkey"]),
        (lambda t: (t / "x.json").write_text('{"a": "five"}') and t / "x.json", ["not a proof, public signals"]),
        (lambda t: (t / "p.json").write_text("[1, 2") and t / "p.json", ["not valid JSON"]),
    ],
)
def test_info_on_bad_input_is_one_line_error(tmp_path, make, words):
    path = make(tmp_path)
    assert_clean_failure(engine("info", path), path, *words, code=2)


@pytest.mark.parametrize("flags,name", [(["--proofs", "3"], "tiny.wtns"), (["--vram-budget", "8GiB"], "tiny.r1cs"),
                                        (["--proofs", "auto", "--vram-budget", "8GiB"], "verification_key.json")])
def test_info_refuses_a_keys_footprint_flags_on_another_file(flags, name):
    """They plan a .zkey's footprint: on another file they were ignored without a word."""
    res = engine("info", *flags, fx("bn128", name))
    assert_clean_failure(res, fx("bn128", name), "GPU footprint", "not a .zkey", code=2)
    res = engine("info", *flags, fx("bn128", "tiny.zkey"))  # on a key they plan its footprint
    assert res.returncode == 0 and "footprint" in res.stdout, res.stderr


# ---------------------------------------------------------------- export-vkey

@pytest.mark.parametrize("curve", CURVES)
def test_export_vkey_is_byte_identical_to_snarkjs(tmp_path, capsys, curve):
    assert run_inproc(capsys, "export-vkey", fx(curve, "tiny_0.zkey"), tmp_path / "vk0.json")[0] == 0
    res = engine("export-vkey", fx(curve, "tiny.zkey"), tmp_path / "vk.json")
    assert res.returncode == 0 and res.stdout == "", res.stderr
    assert (tmp_path / "vk.json").read_bytes() == fx(curve, "verification_key.json").read_bytes()
    # before the contribution delta is the generator: same alpha/beta/IC, another delta
    vk0 = json.loads((tmp_path / "vk0.json").read_text())
    vk = json.loads((tmp_path / "vk.json").read_text())
    assert vk0["vk_alpha_1"] == vk["vk_alpha_1"] and vk0["vk_delta_2"] == vk0["vk_gamma_2"] != vk["vk_delta_2"]


@pytest.mark.parametrize(
    "make,words",
    [
        (lambda t: t / "missing.zkey", ["no such file"]),
        (lambda t: _truncated(t, "tiny.zkey", 2000), ["truncated"]),
        (_plonk, ["PLONK"]),
        (lambda t: fx("bn128", "tiny.wtns"), ["is a .wtns file, not a .zkey file"]),
    ],
)
def test_export_vkey_on_bad_zkey_is_one_line_error(tmp_path, make, words):
    path = make(tmp_path)
    res = engine("export-vkey", path, tmp_path / "vk.json")
    assert_clean_failure(res, path, *words, code=2)
    assert not (tmp_path / "vk.json").exists()


def test_export_vkey_to_unwritable_place_is_one_line_error(tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "vk.json"
    assert_clean_failure(engine("export-vkey", fx("bn128", "tiny.zkey"), target), target, "cannot write")


# ---------------------------------------------------------------- verify

@pytest.mark.parametrize("curve", CURVES)
def test_verify_accepts_snarkjs_proof(curve):
    res = engine("verify", fx(curve, "verification_key.json"), fx(curve, "public.json"), fx(curve, "proof.json"))
    assert res.returncode == 0 and res.stdout.strip() == "OK!", res.stdout + res.stderr


@pytest.mark.parametrize("curve", CURVES)
def test_verify_rejects_wrong_public_signal_with_exit_1(tmp_path, curve):
    pub = tmp_path / "public.json"
    pub.write_text(json.dumps(["166", "27", "3"], indent=1))
    res = engine("verify", fx(curve, "verification_key.json"), pub, fx(curve, "proof.json"))
    assert res.returncode == 1 and res.stdout.strip() == "Invalid proof", res.stdout + res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("point", ["vk_alpha_1", "vk_beta_2", "IC"])
def test_verify_names_a_key_point_off_its_curve_with_exit_2(tmp_path, capsys, curve, point):
    """A key with a point off its curve was answered "Invalid proof" (exit 1), which blames the proof."""
    key = json.loads(fx(curve, "verification_key.json").read_text())
    if point == "vk_beta_2":
        key[point][1][0] = str(int(key[point][1][0]) + 1)
    elif point == "IC":
        key[point][1][1] = str(int(key[point][1][1]) + 1)
    else:
        key[point][1] = str(int(key[point][1]) + 1)
    vk = tmp_path / "verification_key.json"
    vk.write_text(json.dumps(key))
    code, out, err = run_inproc(capsys, "verify", vk, fx(curve, "public.json"), fx(curve, "proof.json"))
    name = "IC[1]" if point == "IC" else point
    assert code == 2 and out == "", (code, out, err)
    twist = "twist " if point == "vk_beta_2" else ""
    assert err.strip() == f"error: {vk}: {name} is not a point of the {curve} {twist}curve"


def test_verify_of_a_bad_key_is_one_line_from_the_command(tmp_path):
    key = json.loads(fx("bn128", "verification_key.json").read_text())
    key["vk_delta_2"][0][1] = "5"
    vk = tmp_path / "verification_key.json"
    vk.write_text(json.dumps(key))
    res = engine("verify", vk, fx("bn128", "public.json"), fx("bn128", "proof.json"))
    assert_clean_failure(res, vk, "vk_delta_2 is not a point of the bn128 twist curve", code=2)


def test_verify_rejects_swapped_proof_points_with_exit_1(tmp_path, capsys):
    proof = json.loads(fx("bn128", "proof.json").read_text())
    proof["pi_a"], proof["pi_c"] = proof["pi_c"], proof["pi_a"]
    p = tmp_path / "proof.json"
    p.write_text(json.dumps(proof))
    code, out, _ = run_inproc(capsys, "verify", fx("bn128", "verification_key.json"), fx("bn128", "public.json"), p)
    assert code == 1 and out.strip() == "Invalid proof"


def test_verify_with_proof_of_another_curve_is_clear_error():
    vk, proof = fx("bn128", "verification_key.json"), fx("bls12381", "proof.json")
    res = engine("verify", vk, fx("bn128", "public.json"), proof)
    assert_clean_failure(res, proof, "bls12381", "bn128", code=2)


def test_verify_with_public_of_wrong_length_is_clear_error(tmp_path):
    pub = tmp_path / "public.json"
    pub.write_text('["165", "27"]')
    res = engine("verify", fx("bn128", "verification_key.json"), pub, fx("bn128", "proof.json"))
    assert_clean_failure(res, pub, "has 2 public signals", "nPublic = 3", code=2)


@pytest.mark.parametrize(
    "which,content,words",
    [
        ("vkey", "{", ["not valid JSON"]),
        ("vkey", None, ["no such file"]),
        ("public", json.dumps([str(1 << 255)] * 3), ["[0]", "not below"]),
        ("proof", '{"pi_a": ["1", "2", "1"]}', ['missing "pi_b"']),
        ("proof", "[]", ["expected a JSON object"]),
    ],
)
def test_verify_on_bad_files_is_one_line_error(tmp_path, which, content, words):
    files = {"vkey": fx("bn128", "verification_key.json"), "public": fx("bn128", "public.json"),
             "proof": fx("bn128", "proof.json")}
    bad = tmp_path / f"{which}.json"
    if content is not None:
        bad.write_text(content)
    files[which] = bad
    res = engine("verify", files["vkey"], files["public"], files["proof"])
    assert_clean_failure(res, bad, *words, code=2)


def test_info_reads_a_ptau_header(tmp_path, capsys):
    from engine.algebra.curves import BLS12_381

    head = struct.pack("<I", 48) + BLS12_381.q.to_bytes(48, "little") + struct.pack("<II", 12, 28)
    p = tmp_path / "pot.ptau"
    p.write_bytes(b"ptau" + struct.pack("<II", 1, 1) + struct.pack("<IQ", 1, len(head)) + head)
    code, out, err = run_inproc(capsys, "info", p, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert (got["kind"], got["curve"], got["power"]) == ("ptau", "bls12381", 12)


# ---------------------------------------------------------------- warnings

def _unreduced_r1cs(tmp_path: Path) -> Path:
    import warnings  # noqa: PLC0415

    from engine.algebra.curves import BN254  # noqa: PLC0415
    from engine.algebra.limbs import from_ints, to_ints  # noqa: PLC0415
    from engine.formats.r1cs import read_r1cs, write_r1cs  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = read_r1cs(fx("bn128", "tiny.r1cs"))
    vals = to_ints(r.a.coeffs)
    r.a.coeffs = from_ints([vals[0] + BN254.r] + vals[1:], 4)  # one coefficient >= r, as old writers left them
    path = tmp_path / "u.r1cs"
    write_r1cs(path, r)
    return path


def test_a_warning_is_one_line_without_python_source(tmp_path):
    """A setup of an .r1cs with a coefficient >= r printed Python's warning form: the module's path and line, the
    category, and the source line `r1cs = read_r1cs(r1cs_path)` on the next line."""
    r1cs = _unreduced_r1cs(tmp_path)
    res = engine("setup", r1cs, tmp_path / "u.zkey", "--backend", "cpu")
    assert res.returncode == 0, res.stderr
    warned = [line for line in res.stderr.splitlines() if "reduced mod r" in line]
    assert warned == [f"warning: {r1cs}: 1 coefficients were >= r and were reduced mod r"], res.stderr
    assert "read_r1cs(" not in res.stderr and "Warning:" not in res.stderr
    res = engine("setup", r1cs, tmp_path / "v.zkey", "--backend", "cpu", "--json")
    events = [json.loads(line) for line in res.stderr.splitlines() + res.stdout.splitlines() if line.startswith("{")]
    assert {"event": "warning", "warning": "UnreducedCoefficientWarning",
            "message": f"{r1cs}: 1 coefficients were >= r and were reduced mod r"} in events


SETUP = ["setup", ROOT / "examples" / "bn128" / "sudoku.r1cs", "{tmp}/o.zkey", "--backend", "cpu"]


@pytest.mark.parametrize("argv, flag", [
    ([*SETUP, "--workers", "-1"], "--workers"),
    ([*SETUP, "--workers", "0"], "--workers"),
    (["info", ROOT / "examples" / "bn128" / "sudoku.zkey", "--proofs", "0"], "--proofs"),
    (["info", ROOT / "examples" / "bn128" / "sudoku.zkey", "--proofs", "-2"], "--proofs"),
])
def test_a_count_below_one_is_refused_not_taken_as_one(tmp_path, argv, flag):
    """setup --workers -1 and info --proofs 0 ran as if 1 had been given (info then described one working set)."""
    proc = engine(*(str(a).replace("{tmp}", str(tmp_path)) for a in argv))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"argument {flag}: '{argv[-1]}': need at least 1" in proc.stderr
    assert not (tmp_path / "o.zkey").exists()


def test_info_describes_a_circuit_wasm_and_its_input_json(tmp_path):
    """Both are files `prove --wasm --input` takes; info answered "is not a .r1cs, .wtns, .zkey, .ptau or snarkjs
    JSON file" and "is JSON but not a proof, public signals or verification key"."""
    d = ROOT / "examples" / "bn128"
    r = engine("info", "--json", d / "sudoku.wasm")
    assert r.returncode == 0, r.stderr
    wasm = json.loads(r.stdout)
    assert (wasm["kind"], wasm["curve"], wasm["witness_values"], wasm["input_values"]) == ("wasm", "bn128", 225, 32)
    assert wasm["circom_runtime"].startswith("2.")
    r = engine("info", d / "input.json")
    assert r.returncode == 0, r.stderr
    assert "kind:         inputs" in r.stdout and "names:        puzzle[16], solution[16]" in r.stdout
    (tmp_path / "odd.json").write_text('{"a": "five"}')
    r = engine("info", tmp_path / "odd.json")
    assert r.returncode == 2
    assert "is JSON but not a proof, public signals, verification key or circuit inputs" in r.stderr
    (tmp_path / "bad.wasm").write_bytes(b"\0asm" + b"\1\0\0\0" + b"garbage")
    r = engine("info", tmp_path / "bad.wasm")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "bad.wasm" in r.stderr, r.stderr
