"""GROTH16_* environment variables the engine reads: a bad value is one error naming the variable, never a
ValueError traceback (GROTH16_WITNESS_MAX_WINDOW=abc under `info KEY.zkey` was one)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

SUDOKU = EXAMPLES / "bn128" / "sudoku"


@pytest.mark.parametrize("value", ["abc", "-3", "1.5", "0"])
def test_witness_max_window_bad_value_is_one_line_naming_it(value):
    p = subprocess.run([sys.executable, "-m", "engine", "info", f"{SUDOKU}.zkey", "--vram-budget", "16GiB"], cwd=REPO,
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "GROTH16_WITNESS_MAX_WINDOW": value})
    assert p.returncode == 2, p.stdout
    assert len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.startswith(f"error: GROTH16_WITNESS_MAX_WINDOW={value!r}: "), p.stderr


def test_witness_max_window_good_value_bounds_the_window(monkeypatch):
    from engine.backends.gpu import footprint
    from engine.backends.gpu.footprint import KeyShape, witness_plan
    from engine.formats.zkey import read_zkey

    shape = KeyShape.of(read_zkey(f"{SUDOKU}.zkey"))
    monkeypatch.setenv("GROTH16_WITNESS_MAX_WINDOW", " 3 ")
    assert witness_plan(shape, shape.n_wires, "full").c <= 3
    monkeypatch.setenv("GROTH16_WITNESS_MAX_WINDOW", "")
    assert witness_plan(shape, shape.n_wires, "full").c <= footprint.MAX_WINDOW_BITS


def test_integer_setting_names_the_variable(monkeypatch):
    from engine.env_setting import integer
    from engine.errors import EngineError

    monkeypatch.setenv("GROTH16_SOMETHING", "x1")
    with pytest.raises(EngineError, match=r"^GROTH16_SOMETHING='x1': expected a whole number"):
        integer("GROTH16_SOMETHING", None, EngineError, least=1)
    monkeypatch.setenv("GROTH16_SOMETHING", "7")
    assert integer("GROTH16_SOMETHING", None, EngineError, least=1) == 7
    monkeypatch.delenv("GROTH16_SOMETHING")
    assert integer("GROTH16_SOMETHING", 5, EngineError, least=1) == 5


def _switches():
    from engine.backends.gpu import msm, msm_builds, params, proof_streams
    from engine.algebra.curves import BN254

    return [("GROTH16_NTT_MIN_BLOCKS", "two", lambda: params.ntt_min_blocks(BN254)),
            ("GROTH16_NTT_MIN_BLOCKS", "-1", lambda: params.ntt_min_blocks(BN254)),
            ("GROTH16_FIELD_MUL", "fast", lambda: params.params_header(BN254)),
            ("GROTH16_FQ_MUL_INLINE", "yes", params.fq_mul_out_of_line),
            ("GROTH16_MSM_ACCUMULATION", "bucket", msm.default_accumulation),
            ("GROTH16_MSM_PRODUCTS", "g1", lambda: msm_builds.product_abi("g1", "bn128")),
            ("GROTH16_FRONT_BESIDE", "true", lambda: proof_streams.front_beside(1 << 20)),
            ("GROTH16_PI_B_BESIDE", "no", proof_streams.pi_b_beside),
            ("GROTH16_PRODUCTS_BESIDE", "on", lambda: proof_streams.products_now(False))]


@pytest.mark.parametrize("index", range(9))
def test_gpu_switch_bad_value_is_a_config_error_naming_it(monkeypatch, index):
    """A/B switches: a value they do not take was ignored without a word ("true", "yes") or a ValueError
    (an int() of it, or a variant's check) that reached the user as a traceback."""
    from engine.config import ConfigError

    name, value, read = _switches()[index]
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        read()
    assert str(info.value).startswith(f"{name}={value!r}: "), str(info.value)


def test_gpu_switches_keep_their_values(monkeypatch):
    from engine.algebra.curves import BN254
    from engine.backends.gpu import msm, params, proof_streams

    monkeypatch.setenv("GROTH16_NTT_MIN_BLOCKS", "6")
    assert params.ntt_min_blocks(BN254) == 6
    monkeypatch.setenv("GROTH16_FQ_MUL_INLINE", "1")
    assert params.fq_mul_out_of_line() is False
    monkeypatch.setenv("GROTH16_MSM_ACCUMULATION", "affine")
    assert msm.default_accumulation() == "affine"
    for value, beside in (("0", False), ("1", True), ("", True)):
        monkeypatch.setenv("GROTH16_PI_B_BESIDE", value)
        assert proof_streams.pi_b_beside() is beside
    monkeypatch.setenv("GROTH16_FRONT_BESIDE", "0")
    assert proof_streams.front_beside(1 << 20) is False
    monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", "1")
    assert proof_streams.products_now(False) is True


def test_key_cache_variable_naming_a_file_is_named_as_the_source(tmp_path):
    """GROTH16_KEY_CACHE=/some/file: `cache list` said "(--dir names the key cache's directory)", a flag not given."""
    (tmp_path / "f").write_text("x")
    p = subprocess.run([sys.executable, "-m", "engine", "cache", "list"], cwd=REPO, capture_output=True, text=True,
                       timeout=120, env={**os.environ, "GROTH16_KEY_CACHE": str(tmp_path / "f")})
    assert p.returncode == 2, p.stdout
    assert "GROTH16_KEY_CACHE" in p.stderr and "--dir" not in p.stderr, p.stderr


def test_the_witness_window_setting_loads_no_configuration_module():
    """The GPU's direct proof plans its key (footprint_limits.witness_max_window) without engine.config and msgspec
    (about 60 ms of a cold CLI's imports, tests/test_cli_startup.py on a GPU): reading the variable imported them."""
    probe = ("import sys; from engine.backends.gpu.footprint_limits import witness_max_window; "
             "assert witness_max_window(20) == 20; print(sorted(m for m in ('engine.config', 'msgspec') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != "GROTH16_WITNESS_MAX_WINDOW"})
    assert out.returncode == 0 and out.stdout.strip() == "[]", (out.stdout, out.stderr)
