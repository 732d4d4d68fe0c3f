"""scripts/carry_kernels.py: the cache key and source digest read back from the KEY snippet's output."""
from __future__ import annotations

import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import carry_kernels  # noqa: E402

KEY, DIGEST = "58f57526716262b93a88a9cf404da254", "c4ee4b628dc3b9647c899d88a09b2d82"


@pytest.mark.parametrize("stdout", [
    f"{KEY} {DIGEST}\n",
    f"compile log\nwarning: something\x00{KEY} {DIGEST}\n",
    f"{KEY}\x00{DIGEST}",  # the map.json entry of the closing call of 2026-12-01 (one string, NUL inside)
])
def test_the_key_and_digest_whatever_precedes_or_joins_them(stdout):
    assert carry_kernels.parse_keys(stdout) == [KEY, DIGEST]


def test_no_key_is_an_error_naming_the_output():
    with pytest.raises(RuntimeError, match="no cache key"):
        carry_kernels.parse_keys("Traceback: something failed\n")
