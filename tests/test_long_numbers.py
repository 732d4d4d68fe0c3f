"""Numbers longer than Python reads into an int (4300 digits, sys.get_int_max_str_digits) or a float (309
digits) in a user's files and flags: each was a ValueError or OverflowError traceback from the CLI; each is now
a one-line error naming the file or flag, exit 2."""
from __future__ import annotations

import shutil

import pytest
from conftest import EXAMPLES, run_engine

from engine import config as engine_config
from engine.config import ConfigError
from engine.errors import FormatError
from engine.formats.json import read_proof, read_public, read_vkey

LONG = "1" * 5000
KEYS = EXAMPLES / "bn128"


def _one_line_error(r, *words: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr and all(w in lines[0] for w in words), r.stderr


@pytest.mark.parametrize("text,words", [
    (f"[{LONG}]", "holds a number too long to read"),  # a bare JSON integer: json.loads refused it
    (f'["{LONG}"]', "(5000 digits) is not below the bn128 scalar field prime r"),  # a string: int() refused it
], ids=["integer", "string"])
def test_verify_and_info_of_a_public_json_with_a_number_too_long(tmp_path, text, words):
    public = tmp_path / "public.json"
    public.write_text(text)
    _one_line_error(run_engine("verify", KEYS / "verification_key.json", public, KEYS / "proof.json"),
                    str(public), words)
    _one_line_error(run_engine("info", public), str(public))


def test_the_json_readers_refuse_long_numbers_and_read_leading_zeros(tmp_path):
    proof = (KEYS / "proof.json").read_text()
    first = proof.split('"pi_a": [')[1].split('"')[1]  # the first coordinate of pi_a
    for text in (proof.replace(f'"{first}"', LONG, 1), proof.replace(f'"{first}"', f'"{LONG}"', 1)):
        path = tmp_path / "proof.json"
        path.write_text(text)
        with pytest.raises(FormatError, match="too long to read|digits"):
            read_proof(path)
    vkey = (KEYS / "verification_key.json").read_text().replace('"nPublic": ', f'"nPublic": {LONG}, "x": ', 1)
    (tmp_path / "vk.json").write_text(vkey)
    with pytest.raises(FormatError, match="too long to read"):
        read_vkey(tmp_path / "vk.json")
    # leading zeros past the prime's length are still the number (snarkjs's BigInt reads them so)
    (tmp_path / "zeros.json").write_text('["' + "0" * 5000 + '7"]')
    assert read_public(tmp_path / "zeros.json") == [7]
    padded = proof.replace(f'"{first}"', f'"{"0" * 200}{first}"', 1)
    (tmp_path / "padded.json").write_text(padded)
    shutil.copy(KEYS / "public.json", tmp_path / "public.json")
    assert read_proof(tmp_path / "padded.json") == read_proof(KEYS / "proof.json")


def test_a_config_file_or_a_size_too_long_is_one_config_error(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text(f"synthesis_workers = {LONG}\n")
    with pytest.raises(ConfigError, match=f"^{path}: holds a number too long to read"):
        engine_config.load(path)
    for size in (LONG, "9" * 20, "99999999999 TiB"):
        with pytest.raises(ConfigError, match="is larger than any memory") as info:
            engine_config.parse_size(size, "vram_budget")
        assert len(str(info.value)) < 120
    assert engine_config.parse_size("1" + "0" * 18) == 10**18  # below 2^63: a size


@pytest.mark.parametrize("flags", [["--config", "big.toml"], ["--vram-budget", LONG], ["--host-budget", "9" * 400]],
                         ids=["config", "vram-budget", "host-budget"])
def test_prove_with_a_number_too_long_in_its_settings_is_one_line(tmp_path, flags):
    (tmp_path / "big.toml").write_text(f"compute_slots = {LONG}\n")
    flags = [str(tmp_path / f) if f == "big.toml" else f for f in flags]
    r = run_engine("prove", *flags, "--quiet", KEYS / "sudoku.zkey", KEYS / "sudoku.wtns", tmp_path / "proof.json",
                   tmp_path / "public.json")
    _one_line_error(r)
    assert len(r.stderr) < 200 and not (tmp_path / "proof.json").exists()


def test_an_input_json_with_an_integer_too_long_is_the_above_2_53_error(tmp_path):
    """A bare JSON integer of 5000 digits in input.json was int()'s ValueError traceback from `witness` and
    `prove --wasm --input`; it is now what any integer above 2^53 gets: write it as a string."""
    from conftest import FIXTURES

    tiny = FIXTURES / "tiny" / "bn128" / "tiny"
    inputs = tmp_path / "input.json"
    inputs.write_text(f'{{"x": {LONG}, "a": "11", "b": "5"}}')
    for r in (run_engine("witness", f"{tiny}.wasm", inputs, tmp_path / "w.wtns"),
              run_engine("prove", "--quiet", f"{tiny}.zkey", "--wasm", f"{tiny}.wasm", "--input", inputs,
                         tmp_path / "proof.json", tmp_path / "public.json")):
        _one_line_error(r, str(inputs), "is above 2^53", "write it as a string")
        assert len(r.stderr) < 300
