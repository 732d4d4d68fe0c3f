"""scripts/carry_kernels.py: the cache key and source digest read back from the KEY snippet's output."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO

# loaded from its file: the scripts folder stays off sys.path for the rest of the session
_spec = importlib.util.spec_from_file_location("carry_kernels", REPO / "scripts" / "carry_kernels.py")
carry_kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(carry_kernels)

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
