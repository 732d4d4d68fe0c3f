"""engine/formats/rows.py: large row arrays checked and copied in parts on threads, the same as in one pass."""
from __future__ import annotations

import os

import numpy as np
import pytest

from engine.algebra.curves import BN254
from engine.formats import rows
from engine.formats.binfile import first_row_ge, rows_ge_mask

R = BN254.r


def _reduced(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).integers(0, 1 << 63, size=(n, 4), dtype=np.uint64)
    v[:, 3] >>= 4  # below r's top limb (0x30644e72...)
    return v


def _limbs(x: int) -> list[int]:
    return [(x >> (64 * i)) & (2**64 - 1) for i in range(4)]


@pytest.mark.parametrize("where", [[], [0], [1], [131071], [131072], [-1], [5000, 400000], [-2, -1]])
def test_first_row_ge_in_parts_finds_the_first_bad_row(where, monkeypatch):
    monkeypatch.setattr(rows, "PART_BYTES", 1 << 20)  # parts of 32768 rows: several even on 2 cores
    monkeypatch.setattr(rows, "_threads", lambda: 4)
    v = _reduced(600_001, 3)  # not a multiple of the part size
    for i, value in zip(where, [R, R + 5, 2**256 - 1, R]):
        v[i] = _limbs(value)
    expect = int(np.flatnonzero(rows_ge_mask(v, R))[0]) if where else -1
    assert first_row_ge(v, R) == expect
    if where:
        assert expect == min(i % len(v) for i in where)


def test_a_value_just_below_r_passes_and_r_fails_in_every_part(monkeypatch):
    monkeypatch.setattr(rows, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(rows, "_threads", lambda: 3)
    v = _reduced(10_000, 4)
    v[7777] = _limbs(R - 1)
    assert first_row_ge(v, R) == -1
    v[9999] = _limbs(R)
    assert first_row_ge(v, R) == 9999


def test_copy_rows_in_parts_is_a_copy(monkeypatch):
    monkeypatch.setattr(rows, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(rows, "_threads", lambda: 4)
    src = _reduced(100_003, 5)
    dst = np.zeros_like(src)
    rows.copy_rows(dst, src)
    assert np.array_equal(dst, src)
    flat = np.zeros(src.size + 12, dtype=np.uint64)  # a pinned buffer's words: a view, then more after it
    rows.copy_rows(flat[:src.size].reshape(src.shape), src)
    assert np.array_equal(flat[:src.size].reshape(src.shape), src) and not flat[src.size:].any()
    with pytest.raises(ValueError):
        rows.copy_rows(dst[:5], src)


def test_small_arrays_stay_on_the_calling_thread(monkeypatch):
    import threading

    seen = []
    rows.over_rows(100, 32, lambda lo, hi: seen.append((lo, hi, threading.current_thread())))
    assert seen == [(0, 100, threading.current_thread())]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_gets_a_pool_of_its_own(monkeypatch):
    monkeypatch.setattr(rows, "PART_BYTES", 1 << 16)
    monkeypatch.setattr(rows, "_threads", lambda: 2)
    src = _reduced(50_000, 6)
    rows.copy_rows(np.empty_like(src), src)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: its copy of the pool has no threads; a new one is made
        import signal

        signal.alarm(30)  # a hang (work handed to threads that do not exist) ends the child, not CI
        dst = np.empty_like(src)
        rows.copy_rows(dst, src)
        os._exit(0 if np.array_equal(dst, src) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status  # not killed by the alarm
