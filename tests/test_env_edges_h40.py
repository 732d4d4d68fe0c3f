"""Environment variables and numeric settings at their edges: inf, nan, 1e400, non-ASCII digits, 0, a huge value,
spaces.  Each is one line naming the variable, flag or key (an EngineError), or a value the setting documents.
Before: `GROTH16_CLIENT_SPIN_MS=inf` spun until every answer came, `GROTH16_PIN_ONE_LOAD_MIB=inf` never pinned,
`GROTH16_NTT_MIN_BLOCKS=٣` was 3 and `=0` went into the kernels' source, `GROTH16_WITNESS_MAX_WINDOW=1` left the
planner no window ("no MSM plan"), `GROTH16_MSM_PRODUCTS="g1=eo, g2=eo"` was refused for its space,
`idle_trim_s = 1e-9` woke the trim loop without pause, `--devices ١` was device 1 and `--devices 1_0` device 10,
and `info --vram-budget 0` planned for 0 bytes and said "raise vram_budget", a key the line never wrote."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO
from engine.config import ConfigError, EngineConfig, from_args, load
from engine.errors import EngineError

SUDOKU = EXAMPLES / "bn128" / "sudoku"
NOT_FINITE = ["inf", "Infinity", "-inf", "nan", "1e400"]


def _one_line(exc: BaseException, start: str) -> str:
    text = str(exc)
    assert isinstance(exc, EngineError) and "\n" not in text and len(text) < 200, text
    assert text.startswith(start), text
    return text


# ---------------------------------------------------------------- numbers of ms, MiB, s (env_setting.number)

@pytest.mark.parametrize("value", NOT_FINITE + ["١", "1_000", "0x10", "5 ms"])
def test_a_number_variable_refuses_what_is_not_a_finite_ascii_number(monkeypatch, value):
    from engine.env_setting import number

    monkeypatch.setenv("GROTH16_X", value)
    with pytest.raises(EngineError) as info:
        number("GROTH16_X", 5.0, EngineError, "turns it off", "seconds", "s")
    _one_line(info.value, f"GROTH16_X={value!r}: ")


@pytest.mark.parametrize("value, read", [(" 1.5 ", 1.5), ("0", 0.0), (".5", 0.5), ("2e3", 2000.0), ("", 5.0),
                                         ("   ", 5.0), ("1e-400", 0.0), ("+3", 3.0)])
def test_a_number_variable_takes_decimal_numbers(monkeypatch, value, read):
    from engine.env_setting import number

    monkeypatch.setenv("GROTH16_X", value)
    assert number("GROTH16_X", 5.0, EngineError, "turns it off", "seconds", "s") == read


@pytest.mark.parametrize("value", ["inf", "1e400", "nan"])
def test_the_pinning_bound_refuses_inf(monkeypatch, value):
    """GROTH16_PIN_ONE_LOAD_MIB=inf was a bound no key reaches: never pinned, without a word (README: 0 always)."""
    import numpy as np

    from engine.commands import prove

    class Key:  # a key of 2 GiB of points: pinned by default (768 MiB), never under inf
        a = np.broadcast_to(np.zeros(1, np.uint8), (2 << 30,))  # its nbytes, without the memory
        b1 = b2 = c = h = coeffs = np.zeros(0, np.uint8)

    monkeypatch.delenv(prove.PIN_ONE_LOAD_ENV, raising=False)
    assert prove.pins_for_one_load(Key())
    monkeypatch.setenv(prove.PIN_ONE_LOAD_ENV, value)
    with pytest.raises(EngineError) as info:
        prove.pins_for_one_load(Key())
    _one_line(info.value, f"{prove.PIN_ONE_LOAD_ENV}={value!r}: must be a finite number")


@pytest.mark.parametrize("value", ["inf", "1e400", "1001", "١"])
def test_the_client_spin_refuses_inf_and_more_than_a_second(monkeypatch, value):
    """GROTH16_CLIENT_SPIN_MS=inf spun a core until each answer came: the spin is a budget before an answer."""
    from engine.client_wait import ENV, SpinSettingError, spin_seconds

    monkeypatch.setenv(ENV, value)
    with pytest.raises(SpinSettingError) as info:
        spin_seconds()
    _one_line(info.value, f"{ENV}={value!r}: ")
    monkeypatch.setenv(ENV, "1000")
    assert spin_seconds() == 1.0


@pytest.mark.parametrize("value", ["inf", "5000", "1e400"])
def test_the_gpu_polling_budget_refuses_inf_and_more_than_a_second(monkeypatch, value):
    from engine.backends.gpu import waiting

    monkeypatch.setenv(waiting.ENV, value)
    with pytest.raises(waiting.WaitSettingError) as info:
        waiting.spin_seconds()
    text = _one_line(info.value, f"{waiting.ENV}={value!r}: ")
    assert "from 0 to 1000 ms" in text and "0 turns the polling off" in text, text


# ---------------------------------------------------------------- whole numbers (env_setting.integer)

@pytest.mark.parametrize("value", ["٣", "1_0", "３"])
def test_a_count_variable_takes_ascii_digits_only(monkeypatch, value):
    """int() takes Arabic-Indic and full-width digits and underscores: GROTH16_NTT_MIN_BLOCKS=٣ was 3."""
    from engine.algebra.curves import BN254
    from engine.backends.gpu import params

    monkeypatch.setenv("GROTH16_NTT_MIN_BLOCKS", value)
    with pytest.raises(ConfigError) as info:
        params.ntt_min_blocks(BN254)
    _one_line(info.value, f"GROTH16_NTT_MIN_BLOCKS={value!r}: expected a whole number from 1 to 8")


@pytest.mark.parametrize("value", ["0", "9", "9" * 30])
def test_the_ntt_block_count_is_one_an_sm_can_hold(monkeypatch, value):
    from engine.algebra.curves import BN254
    from engine.backends.gpu import params

    monkeypatch.setenv("GROTH16_NTT_MIN_BLOCKS", value)
    with pytest.raises(ConfigError) as info:
        params.params_header(BN254)
    _one_line(info.value, f"GROTH16_NTT_MIN_BLOCKS={value!r}: must be from 1 to 8 (blocks of 256 threads an SM)")
    for good in ("1", " 8 "):
        monkeypatch.setenv("GROTH16_NTT_MIN_BLOCKS", good)
        assert params.ntt_min_blocks(BN254) == int(good)


@pytest.mark.parametrize("value", ["1", "23", "99"])
def test_the_witness_window_bound_is_a_window_the_planner_tries(monkeypatch, value):
    """1 left plan_msm no window (it tries 2 bits up): the key's footprint said "no MSM plan ... allow a smaller
    fold or the host tier"; above 22 it bounded nothing."""
    from engine.backends.gpu.footprint import KeyShape, witness_plan
    from engine.formats.zkey import read_zkey

    shape = KeyShape.of(read_zkey(f"{SUDOKU}.zkey"))
    monkeypatch.setenv("GROTH16_WITNESS_MAX_WINDOW", value)
    with pytest.raises(ConfigError) as info:
        witness_plan(shape, shape.n_wires, "full")
    _one_line(info.value, f"GROTH16_WITNESS_MAX_WINDOW={value!r}: must be from 2 to 22")
    monkeypatch.setenv("GROTH16_WITNESS_MAX_WINDOW", "2")
    assert witness_plan(shape, shape.n_wires, "full").c == 2


def test_the_witness_window_range_is_the_planners():
    from engine.backends.gpu import footprint, msm
    from engine.backends.gpu.footprint_limits import WINDOW_BITS

    assert WINDOW_BITS == (2, footprint.MAX_WINDOW_BITS)
    with pytest.raises(msm.NoPlanError):  # what a bound of 1 bit left the planner
        msm.plan_msm(1000, 254, "full", WINDOW_BITS[0] - 1)


# ---------------------------------------------------------------- GROTH16_MSM_PRODUCTS (env_setting.table)

def test_msm_products_takes_spaces_around_its_parts(monkeypatch):
    from engine.backends.gpu import msm_builds

    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", None)
    monkeypatch.setenv("GROTH16_MSM_PRODUCTS", " g1 = eo , g2=split ")
    assert (msm_builds.product_abi("g1", "bn128"), msm_builds.product_abi("g2", "bn128")) == ("eo", "split")
    monkeypatch.setenv("GROTH16_MSM_PRODUCTS", "   ")  # blank: unset, as every other variable
    assert msm_builds.product_abi("g1", "bn128") == msm_builds.PRODUCT_ABI_BY_CURVE["bn128"]["g1"]


@pytest.mark.parametrize("value, words", [("g1=eo,g1=ref", "g1 is given twice"),
                                          ("g3=eo", "expected KEY=VALUE pairs"),
                                          ("g1=fast", "VALUE one of ref, value, mixed"),
                                          ("g1=" + "x" * 5000, "expected KEY=VALUE pairs")])
def test_msm_products_bad_value_is_one_short_line(monkeypatch, value, words):
    from engine.backends.gpu import msm_builds

    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", None)
    monkeypatch.setenv("GROTH16_MSM_PRODUCTS", value)
    with pytest.raises(ConfigError) as info:
        msm_builds.product_abi("g1", "bn128")
    text = _one_line(info.value, "GROTH16_MSM_PRODUCTS=")
    assert words in text, text


# ---------------------------------------------------------------- idle_trim_s

@pytest.mark.parametrize("text, words", [
    ("idle_trim_s = 1e-9", "idle_trim_s: 1e-09 is too short: at least 0.01 s"),
    ("idle_trim_s = 0.001", "idle_trim_s: 0.001 is too short: at least 0.01 s"),
    ("idle_trim_s = inf", "idle_trim_s: inf is no time to wait (0: never trim)"),
])
def test_idle_trim_has_a_floor_and_an_end(tmp_path, text, words):
    """1e-9 woke the device worker's trim loop without pause, a core's worth of CPU for the engine's life."""
    _file_refused(tmp_path, text, words)


@pytest.mark.parametrize("seconds", [0, 0.01, 5, None])
def test_idle_trim_keeps_its_documented_values(seconds):
    assert EngineConfig(idle_trim_s=seconds).idle_trim_s == seconds


# ---------------------------------------------------------------- --devices and devices

@pytest.mark.parametrize("value, words", [
    ("١", "--devices: '١' is not a device index (digits 0-9"),
    ("0,١", "--devices: '١' is not a device index (digits 0-9"),
    ("1_0", "--devices: '1_0' is not a device index (digits 0-9"),
    ("+1", "--devices: '+1' is not a device index (digits 0-9"),
    ("-1", "--devices: '-1' is not a device index (digits 0-9"),
    ("1024", "--devices: 1024 is not a device index (0 to 1023)"),
    ("9" * 30, "--devices: " + "9" * 30 + " is not a device index (0 to 1023)"),
    ("9" * 5000, "--devices: 9999999999999999999999999999999999999... is not a device index (0 to 1023)"),
    (",", "--devices: an empty list names no device"),
    ("0,0", "--devices: [0, 0] names device 0 more than once"),
])
def test_devices_flag_takes_ascii_indices_and_names_the_bad_one(value, words):
    with pytest.raises(ConfigError) as info:
        from_args(argparse.Namespace(devices=value))
    _one_line(info.value, words)


@pytest.mark.parametrize("value, devices", [("0,1", [0, 1]), (" 1 , 0 ", [1, 0]), ("0,", [0]), ("1023", [1023]),
                                            ("0" * 5000 + "1", [1])])
def test_devices_flag_keeps_its_lists(value, devices):
    assert from_args(argparse.Namespace(devices=value)).devices == devices


@pytest.mark.parametrize("text, words", [("devices = [99999999999999999999]", "devices: 99999999999999999999 is "
                                          "not a device index (0 to 1023)"),
                                         ("devices = [0, -1]", "devices: -1 is not a device index (0 to 1023)"),
                                         ("devices = []", "devices: an empty list names no device")])
def test_devices_key_names_the_bad_index(tmp_path, text, words):
    _file_refused(tmp_path, text, words)


def _file_refused(tmp_path, text: str, words: str) -> None:
    """engine.toml holding `text` is one ConfigError: its path, then `words`."""
    path = tmp_path / "engine.toml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as info:
        load(path)
    _one_line(info.value, f"{path}: {words}")


# ---------------------------------------------------------------- info --vram-budget

def _info(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "info", f"{SUDOKU}.zkey", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_info_refuses_a_zero_vram_budget_as_prove_does():
    p = _info("--vram-budget", "0")
    assert (p.returncode, p.stdout) == (2, ""), (p.stdout, p.stderr)
    assert p.stderr == "error: --vram-budget: 0 bytes holds no key or witness (leave it out for the default, " \
        "16GiB)\n", p.stderr
    p = _info("--vram-budget", "0GiB", "--json")
    assert p.returncode == 2 and json.loads(p.stderr)["message"].startswith("--vram-budget: 0 bytes"), p.stderr


def test_info_names_its_flag_where_the_budget_is_too_small():
    p = _info("--vram-budget", "1MiB", "--json")
    assert p.returncode == 0, p.stderr
    error = json.loads(p.stdout)["footprint"]["error"]
    assert "raise --vram-budget to at least" in error and "raise vram_budget" not in error, error


# ---------------------------------------------------------------- counts on the command line (config_flags)

@pytest.mark.parametrize("flag, value, words", [
    ("--synthesis-workers", "٢", "'٢' is not a whole number"),
    ("--synthesis-workers", "1_0", "'1_0' is not a whole number"),
    ("--synthesis-workers", "9" * 5000, "'" + "9" * 36 + "... has over 4300 digits, more than any count"),
    ("--compute-slots", "٣", "'٣' is neither a number nor auto"),
    ("--compute-slots", "x" * 5000, "'" + "x" * 36 + "... is neither a number nor auto"),
])
def test_engine_count_flags_take_ascii_digits_only(capsys, flag, value, words):
    """`--synthesis-workers ٢` started two workers (argparse's int() reads any script's digits)."""
    from cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["prove", "k.zkey", "w.wtns", "p.json", "pub.json", flag, value])
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.endswith(f"error: argument {flag}: {words}") and len(err) < 200, err


@pytest.mark.parametrize("flag, value, read", [("--synthesis-workers", " 3 ", 3), ("--compute-slots", "4", 4),
                                               ("--compute-slots", " Auto ", "auto")])
def test_engine_count_flags_keep_their_values(flag, value, read):
    from cli import build_parser

    args = build_parser().parse_args(["prove", "k.zkey", "w.wtns", "p.json", "pub.json", flag, value])
    assert getattr(args, flag[2:].replace("-", "_")) == read


def test_info_proofs_takes_ascii_digits_only():
    p = _info("--proofs", "٣")
    assert p.returncode == 2 and p.stderr.splitlines()[-1].endswith("argument --proofs: '٣' is neither a number "
                                                                    "nor auto"), p.stderr
