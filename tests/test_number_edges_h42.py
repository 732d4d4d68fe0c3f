"""The last numbers read loosely: `prove --server --deadline`, write_bench_circuit's counts from Python, the hint
for a number read as an option, and an environment number of two signs.

Before: `--deadline ٣` was 3 s and `--deadline 1_0` 10 s (float() reads any script's digits and underscores),
`--deadline 1e400` was no deadline (the float's inf, not the documented word), a 5000-digit one was repeated in full;
`write_bench_circuit(dir, "bn128", 10**400)` was an OverflowError traceback and a seed of -10**70 was repeated in
full; `serve --idle-timeout -1_000` was told to write `--idle-timeout=-1_000`, which no flag takes; and
`GROTH16_CLIENT_SPIN_MS=+-inf` was read as nan ("must be a finite number") where it is no number at all."""
from __future__ import annotations

import math

import pytest

from cli import build_parser
from test_flag_edges_h41 import _usage_error
from engine.client_argv import read_prove_server

HUGE = "9" * 5000
FILES = ["c.zkey", "w.wtns", "p.json", "q.json"]


# ---------------------------------------------------------------- prove --server --deadline

@pytest.mark.parametrize("value, problem", [
    ("٣", "'٣' is not a number of seconds > 0"), ("1_0", "'1_0' is not a number of seconds > 0"),
    ("３", "'３' is not a number of seconds > 0"), ("+-inf", "'+-inf' is not a number of seconds > 0"),
    ("1e400", "'1e400' is more seconds than a float holds (inf: no deadline)"),
    (HUGE, "'999999999999999999999999999999999999... is more seconds than a float holds"),
    ("-inf", "'-inf' is not a number of seconds > 0"), ("1e-400", "'1e-400' is not a number of seconds > 0"),
])
def test_the_deadline_takes_ascii_numbers_and_inf_only(capsys, value, problem):
    argv = ["prove", "--server", "http://h:1", f"--deadline={value}", *FILES]
    assert read_prove_server(argv) is None  # the fast reader leaves it to argparse, which names the problem
    line = _usage_error(capsys, argv)
    assert f"argument --deadline: {problem}" in line, line


@pytest.mark.parametrize("value, seconds", [("2.5", 2.5), (" 3 ", 3.0), ("1e3", 1000.0), (".5", 0.5),
                                            ("inf", math.inf), ("Infinity", math.inf), ("+INF", math.inf)])
def test_the_deadline_still_reads_numbers_and_inf_alike_in_both_readers(value, seconds):
    argv = ["prove", "--server", "http://h:1", "--deadline", value, *FILES]
    assert build_parser(only="prove").parse_args(argv).deadline == seconds
    assert read_prove_server(argv).deadline == seconds


# ---------------------------------------------------------------- write_bench_circuit's counts from Python

@pytest.mark.parametrize("count, kwargs, words", [
    (10**308, {}, "--constraints a number of about 308 digits is more than any circuit holds"),
    (10**400, {}, "--constraints a number of about 400 digits is more than any circuit holds"),
    (10**5000, {}, "--constraints a number of about 5000 digits is more than any circuit holds"),
    (1 << 63, {}, "--constraints 9223372036854775808 is more than any circuit holds"),
    (10, {"n_public": 10**400}, "--public a number of about 400 digits is more than any circuit holds"),
    (10, {"n_public": -10**70}, "--public must not be negative (got a negative number of about 70 digits)"),
    (10, {"seed": -10**70}, "--seed must not be negative (got a negative number of about 70 digits)"),
    (-10**5000, {}, "--constraints must be at least 1 (got a negative number of about 5000 digits)"),
    (10, {"seed": -5}, "--seed must not be negative (got -5)"),
], ids=["1e308", "1e400", "1e5000", "2^63", "public-1e400", "public-negative", "seed-negative", "-1e5000", "seed-5"])
def test_bench_circuit_counts_of_any_size_are_one_short_value_error(tmp_path, count, kwargs, words):
    from engine.groth16.bench_circuit import write_bench_circuit

    with pytest.raises(ValueError) as info:
        write_bench_circuit(tmp_path / "out", "bn128", count, **kwargs)
    message = str(info.value)
    assert message.startswith(words) and len(message) < 200 and "\n" not in message, message
    assert not (tmp_path / "out").exists()  # refused before any work


def test_bench_circuit_plan_is_unchanged_within_the_range():
    from engine.groth16.bench_circuit import plan

    assert plan(3000, 2) == {"outputs": 1, "inputs": 1, "num2bits": 1188, "bitops": 749, "mux": 299, "mul": 763}
    assert plan(1, 0) == {"outputs": 0, "inputs": 0, "num2bits": 0, "bitops": 0, "mux": 0, "mul": 1}


# ---------------------------------------------------------------- the hint for a number read as an option

@pytest.mark.parametrize("value, hinted", [("-1.5e3", True), ("-inf", True), ("-1_000", False), ("-1_0e3", False)])
def test_a_number_read_as_an_option_is_hinted_only_where_a_flag_takes_it(capsys, value, hinted):
    line = _usage_error(capsys, ["serve", "--idle-timeout", value])
    assert (f"write --idle-timeout={value}" in line) == hinted, line


# ---------------------------------------------------------------- an environment number of two signs

@pytest.mark.parametrize("value", ["+-inf", "--inf", "-+nan", "++Infinity"])
def test_an_environment_number_of_two_signs_is_no_number(monkeypatch, value):
    from engine.env_setting import number

    monkeypatch.setenv("GROTH16_X", value)
    with pytest.raises(ValueError) as info:
        number("GROTH16_X", 1.0, ValueError, "off", "milliseconds", "ms")
    assert str(info.value) == f"GROTH16_X={value!r}: expected a number of milliseconds (0 off)"


@pytest.mark.parametrize("value", ["inf", "-INF", "+nan", "Infinity"])
def test_an_environment_inf_or_nan_of_one_sign_is_still_not_finite(monkeypatch, value):
    from engine.env_setting import number

    monkeypatch.setenv("GROTH16_X", value)
    with pytest.raises(ValueError, match=r": must be a finite number, >= 0 ms \(0 off\)$"):
        number("GROTH16_X", 1.0, ValueError, "off", "milliseconds", "ms")
