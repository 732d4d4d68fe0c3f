"""An .r1cs with custom gates (circom `pragma custom_templates;`, which only PLONK enforces).

`setup` made a Groth16 key of it as snarkjs does, and that key proves witnesses that break the gates: the gates'
constraints are not in the R1CS at all.  `setup` and `prove --r1cs` now refuse such a file in one line naming it
and why; `info` says it has custom gates.  A circuit with the pragma but no custom template used is a plain
R1CS and still accepted."""
from __future__ import annotations

import json

import pytest

from conftest import circom_compile, run_engine

pytestmark = pytest.mark.snarkjs

GATED = """pragma circom 2.1.0;
pragma custom_templates;

template custom Mul() {
    signal input a;
    signal input b;
    signal output c;
    c <-- a * b;
}

template Main() {
    signal input x;
    signal input y;
    signal output z;
    component m = Mul();
    m.a <== x;
    m.b <== y;
    z <== m.c + 1;
}

component main = Main();
"""

PLAIN = GATED.replace("template custom Mul", "template Mul").replace("c <-- a * b;", "c <== a * b;")


@pytest.fixture(scope="module")
def circuits(tmp_path_factory):
    out = tmp_path_factory.mktemp("custom_gates")
    (out / "gated.circom").write_text(GATED)
    (out / "plain.circom").write_text(PLAIN)
    gated, gated_wasm = circom_compile(out / "gated.circom", "bn128", out)
    plain, _ = circom_compile(out / "plain.circom", "bn128", out)
    (out / "in.json").write_text('{"x": 3, "y": 4}')
    return out, gated, gated_wasm, plain


def _one_error_line(done, path) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"error: {path}: "), lines[0]
    return lines[0]


def test_setup_refuses_an_r1cs_with_custom_gates(circuits):
    out, gated, _, _ = circuits
    line = _one_error_line(run_engine("setup", gated, out / "gated.zkey"), gated)
    assert "custom gate" in line and "Mul" in line and "Groth16" in line, line
    assert not (out / "gated.zkey").exists()


def test_prove_r1cs_refuses_an_r1cs_with_custom_gates(circuits):
    out, gated, gated_wasm, plain = circuits
    zkey = out / "plain.zkey"
    assert run_engine("setup", plain, zkey, "--quiet").returncode == 0
    done = run_engine("witness", gated_wasm, out / "in.json", out / "gated.wtns")
    assert done.returncode == 0, done.stderr
    line = _one_error_line(run_engine("prove", zkey, out / "gated.wtns", out / "p.json", out / "pub.json",
                                      "--r1cs", gated, "--backend", "cpu"), gated)
    assert "custom gate" in line, line
    assert not (out / "p.json").exists()


def test_info_says_an_r1cs_has_custom_gates(circuits):
    out, gated, _, plain = circuits
    done = run_engine("info", gated)
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("custom gates:") and "Mul" in line for line in done.stdout.splitlines()), done.stdout
    summary = json.loads(run_engine("info", "--json", gated).stdout)
    assert summary["custom_gates"] == {"gates": ["Mul"], "uses": 1}
    assert json.loads(run_engine("info", "--json", plain).stdout)["custom_gates"] is None


def test_the_pragma_without_a_custom_template_is_a_plain_r1cs(circuits):
    out, _, _, plain = circuits
    done = run_engine("setup", plain, out / "plain2.zkey", "--quiet")
    assert done.returncode == 0, done.stderr
    assert (out / "plain2.zkey").exists()


@pytest.mark.parametrize("section4", [b"\xff\xff\xff\xff", b"\x02\x00\x00\x00Gate\x00\xff\xff\xff\xff", b"\x01\x00"])
def test_a_hostile_custom_gates_section_is_still_refused_in_one_line(tmp_path, section4):
    """A count of 2^32 - 1 gates, a gate whose parameter count runs off the section, a section cut short:
    refused as custom gates (or as a corrupt file), quickly and in one line."""
    from engine.errors import FormatError
    from engine.formats.binfile import open_binfile, write_binfile
    from engine.formats.r1cs import SECTION_NAMES, read_r1cs

    plain = tmp_path / "plain.r1cs"
    (tmp_path / "p.circom").write_text(PLAIN)
    plain, _ = circom_compile(tmp_path / "p.circom", "bn128", tmp_path)
    bf = open_binfile(str(plain), "r1cs", max_version=1, names=SECTION_NAMES)
    sections = [(s.id, [bf.bytes(s)]) for s in bf.records if s.id not in (4, 5)]
    hostile = tmp_path / "hostile.r1cs"
    write_binfile(str(hostile), "r1cs", 1, [*sections, (4, [section4]), (5, [b"\x01\x00\x00\x00"])])
    with pytest.raises(FormatError) as caught:
        read_r1cs(hostile)
    text = str(caught.value)
    assert text.startswith(f"{hostile}: uses custom gates (") and "\n" not in text, text
