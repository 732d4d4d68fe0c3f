"""The kernel cache's entries (cuda_kernels/build.py) that are no regular file.

The cache may be a shared folder (GROTH16_KERNEL_CACHE): a FIFO of an entry's name (a cubin's, nvrtc.json)
made every process's first key load wait forever in `read_bytes()` (open() waits for a writer), and a
directory of that name was an IsADirectoryError out of the lookup.  Each is a miss now, and the entry written
after the compile takes the FIFO's place.
"""
from __future__ import annotations

import os
import threading
import time

import pytest

from cuda_kernels import build

PARAMS = "// params h39"
GUARD_S = 3.0  # the old reader's wait is ended by a writer opened after this long, so that no run hangs


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """A kernel cache of its own, NVRTC 12.9 without a library file (no memo written), a compile that is free."""
    directory = tmp_path / "kernels"
    directory.mkdir()
    monkeypatch.setenv("GROTH16_KERNEL_CACHE", str(directory))
    monkeypatch.setattr(build, "_swept", set())
    monkeypatch.setattr(build, "nvrtc_version", lambda: (12, 9))
    monkeypatch.setattr(build, "_nvrtc_library_path", lambda: None)
    monkeypatch.setattr(build, "_nvrtc_compile", lambda *args: (b"\x7fELF compiled", ""))
    return directory


def _entry(directory):
    return directory / f"{build.cache_key(PARAMS, 'sm_90', build.DEFAULT_OPTIONS, (12, 9))}.cubin"


def _fifo_with_guard(path):
    """A FIFO at `path`, and a thread that opens it for writing after GUARD_S (ending a reader's wait with EOF)."""
    os.mkfifo(path)

    def unblock():
        time.sleep(GUARD_S)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # (ENXIO: no reader waits, as it should be)
        except OSError:
            return
        os.close(fd)

    threading.Thread(target=unblock, daemon=True).start()


def test_a_fifo_named_as_a_cubin_is_a_miss_not_a_wait(kernels):
    _fifo_with_guard(_entry(kernels))
    start = time.monotonic()
    assert build.cached_cubin(PARAMS) is None
    assert time.monotonic() - start < GUARD_S / 2


def test_a_fifo_named_as_the_nvrtc_memo_is_no_memo(kernels):
    _fifo_with_guard(kernels / build.NVRTC_MEMO)
    start = time.monotonic()
    assert build.remembered_nvrtc_version() is None
    assert time.monotonic() - start < GUARD_S / 2


def test_the_compile_writes_its_entry_over_the_fifo(kernels):
    _fifo_with_guard(_entry(kernels))
    start = time.monotonic()
    assert build.compile_cubin(PARAMS) == (b"\x7fELF compiled", "")
    assert time.monotonic() - start < GUARD_S / 2
    assert _entry(kernels).is_file() and build.cached_cubin(PARAMS) == b"\x7fELF compiled"


def test_a_directory_named_as_a_cubin_is_a_miss(kernels):
    _entry(kernels).mkdir()
    assert build.cached_cubin(PARAMS) is None
    assert build.compile_cubin(PARAMS) == (b"\x7fELF compiled", "")  # (its write fails: the cache is best effort)
    assert _entry(kernels).is_dir()


def test_a_regular_entry_is_read_as_before(kernels):
    _entry(kernels).write_bytes(b"\x7fELF cached")
    assert build.cached_cubin(PARAMS) == b"\x7fELF cached"
    assert build.compile_cubin(PARAMS) == (b"\x7fELF cached", "")
