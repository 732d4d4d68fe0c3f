"""The CSR of A and B built on the device (cuda_kernels/csr.cuh, engine/backends/gpu/device_csr.py)
equals the host build (key.csr_from_coeffs) byte for byte, and read_zkey's one pass over the coeffs
(engine/formats/coeffs_scan.py) finds what the separate passes found: counts, order, the first bad entry.

The scan's tests run anywhere; the device's are marked `gpu` (seeded random coeffs in snarkjs's
interleaved order, in our setup's blocks, with empty rows at either end and inside, one cell's entry
repeated, keys of one row, no entries, one matrix only, and enough records for the tile scan's
threads to take several tiles each; both curves), and one load of a key in another order takes the
host build (on a fake driver, so it runs here too).
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.backends.gpu import device_csr
from engine.backends.gpu.key import CSR_PARTS, csr_from_coeffs
from engine.backends.select import cuda_device_count
from engine.errors import FormatError
from engine.formats import coeffs_scan as cs
from engine.formats import rows as frows
from engine.formats.coeffs_scan import CoeffError, scan_coeffs, scan_of
from engine.formats.zkey import COEFF_DTYPE, read_zkey, write_zkey

ROOT = Path(__file__).resolve().parent.parent
R = (1 << 254) - 127  # any modulus above the values below


def make_coeffs(rng, n_rows: int, order: str, *, per_row=(0, 1, 1, 2, 3), n_vars: int = 50, lead: int = 0,
                trail: int = 0) -> np.ndarray:
    """Random entries for rows lead..n_rows-trail-1 of a domain of n_rows, 0-3 a row and matrix (so
    rows without entries occur inside), in snarkjs's order ("interleaved": row by row, A's terms then
    B's), our setup's ("blocked": A's block, then B's), B's block first ("b_first"), or shuffled."""
    ents = []
    for row in range(lead, n_rows - trail):
        for m in (0, 1):
            for _ in range(int(rng.choice(per_row))):
                ents.append((m, row))
    co = np.zeros(len(ents), dtype=COEFF_DTYPE)
    if ents:
        co["matrix"], co["row"] = np.array(ents, dtype=np.uint32).T
    co["wire"] = rng.integers(0, n_vars, len(ents), dtype=np.uint32)
    co["value"] = rng.integers(0, 1 << 62, (len(ents), 4), dtype=np.uint64)
    co["value"][:, 3] &= np.uint64((1 << 60) - 1)  # below both curves' r
    if len(ents) > 3:  # one cell's entry repeated: it stays two terms
        co[len(ents) // 2 + 1] = co[len(ents) // 2]
        co["value"][len(ents) // 2 + 1] ^= np.uint64(1)
    if order == "blocked":
        co = co[np.argsort(co["matrix"], kind="stable")]
    elif order == "b_first":
        co = co[np.argsort(1 - co["matrix"].astype(np.int64), kind="stable")]
    elif order == "shuffled":
        co = co[rng.permutation(len(ents))]
    return np.ascontiguousarray(co)


def expected(co: np.ndarray) -> tuple[int, bool]:
    """A's count, and whether rows or (matrix, row) never decrease (what the scan looks for)."""
    n_a = int(np.count_nonzero(co["matrix"] == 0))
    rows = co["row"].astype(np.int64)
    keys = co["matrix"].astype(np.int64) * (1 << 32) + rows
    return n_a, bool(np.all(np.diff(rows) >= 0) or np.all(np.diff(keys) >= 0))


def per_matrix_ascending(co: np.ndarray) -> bool:
    """What the device build needs: each matrix's rows ascend in file order."""
    return all(bool(np.all(np.diff(co["row"][co["matrix"] == m].astype(np.int64)) >= 0)) for m in (0, 1))


@pytest.fixture
def small_pieces(monkeypatch):
    """Pieces of 5 entries and parts of a few hundred bytes: boundaries everywhere, on threads."""
    monkeypatch.setattr(cs, "PIECE", 5)
    monkeypatch.setattr(frows, "PART_BYTES", 256)
    monkeypatch.setattr(frows, "_threads", lambda: 3)


# ---------------------------------------------------------------- the scan (no device)

@pytest.mark.parametrize("order", ["interleaved", "blocked", "b_first", "shuffled"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scan_counts_and_order_match_numpy(small_pieces, order, seed):
    rng = np.random.default_rng(seed)
    co = make_coeffs(rng, 40, order, lead=seed, trail=2 * seed)
    scan = scan_coeffs(co, R, 40, 50)
    n_a, asc = expected(co)
    assert (scan.n_a, scan.n_b, scan.rows_ascending) == (n_a, co.shape[0] - n_a, asc)
    assert asc == (order in ("interleaved", "blocked"))
    assert per_matrix_ascending(co) == (order != "shuffled")  # B's block first: ascending, yet the host's


@pytest.mark.parametrize("at", [4, 5, 6, 9, 10, 11, 150])  # around the pieces' (5) and parts' edges
def test_scan_sees_one_row_going_back_anywhere(small_pieces, at):
    co = make_coeffs(np.random.default_rng(7), 200, "blocked", per_row=(1,))
    m = co["matrix"][at]
    same = np.flatnonzero(co["matrix"] == m)
    k = int(np.searchsorted(same, at))
    assert k > 0
    prev = same[k - 1]
    co["row"][prev] = max(int(co["row"][prev]), 1)
    co["row"][at] = co["row"][prev] - 1
    assert not expected(co)[1] and not per_matrix_ascending(co)
    assert not scan_coeffs(co, R, 200, 50).rows_ascending


def test_scan_of_nothing_and_of_one_entry():
    s = scan_coeffs(np.zeros(0, dtype=COEFF_DTYPE), R, 1, 1)
    assert (s.n_a, s.n_b, s.rows_ascending) == (0, 0, True)
    one = np.zeros(1, dtype=COEFF_DTYPE)
    one["matrix"] = 1
    s = scan_coeffs(one, R, 1, 1)
    assert (s.n_a, s.n_b, s.rows_ascending) == (0, 1, True)


@pytest.mark.parametrize("bad", [
    # (entry, field, value, which check reports, at which entry)
    ([(90, "row", 40)], "row", 90),
    ([(90, "row", 40), (17, "row", 41)], "row", 17),  # the first bad one, from an earlier part
    ([(12, "row", 40), (150, "matrix", 2)], "matrix", 150),  # checks in order: matrix before row
    ([(150, "wire", 50), (160, "row", 40)], "row", 160),  # row before wire
    ([(33, "value", None), (20, "wire", 99)], "wire", 20),  # wire before value
    ([(133, "value", None), (33, "value", None)], "value", 33),
])
def test_scan_names_the_first_bad_entry_of_the_first_failing_check(small_pieces, bad):
    entries, what, first = bad
    co = make_coeffs(np.random.default_rng(3), 40, "interleaved", per_row=(2, 3))
    assert co.shape[0] > 160
    for i, field, value in entries:
        if field == "value":
            co["value"][i] = [(R >> (64 * k)) & ((1 << 64) - 1) for k in range(4)]  # = r: not reduced
        else:
            co[field][i] = value
    with pytest.raises(CoeffError) as e:
        scan_coeffs(co, R, 40, 50)
    assert (e.value.what, e.value.entry) == (what, first)


def test_read_zkey_reports_a_bad_entry_far_into_a_big_section(tmp_path, small_pieces):
    """read_zkey's messages are those of the separate checks (tests/test_formats.py holds them for
    the tiny key); here the bad entry lies in a later part of a section scanned on threads."""
    z = read_zkey(ROOT / "examples" / "bn128" / "sudoku.zkey")
    assert z.coeff_scan.rows_ascending and z.coeff_scan.n_a + z.coeff_scan.n_b == z.n_coef
    co = np.array(z.coeffs)
    co["wire"][250] = z.n_vars
    z.coeffs = co
    path = tmp_path / "bad.zkey"
    write_zkey(path, z)
    with pytest.raises(FormatError, match=f"entry 250 has wire {z.n_vars}, which is not below nVars"):
        read_zkey(path)


def test_scan_of_a_key_whose_coeffs_were_replaced_is_made_again():
    z = read_zkey(ROOT / "examples" / "bn128" / "sudoku.zkey")
    first = scan_of(z)
    assert first is z.coeff_scan and first.rows_ascending
    z.coeffs = np.ascontiguousarray(z.coeffs[::-1])
    again = scan_of(z)
    assert again is not first and not again.rows_ascending and again.n_a == first.n_a


# ---------------------------------------------------------------- on the device

gpu = pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")


@pytest.fixture(scope="module")
def backend():
    from engine.backends.gpu import GpuBackend

    b = GpuBackend()
    yield b
    b.close()


def device_build(backend, curve_name: str, co: np.ndarray, domain: int) -> list[np.ndarray]:
    """device_csr's kernels over `co` (uploaded as raw records): the six arrays, downloaded."""
    from cuda_kernels.driver import Device
    from engine.algebra.curves import curve_by_name

    ctx = backend.ctx
    ctx.bind_thread()
    stream, dev = ctx.upload_stream, ctx.device
    module = ctx.module(curve_by_name(curve_name))
    scan = scan_coeffs(co, curve_by_name(curve_name).r, domain, 1 << 30)
    assert per_matrix_ascending(co)
    scan = dataclasses.replace(scan, rows_ascending=True)  # B's block first: the kernels need no more
    raw = dev.alloc(co.nbytes, stream)
    if co.nbytes:
        Device.upload(raw, co.view(np.uint8), stream)
    scratch = dev.alloc(device_csr.scratch_bytes(scan), stream)
    sizes = device_csr.part_sizes(scan, domain)
    bufs = [[dev.alloc(n, stream) for n in part] for part in sizes]
    for part in bufs:  # garbage first: every byte must be written
        for b in part:
            Device.memset32(b, 0xDEADBEEF, b.nbytes // 4, stream)
    device_csr.enqueue(module, stream, raw.ptr, scratch.ptr, scan, domain, bufs)
    out = []
    for part, part_sizes in zip(bufs, sizes):
        for b, n in zip(part, part_sizes):
            host = np.empty(n, dtype=np.uint8)
            if n:
                Device.download(host, b, stream)
            out.append(host)
    stream.synchronize()
    for b in [raw, scratch] + [b for part in bufs for b in part]:
        Device.free(b, stream)
    return out


CASES = [  # (order, rows of the domain, entries a row and matrix, empty rows leading, trailing)
    ("interleaved", 64, (0, 1, 1, 2, 3), 0, 0),
    ("interleaved", 256, (0, 0, 0, 1, 4), 7, 100),
    ("blocked", 128, (0, 1, 2), 3, 0),
    ("b_first", 32, (1, 2), 0, 5),
    ("interleaved", 1, (3,), 0, 0),  # a domain of one row
    ("interleaved", 1, (0,), 0, 0),  # no entries at all
    ("interleaved", 1 << 16, (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 11, 1000),  # > 2 tiles a scan thread
]


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_device_csr_equals_the_host_build(backend, curve, case):
    order, domain, per_row, lead, trail = CASES[case]
    rng = np.random.default_rng(1000 + case)
    co = make_coeffs(rng, domain, order, per_row=per_row, lead=min(lead, domain), trail=trail)
    if case == 6:
        assert co.shape[0] > 1024 * device_csr.TILE * 2
    want = [p.view(np.uint8).reshape(-1) for m in (0, 1) for p in csr_from_coeffs(co, m, domain)]
    got = device_build(backend, curve, co, domain)
    for name, g, w in zip([f"{t}.{p}" for t in "ab" for p in CSR_PARTS], got, want):
        assert g.nbytes == w.nbytes and np.array_equal(g, w), (order, name)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("one_matrix", [0, 1])
def test_device_csr_of_one_matrix_only(backend, one_matrix):
    co = make_coeffs(np.random.default_rng(5), 500, "interleaved")
    co = np.ascontiguousarray(co[co["matrix"] == one_matrix])
    want = [p.view(np.uint8).reshape(-1) for m in (0, 1) for p in csr_from_coeffs(co, m, 500)]
    for g, w in zip(device_build(backend, "bn128", co, 500), want):
        assert np.array_equal(g, w)


def _key_csr(backend, key) -> list[np.ndarray]:
    from cuda_kernels.driver import Device

    stream = backend.ctx.upload_stream
    key.synchronize()
    out = []
    for part in key.csr:
        for b in part:
            host = np.empty(b.nbytes, dtype=np.uint8)
            Device.download(host, b, stream)
            out.append(host)
    stream.synchronize()
    return out


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_first_load_builds_the_csr_on_the_device_and_an_other_order_on_the_host(backend, tmp_path, curve):
    """A snarkjs key from its file (records read from the file's range), the same in memory (from
    the mapped array), and its coeffs shuffled (rows not ascending: the host build) all load the
    CSR the host build makes; the first two took the device's path."""
    src = ROOT / "examples" / curve / "sudoku.zkey"
    path = tmp_path / "k.zkey"
    shutil.copyfile(src, path)
    z = read_zkey(path)
    assert device_csr.usable(z.coeff_scan)
    host = [p.view(np.uint8).reshape(-1)[:] for m in (0, 1) for p in csr_from_coeffs(z.coeffs, m, z.domain_size)]
    in_memory = read_zkey(path)
    in_memory.path = None
    shuffled = read_zkey(path)
    shuffled.path = None
    perm = np.random.default_rng(9).permutation(z.n_coef)
    shuffled.coeffs = np.ascontiguousarray(z.coeffs[perm])
    assert not scan_of(shuffled).rows_ascending
    host_shuffled = [p.view(np.uint8).reshape(-1) for m in (0, 1)
                     for p in csr_from_coeffs(shuffled.coeffs, m, z.domain_size)]
    for zk, want in ((z, host), (in_memory, host), (shuffled, host_shuffled)):
        key = backend.load_key(zk)
        try:
            got = _key_csr(backend, key)
            assert all(np.array_equal(g[:w.nbytes], w) for g, w in zip(got, want))
            assert all(g.nbytes == max(w.nbytes, 16) for g, w in zip(got, want))
        finally:
            backend.unload_key(key)


# ---------------------------------------------------------------- the load's choice, on a fake driver

def test_a_key_in_another_order_uploads_the_host_build(tmp_path, monkeypatch):
    """Rows not ascending within a matrix: the load uploads csr_from_coeffs's arrays into the CSR's
    buffers (no raw records, no CSR kernels); in snarkjs's order it uploads the records instead."""
    from cuda_kernels import driver
    from engine.backends.gpu import GpuBackend
    from fake_cuda import FakeDriver

    z = read_zkey(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.zkey")
    fake = FakeDriver()
    writes: list[tuple[int, bytes]] = []
    launches: list[str] = []
    real_launch = driver.launch

    class Rec:
        def __getattr__(self, name):
            return getattr(fake, name)

        def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):
            import ctypes
            writes.append((int(dst), ctypes.string_at(src, nbytes)))
            return (0,)

    def spy(module, name, *args, **kwargs):
        launches.append(name)
        return real_launch(module, name, *args, **kwargs)

    monkeypatch.setattr(device_csr, "launch", spy)
    previous = driver.set_bindings(Rec())
    try:
        backend = GpuBackend(0, key_cache_dir=False)
        backend.ctx.prepare = lambda curve: b"fake cubin"
        try:
            for order in ("snarkjs", "shuffled"):
                zk = read_zkey(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.zkey")
                zk.path = None
                if order == "shuffled":
                    zk.coeffs = np.ascontiguousarray(z.coeffs[::-1])
                del writes[:], launches[:]
                key = backend.load_key(zk)
                csr_ptrs = [b.ptr for part in key.csr for b in part]
                into_csr = [d for dst, d in writes if dst in csr_ptrs]
                if order == "snarkjs":
                    assert "csr_split" in launches and not into_csr
                    assert any(d == zk.coeffs.tobytes() for _, d in writes)
                else:
                    host = [p.tobytes() for m in (0, 1) for p in csr_from_coeffs(zk.coeffs, m, zk.domain_size)]
                    assert not launches and into_csr == [h for h in host if h]
                backend.unload_key(key)
        finally:
            backend.close()
    finally:
        driver.set_bindings(previous)
    assert not fake.live_device


def _load_sudoku(bindings, times: int) -> None:
    """Load (and unload) the sudoku key `times` times on a GPU backend over `bindings` (a recording
    wrapper of the fake driver); each load has fold tables to build."""
    from cuda_kernels import driver
    from engine.backends.gpu import GpuBackend

    previous = driver.set_bindings(bindings)
    try:
        backend = GpuBackend(0, key_cache_dir=False)
        backend.ctx.prepare = lambda curve: b"fake cubin"
        try:
            z = read_zkey(ROOT / "examples" / "bn128" / "sudoku.zkey")
            for _ in range(times):
                key = backend.load_key(z)
                assert key.footprint.early_w is not None  # it has fold tables to build
                backend.unload_key(key)
        finally:
            backend.close()
    finally:
        driver.set_bindings(previous)


def test_a_load_loads_its_kernels_before_it_queues_the_tables(monkeypatch):
    """Under lazy module loading a kernel's first launch loads its code and can wait for the work
    queued before it: a process's first load launched msm_precompute_g2 behind the G1 tables'
    kernels and its upload stalled (0.945 s against 0.088 s with the kernels preloaded, 2^22 on the
    H200).  The load now loads the tables' and the CSR's kernels (cuFuncLoad) before it launches any."""
    from fake_cuda import FakeDriver

    fake = FakeDriver()
    names: dict[int, str] = {}
    events: list[tuple[str, str]] = []

    class Rec:
        def __getattr__(self, name):
            return getattr(fake, name)

        def cuModuleGetFunction(self, mod, name):
            err, fn = fake.cuModuleGetFunction(mod, name)
            names[int(fn)] = name.decode()
            return err, fn

        def cuFuncLoad(self, fn):
            events.append(("load", names[int(fn)]))
            return (0,)

        def cuLaunchKernel(self, fn, *args):
            events.append(("launch", names[int(fn)]))
            return fake.cuLaunchKernel(fn, *args)

    _load_sudoku(Rec(), times=1)
    launches = [i for i, (what, name) in enumerate(events) if what == "launch" and name.startswith("msm_precompute")]
    loads = {name: i for i, (what, name) in enumerate(events) if what == "load"}
    assert launches, "the key built no tables"
    tables = {events[i][1] for i in launches}  # the curve's table builds (msm_builds.precompute_kernel)
    assert {name[:len("msm_precompute_g1")] for name in tables} == {"msm_precompute_g1", "msm_precompute_g2"}
    for name in (*sorted(tables), *device_csr.KERNELS):
        assert name in loads and loads[name] < launches[0], name
    first_csr = min(i for i, (what, name) in enumerate(events) if what == "launch" and name.startswith("csr_"))
    assert all(loads[k] < first_csr for k in device_csr.KERNELS)


def test_a_load_with_tables_to_build_loads_every_kernel_before_the_tables():
    """A key whose fold tables build behind it also loads every other kernel of its module before
    it queues them (cuModuleEnumerateFunctions, cuFuncLoad each): a proof started beside the tables
    then finds its kernels loaded instead of loading each behind them; once per module."""
    from fake_cuda import FakeDriver

    fake = FakeDriver()
    listed = [fake._new() for _ in range(5)]
    events: list[tuple[str, int]] = []

    class Rec:
        def __getattr__(self, name):
            return getattr(fake, name)

        def cuModuleGetFunctionCount(self, mod):
            return 0, len(listed)

        def cuModuleEnumerateFunctions(self, count, mod):
            assert count == len(listed)
            return 0, list(listed)

        def cuFuncLoad(self, fn):
            events.append(("load", int(fn)))
            return (0,)

        def cuLaunchKernel(self, fn, *args):
            events.append(("launch", int(fn)))
            return fake.cuLaunchKernel(fn, *args)

    _load_sudoku(Rec(), times=2)
    first_launch = next(i for i, (what, _) in enumerate(events) if what == "launch")
    loads = [(i, fn) for i, (what, fn) in enumerate(events) if what == "load" and fn in {int(f) for f in listed}]
    assert sorted(fn for _, fn in loads) == sorted(int(f) for f in listed)  # each once, over both loads
    assert all(i < first_launch for i, _ in loads)



def test_a_footprint_without_room_for_the_build_loads_the_host_build(monkeypatch):
    """A key whose footprint left no room for the device build (csr_build_bytes 0) uploads the host
    build's arrays and launches no CSR kernel, in snarkjs's order too."""
    import dataclasses

    from engine.backends.gpu import GpuBackend
    from fake_cuda import fake_driver

    launches: list[str] = []
    real_launch = device_csr.launch
    monkeypatch.setattr(device_csr, "launch", lambda module, name, *a, **k: launches.append(name) or
                        real_launch(module, name, *a, **k))
    with fake_driver():
        backend = GpuBackend(0, key_cache_dir=False)
        backend.ctx.prepare = lambda curve: b"fake cubin"
        try:
            z = read_zkey(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.zkey")
            fp = backend.plan_key(z)
            assert fp.csr_build_bytes > 0
            key = backend.load_key(z, dataclasses.replace(fp, csr_build_bytes=0))
            assert not launches
            backend.unload_key(key)
            key = backend.load_key(z, fp)
            assert "csr_split" in launches
            backend.unload_key(key)
        finally:
            backend.close()


def test_the_engine_reserves_the_build_for_the_load_and_keeps_the_keys_bytes():
    """Through the Engine (fake driver): the load's reservation is the key's bytes plus the build's;
    the key then holds its own bytes only."""
    import anyio

    from engine.api import Engine
    from engine.backends.gpu import GpuBackend
    from engine.config import EngineConfig
    from fake_cuda import fake_driver

    asked = []

    async def main():
        backend = GpuBackend(0, key_cache_dir=False)
        backend.ctx.prepare = lambda curve: b"fake cubin"
        async with Engine(EngineConfig(), backends=[backend]) as eng:
            real = eng.vram.reserve

            async def reserve(nbytes, *args, **kwargs):
                asked.append(nbytes)
                return await real(nbytes, *args, **kwargs)

            eng.vram.reserve = reserve
            key = await eng.load_key(ROOT / "tests" / "fixtures" / "tiny" / "bn128" / "tiny.zkey")
            fp = key.footprint
            # the load's reservation first; after it the key's pinned buffers are made in maintenance, which
            # reserves the whole device (pinning is device-global)
            assert fp.csr_build_bytes > 0 and asked[0] == fp.device_bytes + fp.csr_build_bytes
            assert all(n == eng.vram.capacity(0) for n in asked[1:])
            assert key.key_device_bytes == fp.device_bytes

    with fake_driver():
        anyio.run(main)
