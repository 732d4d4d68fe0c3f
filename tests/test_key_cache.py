"""The key cache (engine/formats/key_cache.py), the chunked pinned upload (staging.py) and the CSR
build of the key load: identity and staleness rules, the file format, the copy order on a model
stream, and, on a GPU, that a key loaded from the cache is byte for byte the key loaded without it."""
from __future__ import annotations

import ctypes
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.backends.gpu import staging
from engine.backends.gpu.key import CSR_PARTS, cache_layout, csr_from_coeffs
from engine.formats import key_cache as kc
from engine.formats.wtns import read_wtns
from engine.formats.zkey import COEFF_DTYPE, read_zkey

ROOT = Path(__file__).resolve().parent.parent
SUDOKU = ROOT / "examples" / "bn128" / "sudoku.zkey"


@pytest.fixture()
def zkey_file(tmp_path):
    p = tmp_path / "k.zkey"
    shutil.copyfile(SUDOKU, p)
    return p


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    return {"a.row_ptr": np.arange(9, dtype=np.uint32), "a.values": rng.integers(0, 2**63, (5, 4), dtype=np.uint64),
            "empty": np.zeros((0, 4), dtype=np.uint64)}


# ---------------------------------------------------------------- identity and staleness

def test_key_cache_round_trip_maps_the_same_arrays(zkey_file, tmp_path):
    cache = kc.KeyCache(tmp_path / "cache")
    ident = kc.identity_of(read_zkey(zkey_file), cache_layout())
    arrays = _arrays()
    path = cache.store(ident, arrays, meta={"n": 1})
    assert path and os.path.basename(path) == ident.digest() + kc.SUFFIX
    entry = cache.load(ident)
    assert entry is not None and entry.meta == {"n": 1}
    for name, a in arrays.items():
        assert entry.arrays[name].dtype == a.dtype and np.array_equal(entry.arrays[name], a)
        off, n = entry.ranges[name]
        assert off % kc.ALIGN == 0 and n == a.nbytes
        assert os.pread(entry.fd, n, off) == a.tobytes()
    entry.close()


def test_key_cache_changed_zkey_is_a_miss_and_retires_the_old_entry(zkey_file, tmp_path):
    cache = kc.KeyCache(tmp_path / "cache")
    old = kc.identity_of(read_zkey(zkey_file), cache_layout())
    cache.store(old, _arrays(0))
    st = os.stat(zkey_file)
    os.utime(zkey_file, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # same bytes, touched
    new = kc.identity_of(read_zkey(zkey_file), cache_layout())
    assert new != old and new.digest() != old.digest()
    assert cache.load(new) is None
    [info] = cache.entries()
    assert cache.is_stale(info)
    cache.store(new, _arrays(1))
    assert [i.identity for i in cache.entries()] == [new]  # the old contents are gone
    assert not cache.is_stale(cache.entries()[0])


def test_key_cache_new_layout_version_retires_the_old_layouts_entry(zkey_file, tmp_path):
    cache = kc.KeyCache(tmp_path / "cache")
    z = read_zkey(zkey_file)
    cache.store(kc.identity_of(z, "gpu-csr-v1"), _arrays())
    cache.store(kc.identity_of(z, "other-v1"), _arrays())  # another family stays
    cache.store(kc.identity_of(z, "gpu-csr-v2"), _arrays())
    assert sorted(i.identity.layout for i in cache.entries()) == ["gpu-csr-v2", "other-v1"]


def test_key_cache_identity_covers_content_layout_and_size(zkey_file, tmp_path):
    z = read_zkey(zkey_file)
    base = kc.identity_of(z, cache_layout())
    assert kc.identity_of(z, "gpu-csr-v999") .digest() != base.digest()
    # a byte changed inside the header (delta, say) with size and mtime kept: another sha
    raw = bytearray(zkey_file.read_bytes())
    off, _ = z.sections[2]
    raw[off + 200] ^= 1
    st = os.stat(zkey_file)
    zkey_file.write_bytes(bytes(raw))
    os.utime(zkey_file, ns=(st.st_atime_ns, st.st_mtime_ns))
    changed = kc.identity_of(read_zkey(zkey_file), cache_layout())
    assert (changed.size, changed.mtime_ns) == (base.size, base.mtime_ns)
    assert changed.sha != base.sha and changed.digest() != base.digest()


def test_key_cache_in_memory_key_has_no_identity():
    z = read_zkey(SUDOKU)
    z.path = None  # a key built in memory (setup()) has no file to be keyed by
    assert kc.identity_of(z, cache_layout()) is None


@pytest.mark.parametrize("damage", ["truncate", "magic", "version", "identity", "header"])
def test_key_cache_damaged_entry_is_a_miss_not_an_error(zkey_file, tmp_path, damage):
    cache = kc.KeyCache(tmp_path / "cache")
    ident = kc.identity_of(read_zkey(zkey_file), cache_layout())
    path = Path(cache.store(ident, _arrays()))
    raw = bytearray(path.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) - 8]
    elif damage == "magic":
        raw[0] ^= 0xFF
    elif damage == "version":
        raw[8] += 1
    elif damage == "header":
        raw[20] = ord("}")
    else:  # an entry of another key under this key's name
        other = kc.Identity(ident.zkey_path, ident.size + 1, ident.mtime_ns, ident.sha, ident.curve, ident.layout)
        tmp = kc.KeyCache(tmp_path / "other")
        raw = bytearray(Path(tmp.store(other, _arrays())).read_bytes())
    path.write_bytes(bytes(raw))
    assert cache.load(ident) is None
    if damage != "identity":
        assert cache.is_stale(cache.entries()[0])


def test_key_cache_clear_all_and_stale(zkey_file, tmp_path):
    cache = kc.KeyCache(tmp_path / "cache")
    ident = kc.identity_of(read_zkey(zkey_file), cache_layout())
    cache.store(ident, _arrays())
    gone = kc.Identity(str(tmp_path / "gone.zkey"), 1, 1, "00", "bn128", cache_layout())
    cache.store(gone, _arrays())
    (tmp_path / "cache" / ".tmp-half.gkc").write_bytes(b"partial")
    removed, freed = cache.clear(stale_only=True)
    assert removed == 2 and freed > 0  # the entry of a missing zkey and the leftover temporary file
    assert [i.identity for i in cache.entries()] == [ident]
    assert cache.clear()[0] == 1 and cache.entries() == []


def test_key_cache_directory_from_setting_env_and_default(monkeypatch, tmp_path):
    monkeypatch.delenv(kc.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kc.resolve_dir(None) == tmp_path / "xdg" / "groth16-engine" / "keys"
    monkeypatch.setenv(kc.ENV, str(tmp_path / "env"))
    assert kc.resolve_dir(None) == tmp_path / "env"
    assert kc.resolve_dir(str(tmp_path / "flag")) == tmp_path / "flag"  # the flag wins
    assert kc.resolve_dir("off") is None
    monkeypatch.setenv(kc.ENV, "off")
    assert kc.resolve_dir(None) is None


def test_key_cache_config_field_and_flags():
    import argparse

    from engine.config import EngineConfig, add_arguments, from_args

    assert EngineConfig().key_cache_dir is None
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert from_args(p.parse_args(["--key-cache-dir", "/tmp/kc"])).key_cache_dir == "/tmp/kc"
    assert from_args(p.parse_args(["--no-key-cache"])).key_cache_dir == "off"
    assert from_args(p.parse_args([])).key_cache_dir is None


def test_cache_command_lists_and_clears(zkey_file, tmp_path, capsys):
    from cli import main

    d = tmp_path / "cache"
    cache = kc.KeyCache(d)
    cache.store(kc.identity_of(read_zkey(zkey_file), cache_layout()), _arrays())
    assert main(["cache", "list", "--dir", str(d)]) == 0
    out = capsys.readouterr().out
    assert "1 entry" in out and "current" in out and str(zkey_file.resolve()) in out
    assert main(["cache", "clear", "--dir", str(d)]) == 0
    assert "removed 1 file" in capsys.readouterr().out
    assert cache.entries() == []
    assert main(["cache", "list", "--dir", "off"]) != 0
    assert "key cache is off" in capsys.readouterr().err



def test_cache_list_stale_shows_what_clear_stale_removes_and_path_refuses_it(zkey_file, tmp_path, capsys):
    """`cache list --stale` listed every entry and `cache path --stale` ignored the flag, without a word."""
    from cli import main

    d = tmp_path / "cache"
    cache = kc.KeyCache(d)
    cache.store(kc.identity_of(read_zkey(zkey_file), cache_layout()), _arrays())
    cache.store(kc.Identity(str(tmp_path / "gone.zkey"), 1, 1, "00", "bn128", cache_layout()), _arrays())
    assert main(["cache", "list", "--dir", str(d)]) == 0
    assert "2 entries" in capsys.readouterr().out
    assert main(["cache", "list", "--stale", "--dir", str(d)]) == 0
    out = capsys.readouterr().out
    assert "1 entry" in out and "stale" in out and "gone.zkey" in out and str(zkey_file.resolve()) not in out
    assert main(["cache", "path", "--stale", "--dir", str(d)]) == 2
    assert "--stale picks entries to clear or list" in capsys.readouterr().err
    assert main(["cache", "clear", "--stale", "--dir", str(d)]) == 0
    assert "removed 1 file" in capsys.readouterr().out and len(cache.entries()) == 1


@pytest.mark.parametrize("action", ["list", "clear", "path"])
def test_cache_command_on_a_file_is_one_line_error(tmp_path, capsys, action):
    """--dir naming a file answered "0 entries" or "removed 0 file(s)" with exit 0."""
    from cli import main

    f = tmp_path / "not-a-dir"
    f.write_text("x")
    assert main(["cache", action, "--dir", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: {f}: is not a directory (--dir names the key cache's directory)"
    assert f.read_text() == "x"

# ---------------------------------------------------------------- the CSR build against the old one

def _old_csr(coeffs, matrix, domain):
    """The load's CSR build before this change (argsort + searchsorted), the oracle."""
    sel = coeffs["matrix"] == matrix
    rows = coeffs["row"][sel]
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    row_ptr = np.searchsorted(rows, np.arange(domain + 1, dtype=np.int64), side="left").astype(np.uint32)
    return (row_ptr, np.ascontiguousarray(coeffs["wire"][sel][order], dtype=np.uint32),
            np.ascontiguousarray(coeffs["value"][sel][order], dtype=np.uint64))


def _coeffs(rng, n, domain, order):
    c = np.zeros(n, dtype=COEFF_DTYPE)
    c["matrix"] = rng.integers(0, 2, n)
    c["row"] = rng.integers(0, domain, n)
    c["wire"] = rng.integers(0, 1000, n)
    c["value"] = rng.integers(0, 2**63, (n, 4), dtype=np.uint64)
    if order == "blocks":  # snarkjs's layout: all of A by row, then all of B by row
        c = c[np.lexsort((c["row"], c["matrix"]))]
    elif order == "a-only":
        c["matrix"] = 0
        c = c[np.argsort(c["row"], kind="stable")]
    return c


@pytest.mark.parametrize("order", ["blocks", "shuffled", "a-only"])
@pytest.mark.parametrize("n", [0, 1, 7, 5000])
def test_csr_build_matches_the_old_build(order, n):
    rng = np.random.default_rng(n)
    domain = 64
    c = _coeffs(rng, n, domain, order)
    for m in (0, 1):
        new, old = csr_from_coeffs(c, m, domain), _old_csr(c, m, domain)
        for a, b in zip(new, old):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def test_csr_build_of_a_real_key_matches_the_old_build():
    z = read_zkey(SUDOKU)
    for m in (0, 1):
        for a, b in zip(csr_from_coeffs(z.coeffs, m, z.domain_size), _old_csr(z.coeffs, m, z.domain_size)):
            assert np.array_equal(a, b)


# ---------------------------------------------------------------- chunked upload on a model stream

class _Stream:
    """Copies run only when an event behind them is waited for (as late as a real stream may)."""

    def __init__(self, memory):
        self.memory, self.pending, self.copies = memory, [], 0

    def run_until(self, mark):
        while self.pending and self.pending[0][0] < mark:
            _, dst, host = self.pending.pop(0)
            self.memory[dst:dst + host.nbytes] = host.tobytes()  # reads the buffer now, not when queued
            self.copies += 1


class _Event:
    def __init__(self, *a, **k):
        self.stream, self.mark = None, 0

    def record(self, stream):
        _Event.clock = getattr(_Event, "clock", 0) + 1
        self.stream, self.mark = stream, _Event.clock
        return self

    def synchronize(self):
        if self.stream is not None:
            self.stream.run_until(self.mark)

    def destroy(self):
        pass


class _Pinned:
    def __init__(self, n):
        self.nbytes, self.array = n, np.zeros(n, dtype=np.uint8)


class _Pool:
    """The context's pinned pool as staging sees it: `free` pinned buffers, then none (never pins)."""

    def __init__(self, free: int = 0):
        self.free = [_Pinned(1 << 16) for _ in range(free)]
        self.taken, self.back, self.wants = [], [], {}

    def take(self, n, tag=None, *, count_miss=True):
        assert not count_miss  # a key load never raises what proofs want
        b = self.free.pop() if self.free else None
        if b is not None:
            self.taken.append(b)
        return b

    def give_back(self, b):
        self.back.append(b)

    def want(self, tag, nbytes, count):
        self.wants[tag] = (nbytes, count)


class _Ctx:
    def __init__(self, free: int = 0):
        self.pinned = _Pool(free)


def test_staged_upload_moves_every_byte_in_order_and_reuses_buffers_safely(monkeypatch, tmp_path):
    memory = bytearray(1 << 22)
    stream = _Stream(memory)

    class _Device:
        @staticmethod
        def upload(dst, host, s, offset=0):
            _Event.clock = getattr(_Event, "clock", 0) + 1
            s.pending.append((_Event.clock, int(dst) + offset, host))  # the buffer itself, not a copy

    monkeypatch.setattr(staging, "Device", _Device)
    monkeypatch.setattr(staging, "Event", _Event)
    monkeypatch.setattr(staging, "DIRECT_BYTES", 0)
    rng = np.random.default_rng(1)
    file_bytes = rng.integers(0, 256, 300_001, dtype=np.uint8).tobytes()
    f = tmp_path / "data"
    f.write_bytes(b"xx" + file_bytes)
    arr = rng.integers(0, 2**63, (777, 4), dtype=np.uint64)
    done = []
    fd = os.open(f, os.O_RDONLY)
    try:
        jobs = [staging.Job(0, staging.FileRange(fd, 2, len(file_bytes), str(f)), done=lambda: done.append("file")),
                staging.Job(1 << 20, np.zeros((0, 4), dtype=np.uint64), done=lambda: done.append("empty")),
                staging.Job(2 << 20, arr, done=lambda: done.append("array"))]
        ctx = _Ctx(free=2)  # two pinned buffers free, the other three staging buffers pageable
        stats = staging.upload(ctx, stream, jobs, chunk_bytes=4096, readers=3)
    finally:
        os.close(fd)
    assert stream.pending == []  # every copy had completed before the buffers went back
    assert bytes(memory[: len(file_bytes)]) == file_bytes
    assert bytes(memory[2 << 20: (2 << 20) + arr.nbytes]) == arr.tobytes()
    assert done == ["empty", "file", "array"]
    assert stats.nbytes == len(file_bytes) + arr.nbytes and stats.chunks == stream.copies > 10
    assert stats.pinned_buffers == 2 and len(ctx.pinned.taken) == 2
    assert sorted(map(id, ctx.pinned.back)) == sorted(map(id, ctx.pinned.taken))  # pinned ones back, only


@pytest.mark.parametrize("direct", [False, True])
def test_staged_upload_small_jobs_go_directly_and_whole(monkeypatch, tmp_path, direct):
    copies = []
    monkeypatch.setattr(staging, "Device", type("D", (), {"upload": staticmethod(
        lambda dst, host, s, offset=0: copies.append((dst, bytes(np.ascontiguousarray(host).view(np.uint8)))))}))
    monkeypatch.setattr(staging, "Event", _Event)
    monkeypatch.setattr(staging, "DIRECT_BYTES", 1 << 20 if direct else 0)
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 4)
    arr = np.arange(12, dtype=np.uint64).reshape(3, 4)
    done = []
    fd = os.open(f, os.O_RDONLY)
    ctx = _Ctx(free=1)
    try:
        staging.upload(ctx, _Stream(bytearray(1)), [
            staging.Job(100, staging.FileRange(fd, 10, 500, str(f)), done=lambda: done.append(1)),
            staging.Job(7000, arr, done=lambda: done.append(2))])
    finally:
        os.close(fd)
    assert done == [1, 2]
    assert copies == [(100, (bytes(range(256)) * 4)[10:510]), (7000, arr.tobytes())]


def test_staged_upload_short_file_is_an_error_and_gives_buffers_back(monkeypatch, tmp_path):
    monkeypatch.setattr(staging, "DIRECT_BYTES", 0)
    monkeypatch.setattr(staging, "Device", type("D", (), {"upload": staticmethod(lambda *a, **k: None)}))
    monkeypatch.setattr(staging, "Event", _Event)
    f = tmp_path / "short"
    f.write_bytes(b"abc")
    fd = os.open(f, os.O_RDONLY)
    ctx = _Ctx(free=1)
    try:
        with pytest.raises(staging.InputFileError, match="short"):  # one line naming it, not a bare OSError
            staging.upload(ctx, None, [staging.Job(0, staging.FileRange(fd, 0, 10, str(f)))])
    finally:
        os.close(fd)
    assert len(ctx.pinned.back) == len(ctx.pinned.taken) == 1


def test_staging_buffers_are_wanted_only_for_large_loads():
    small, large = _Ctx(), _Ctx()
    staging.want_buffers(small, staging.DIRECT_BYTES)
    staging.want_buffers(large, staging.DIRECT_BYTES + 1)
    assert small.pinned.wants == {}
    assert large.pinned.wants == {staging.TAG: (staging.CHUNK_BYTES, staging.BUFFERS)}


def test_pinned_pool_take_without_counting_a_miss():
    from engine.backends.gpu.runtime import PinnedPool

    pool = PinnedPool(device=None)
    pool.want("k", 1 << 20, 1)
    assert pool.take(1 << 20, tag="k", count_miss=False) is None
    assert pool.misses == 0 and pool._wants["k"] == (1 << 20, 1)  # a key load's miss grows nothing
    assert pool.take(1 << 20, tag="k") is None
    assert pool.misses == 1 and pool._wants["k"] == (1 << 20, 2)


# ---------------------------------------------------------------- on the device

def _cuda() -> int:
    from engine.backends.select import cuda_device_count

    return cuda_device_count()


@pytest.mark.gpu
@pytest.mark.skipif(_cuda() == 0, reason="no CUDA device on this machine")
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_key_from_the_cache_is_the_key_without_it(tmp_path, curve):
    from cuda_kernels.driver import Device
    from engine.backends.gpu import GpuBackend
    from engine.formats.wtns import read_wtns
    from engine.groth16.prover import prove

    src = ROOT / "examples" / curve / "sudoku.zkey"
    path = tmp_path / "k.zkey"
    shutil.copyfile(src, path)
    backend = GpuBackend(key_cache_dir=str(tmp_path / "cache"))
    try:
        stream = backend.ctx.upload_stream

        def image(key):
            key.synchronize()  # the fold tables too
            out = []
            for b in key.buffers:
                host = np.empty(b.nbytes, dtype=np.uint8)
                Device.download(host, b, stream)
                out.append(host)
            stream.synchronize()
            return out

        z = read_zkey(path)
        first = backend.load_key(z)
        assert first.cache_hit is False and first.cache_stored()  # written after the load returned
        assert len(kc.KeyCache(tmp_path / "cache").entries()) == 1
        second = backend.load_key(read_zkey(path))
        assert second.cache_hit is True
        in_memory = read_zkey(path)
        in_memory.path = None  # no file: arrays through staging, no cache
        third = backend.load_key(in_memory)
        assert third.cache_hit is None
        images = [image(k) for k in (first, second, third)]
        for other in images[1:]:
            assert len(other) == len(images[0])
            for a, b in zip(images[0], other):
                assert np.array_equal(a, b)
        w = read_wtns(ROOT / "examples" / curve / "sudoku.wtns")
        proof = prove(z, w.values, backend, second, verify=True)  # verified before it is returned
        assert proof.curve.name == z.curve.name
        for k in (first, second, third):
            k.close()
    finally:
        backend.close()


# ---------------------------------------------------------------- the whole load on a fake driver

class _Recorder:
    """Wraps the fake driver: records every host -> device copy's bytes by destination address."""

    def __init__(self, fake):
        self.fake, self.writes, self.next = fake, [], 1

    def __getattr__(self, name):
        return getattr(self.fake, name)

    def cuMemAllocFromPoolAsync(self, nbytes, pool, stream):
        err, _ = self.fake.cuMemAllocFromPoolAsync(nbytes, pool, stream)
        ptr, self.next = self.next << 40, self.next + 1  # far apart: a copy's address names its buffer
        with self.fake._lock:
            self.fake.live_device[ptr] = self.fake.live_device.pop(_)
        return err, ptr

    def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        self.fake._note("cuMemcpyHtoDAsync")
        self.writes.append((int(dst), ctypes.string_at(src, nbytes)))
        return (0,)


@pytest.fixture
def recorded():
    from cuda_kernels import driver
    from fake_cuda import FakeDriver

    rec = _Recorder(FakeDriver())
    previous = driver.set_bindings(rec)
    try:
        yield rec
    finally:
        driver.set_bindings(previous)


def _image(rec, key, start: int) -> list[tuple[int, int, bytes]]:
    """(buffer index, offset in it, bytes) of every copy since `start` into the key's buffers."""
    out = []
    for dst, data in rec.writes[start:]:
        for i, b in enumerate(key.buffers):
            if b.ptr <= dst < b.ptr + b.nbytes:
                out.append((i, dst - b.ptr, data))
                break
    # staged copies are cut into chunks where direct ones are not: join each buffer's runs
    joined: dict[tuple[int, int], bytes] = {}
    for i, off, data in sorted(out):
        prev = next(((pi, po) for (pi, po), d in joined.items() if pi == i and po + len(d) == off), None)
        if prev is None:
            joined[(i, off)] = data
        else:
            joined[prev] += data
    return sorted((i, off, d) for (i, off), d in joined.items())


def _outside(rec, key, start: int) -> list[bytes]:
    """The bytes copied since `start` into buffers that are not the key's (its scratch: the raw coeffs
    records of a device-built CSR, the NTT tables' constants), joined per buffer in address order."""
    runs: dict[int, list[tuple[int, bytes]]] = {}
    for dst, data in rec.writes[start:]:
        if not any(b.ptr <= dst < b.ptr + b.nbytes for b in key.buffers):
            runs.setdefault(dst >> 40, []).append((dst, data))  # _Recorder: an allocation a 2^40 stride
    return [b"".join(d for _, d in sorted(v)) for v in runs.values()]


@pytest.mark.parametrize("staged", [False, True])
def test_key_load_miss_hit_and_in_memory_upload_the_same_bytes_and_pin_nothing(recorded, tmp_path, monkeypatch,
                                                                                staged):
    from engine.backends.gpu import GpuBackend

    if staged:  # the tiny key through the staging path, two pinned buffers wanted
        monkeypatch.setattr(staging, "DIRECT_BYTES", 0)
        monkeypatch.setattr(staging, "BUFFERS", 2)
    path = tmp_path / "k.zkey"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.zkey", path)
    backend = GpuBackend(0, key_cache_dir=str(tmp_path / "cache"))
    backend.ctx.prepare = lambda curve: b"fake cubin"
    try:
        z = read_zkey(path)
        backend.prepare_key(z)
        if backend.maintenance_due():
            backend.maintain()  # as the CLI does before a large load: nothing runs yet
        pinned = recorded.fake.pinned_allocs
        assert pinned == (2 if staged else 0)
        images, keys, outside = [], [], []
        for source in ("miss", "hit", "memory"):
            zk = read_zkey(path)
            if source == "memory":
                zk.path = None
            start = len(recorded.writes)
            key = backend.load_key(zk)
            keys.append(key)
            assert key.cache_hit is {"miss": False, "hit": True, "memory": None}[source]
            backend.wait_cache_writes()  # the miss's entry is written after its load returns
            if staged:
                assert key.upload_stats.pinned_buffers == 2
            images.append(_image(recorded, key, start))
            outside.append(_outside(recorded, key, start))
        assert recorded.fake.pinned_allocs == pinned  # a load never pins
        csr = 2 * len(CSR_PARTS)  # the key's first buffers: A's and B's row_ptr, wires, values
        points = [[x for x in img if x[0] >= csr] for img in images]
        assert points[0] == points[1] == points[2] and points[0]
        # the hit uploads its entry: the host build's CSR (written after the miss's load)
        host = [p.tobytes() for m in (0, 1) for p in csr_from_coeffs(z.coeffs, m, z.domain_size)]
        hit = {i: d for i, off, d in images[1] if i < csr}
        assert [hit.get(i, b"") for i in range(csr)] == host
        # a miss and an in-memory key send the raw records (snarkjs's order: rows ascending) to a
        # scratch buffer and copy nothing into the CSR's buffers: the device builds it (device_csr.py)
        assert z.coeff_scan.rows_ascending
        for img, other in ((images[0], outside[0]), (images[2], outside[2])):
            assert not [x for x in img if x[0] < csr]
            assert z.coeffs.tobytes() in other
        # C's points land after the nPublic+1 infinity rows, its bytes those of the zkey's section 8
        c_index = keys[0].buffers.index(keys[0].c)
        pad = (z.n_public + 1) * z.curve.g1_bytes
        c_bytes = b"".join(d for i, off, d in images[0] if i == c_index)
        assert [off for i, off, _ in images[0] if i == c_index][0] == pad and c_bytes == z.c.tobytes()
        for key in keys:
            backend.unload_key(key)
        assert backend.ctx.pinned.free_count() == pinned  # the staging buffers are back
    finally:
        backend.close()
    assert not recorded.fake.live_device and not recorded.fake.live_events and not recorded.fake.live_streams


@pytest.mark.parametrize("call, nth", [("cuMemcpyHtoDAsync", 1), ("cuMemcpyHtoDAsync", 3), ("cuMemcpyHtoDAsync", 9),
                                       ("cuMemAllocFromPoolAsync", 5), ("cuLaunchKernel", 4), ("cuEventRecord", 2),
                                       ("cuEventSynchronize", 1), ("cuMemsetD32Async", 1), ("cuStreamCreate", 1),
                                       ("cuStreamWaitEvent", 2)])
def test_key_load_failure_leaves_nothing_on_the_device(tmp_path, monkeypatch, call, nth):
    from cuda_kernels import driver
    from engine.backends.gpu import GpuBackend
    from engine.errors import DeviceError
    from fake_cuda import fake_driver

    monkeypatch.setattr(staging, "DIRECT_BYTES", 0)
    monkeypatch.setattr(staging, "BUFFERS", 2)
    # two readers on any host: the load then reuses a staging buffer, waiting on its event (the first
    # cuEventSynchronize on the load's path); with a reader a core, a 16-core host staged the tiny key's
    # chunks in as many buffers as there are chunks and met that call only in the clean-up, which falls
    # back to the stream when it fails (staging._settle), so that fault raised nothing there
    monkeypatch.setattr(staging, "MAX_READERS", 2)
    with fake_driver() as fake:
        backend = GpuBackend(0, key_cache_dir=str(tmp_path / "cache"))
        backend.ctx.prepare = lambda curve: b"fake cubin"
        try:
            z = read_zkey(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.zkey")
            backend.prepare_key(z)
            backend.maintain()
            backend.ctx.module(z.curve)
            before = dict(fake.live_device)
            with driver.inject_fault(call, nth=nth), pytest.raises(DeviceError):
                backend.load_key(z)
            assert fake.live_device == before  # every buffer of the half-made key freed
            assert backend.ctx.pinned.free_count() == 2  # the staging buffers back in the pool
            key = backend.load_key(z)  # and the next load works
            backend.unload_key(key)
        finally:
            backend.close()
        assert not fake.live_device and not fake.live_events and not fake.live_streams


def test_a_first_load_returns_before_its_cache_entry_is_written_and_close_waits_for_it(tmp_path, monkeypatch):
    """The entry is written on a thread after the upload (not beside it, where it slowed the reads);
    the key is usable meanwhile, a load before the write ends is a miss, and closing the backend
    waits for the write (the CLI leaves with os._exit after it)."""
    import threading

    from engine.backends.gpu import GpuBackend
    from fake_cuda import fake_driver

    path = tmp_path / "k.zkey"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.zkey", path)
    release, writing = threading.Event(), threading.Event()
    real = kc.KeyCache.store

    def slow_store(self, *args, **kwargs):
        writing.set()
        assert release.wait(10)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(kc.KeyCache, "store", slow_store)
    cache = kc.KeyCache(tmp_path / "cache")
    with fake_driver() as fake:
        backend = GpuBackend(0, key_cache_dir=str(tmp_path / "cache"))
        backend.ctx.prepare = lambda curve: b"fake cubin"
        try:
            z = read_zkey(path)
            key = backend.load_key(z)
            assert key.cache_hit is False and writing.wait(10) and not key.cache_stored(timeout=0.01)
            assert cache.entries() == []
            witness = np.asarray(read_wtns(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.wtns").values)
            assert backend.prove_core(key, witness).proof is not None  # usable while the entry is written
            other = backend.load_key(read_zkey(path))
            assert other.cache_hit is False  # no entry yet: a miss (its own write follows)
            closer = threading.Thread(target=backend.close)
            closer.start()
            closer.join(0.2)
            assert closer.is_alive()  # close waits for the writes
            release.set()
            closer.join(10)
            assert not closer.is_alive() and len(cache.entries()) == 1
            assert "key cache write (after the load)" in key.timings
        finally:
            release.set()
            backend.close()
    assert not fake.live_streams


def test_a_failed_load_writes_no_cache_entry(tmp_path, monkeypatch):
    from cuda_kernels import driver
    from engine.backends.gpu import GpuBackend
    from engine.errors import DeviceError
    from fake_cuda import fake_driver

    path = tmp_path / "k.zkey"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.zkey", path)
    with fake_driver():
        backend = GpuBackend(0, key_cache_dir=str(tmp_path / "cache"))
        backend.ctx.prepare = lambda curve: b"fake cubin"
        try:
            z = read_zkey(path)
            backend.ctx.module(z.curve)
            with driver.inject_fault("cuMemcpyHtoDAsync", nth=2), pytest.raises(DeviceError):
                backend.load_key(z)
            backend.wait_cache_writes()
            assert kc.KeyCache(tmp_path / "cache").entries() == []
        finally:
            backend.close()
