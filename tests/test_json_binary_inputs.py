"""A binary file (a .zkey above all) where the API or a command takes a JSON file: named as what it is from its
first bytes, not read whole first (read_vkey of a large key read every byte to say "not UTF-8"; a 1 TiB sparse
one was a MemoryError)."""
from __future__ import annotations

import pytest

from conftest import EXAMPLES
from engine.errors import FormatError
from engine.formats.json import read_proof, read_public, read_vkey
from engine.witness.calculator import WitnessInputError, parse_inputs


def _huge_key(tmp_path):
    path = tmp_path / "big.zkey"
    with open(path, "wb") as f:
        f.write((EXAMPLES / "bn128" / "sudoku.zkey").read_bytes()[:64])
        f.truncate(1 << 40)  # sparse: no disk, but a whole read wants 1 TiB of memory
    return path


@pytest.mark.parametrize("reader", [read_vkey, read_public, read_proof])
def test_a_huge_zkey_given_to_a_json_reader_is_named_without_reading_it(tmp_path, reader):
    path = _huge_key(tmp_path)
    with pytest.raises(FormatError) as err:
        reader(path)
    assert str(err.value) == f"{path}: is a .zkey file, not a JSON text"


def test_a_wtns_given_as_input_json_is_named(tmp_path):
    with pytest.raises(WitnessInputError) as err:
        parse_inputs(EXAMPLES / "bn128" / "sudoku.wtns")
    assert str(err.value).endswith("is a .wtns file, not a JSON text")
