"""Edges of the key cache (engine/formats/key_cache.py): odd directories and damaged entries are a miss
or a logged warning, never an error out of a key load."""
from __future__ import annotations

import struct

import numpy as np

from conftest import FIXTURES
from engine.formats import key_cache as kc
from engine.formats import read_zkey
from fake_cuda import fake_driver

IDENT = kc.Identity("/x/k.zkey", 10, 20, "ab", "bn128", "gpu-csr-v1")


def test_a_directory_with_a_nul_byte_is_a_cache_that_misses():
    """A config's key_cache_dir may hold "\\0" (TOML, the API; not argv or the environment): os calls raise
    ValueError there, which escaped load (the key load failed) and store, entries and clear."""
    cache = kc.KeyCache("keys\0cache")
    assert cache.load(IDENT) is None
    assert cache.store(IDENT, {"a": np.arange(4, dtype=np.uint32)}) is None
    assert cache.entries() == [] and cache.clear() == (0, 0)


def test_a_key_loads_over_a_cache_directory_with_a_nul_byte():
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415

    with fake_driver() as fake:
        backend = GpuBackend(0, key_cache_dir="keys\0cache")
        backend.ctx.prepare = lambda curve: b"fake cubin"
        try:
            key = backend.load_key(read_zkey(FIXTURES / "tiny" / "bn128" / "tiny.zkey"))
            assert key.cache_hit is False and key.cache_stored(10)
            backend.unload_key(key)
        finally:
            backend.close()
        assert not fake.live_device


def test_a_blank_setting_is_the_default_directory(monkeypatch, tmp_path):
    """"  " named a directory of two spaces under the working directory; "" and unset name the default."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(kc.ENV, "  ")
    assert kc.resolve_dir(None) == kc.default_dir() == tmp_path / "groth16-engine" / "keys"
    assert kc.resolve_dir(" \t") == kc.default_dir()


def test_a_header_nested_past_the_parsers_depth_is_a_miss(tmp_path):
    """json.loads raises RecursionError (not a ValueError) on a deeply nested header: load, entries and
    is_stale raised it instead of treating the entry as unreadable."""
    cache = kc.KeyCache(tmp_path)
    path = cache.store(IDENT, {"a": np.arange(4, dtype=np.uint32)})
    raw = b"[" * 100_000
    with open(path, "wb") as f:
        f.write(struct.pack("<8sII", kc.MAGIC, kc.FORMAT_VERSION, len(raw)) + raw)
    assert cache.load(IDENT) is None
    [info] = cache.entries()
    assert info.identity is None and cache.is_stale(info)
    assert cache.clear(stale_only=True)[0] == 1 and cache.entries() == []


def test_an_entry_naming_a_zkey_path_with_a_nul_byte_is_stale(tmp_path):
    cache = kc.KeyCache(tmp_path)
    cache.store(kc.Identity("/x/k\0.zkey", 10, 20, "ab", "bn128", "gpu-csr-v1"), {"a": np.arange(4, dtype=np.uint32)})
    [info] = cache.entries()
    assert info.identity is not None and cache.is_stale(info)
