"""Key load onto the GPU: first load (cache miss), load from the key cache, the load before the cache.

    python perf/keyload.py --log-constraints 22,24 [--curve bn128] [--workdir DIR] [--repeats 3]
                           [--zkey FILE] [--legacy 22] [--cold 22] [--tables-rerun 22] [--proofs 3]
                           [--json FILE]

For each size a zkey with the shapes of `bench-circuit` + `setup` at 2^k
constraints (nVars = 2^k + 2^k/100 + 3, domain 2^(k+1), 3 coeffs a constraint:
two in A, one in B, rows ascending as snarkjs writes them) but random point
limbs: a load moves and transforms bytes whatever they are, and a real 2^24
setup takes minutes (--zkey times a real key instead).  Reported, each the
median of --repeats after the first: the time to read the file (sequential
4 MiB reads, one thread: the reference of "first load <= 2x the read"), the
first load (read_zkey + load_key + `ready`: the key usable, its fold tables
still building behind it), the load from the cache, the load with the cache
off, each also until its fold tables are done ("... tables done s"); with
--tables-rerun the device's own part (the window tables' kernels re-run alone,
by CUDA events); with --proofs N the latency of a proof (stage + compute + wait,
a random witness: the synthetic key's proofs do not verify, the work is the
same) started right after load_key returns (it runs the fold-1 plans beside
the tables) and the median of N after the tables are done (the full fold);
and with --legacy the load as it was before the cache
(fd596b2: CSR by argsort, pageable copies from the mapping, tables on the
upload stream).  --cold evicts the zkey and the cache entry from the page
cache (posix_fadvise DONTNEED on those files only) before a first and a cached
load, so the disk's own speed shows.  Also: the device CSR's kernels alone ("device csr
ms", CUDA events); with --miss-again a second cache miss in the same process
(pool and pinned buffers already there); with --pool-probe touch|wait the memory
pool grown by the key's footprint before the first load, all of it then written
(memset) or left 2 s, so the first load shows what the first use of fresh device
memory costs; --no-cached skips the loads from the cache.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cuda_kernels.driver import Device, Event  # noqa: E402
from engine.algebra.curves import curve_by_name  # noqa: E402
from engine.backends.gpu import GpuBackend  # noqa: E402
from engine.backends.gpu import msm as gmsm  # noqa: E402
from engine.backends.gpu.ntt import build_tables  # noqa: E402
from engine.formats.zkey import COEFF_DTYPE, ZKey, read_zkey, write_zkey  # noqa: E402
from needs_gpu import require_gpu  # noqa: E402
from script_args import (  # noqa: E402
    Parser, count_list, curve_name, input_file, optional, output_dir, output_file, positive, run_main, word_or,
)
from engine.file_writes import write_file  # noqa: E402 - whole or not at all


def synthetic_zkey(path: Path, curve_name: str, log_c: int, seed: int = 0) -> None:
    curve = curve_by_name(curve_name)
    lq = curve.q_limbs64
    rng = np.random.default_rng(seed)
    nc = 1 << log_c
    n_vars, n_public, domain = nc + nc // 100 + 3, 2, 1 << (log_c + 1)
    block = rng.integers(0, 2**62, size=(1 << 20) * lq, dtype=np.uint64)

    def pts(n: int, g2: bool = False) -> np.ndarray:
        return np.resize(block, (n, 2, 2, lq) if g2 else (n, 2, lq))

    na, nb = 2 * nc, nc
    co = np.zeros(na + nb, dtype=COEFF_DTYPE)
    co["matrix"][na:] = 1
    co["row"][:na] = np.repeat(np.arange(nc, dtype=np.uint32), 2)
    co["row"][na:] = np.arange(nc, dtype=np.uint32)
    co["wire"] = rng.integers(0, n_vars, size=na + nb, dtype=np.uint32)
    co["value"] = np.resize(block, (na + nb, 4)) & np.uint64(0x0FFFFFFFFFFFFFFF)

    def hdr(shape: tuple) -> np.ndarray:
        return np.resize(block[:64], shape).copy()

    z = ZKey(str(path), curve, n_vars, n_public, domain, log_c + 1,
             hdr((2, lq)), hdr((2, lq)), hdr((2, 2, lq)), hdr((2, 2, lq)), hdr((2, lq)), hdr((2, 2, lq)),
             pts(n_public + 1), co, pts(n_vars), pts(n_vars), pts(n_vars, True), pts(n_vars - n_public - 1),
             pts(domain))
    write_zkey(path, z)


def read_file_s(path: Path) -> float:
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while f.readinto(view):
            pass
    return time.perf_counter() - t


def evict(*paths) -> None:
    for p in paths:
        if p and os.path.exists(p):
            fd = os.open(p, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def timed_load(backend: GpuBackend, path: Path, row: dict | None = None, name: str = "") -> tuple[float, object]:
    """Seconds until the key is usable (read_zkey + load_key + `ready`); with `row`, also the
    seconds until its fold tables are done, as row[name + " tables done s"]."""
    t = time.perf_counter()
    zkey = read_zkey(path)
    read = time.perf_counter() - t
    backend.prepare_key(zkey)
    maintained = 0.0
    if backend.maintenance_due():  # the staging buffers, pinned once (as the CLI does: a first load's cost)
        t0 = time.perf_counter()
        backend.maintain()
        maintained = time.perf_counter() - t0
    t1 = time.perf_counter()
    key = backend.load_key(zkey)
    returned = time.perf_counter() - t1
    key.ready.synchronize()
    usable = time.perf_counter() - t
    key.synchronize()
    if row is not None:
        row[f"{name} tables done s"] = round(time.perf_counter() - t, 3)
        row[f"{name}: read_zkey s, maintain s, load_key returned s"] = (round(read, 3), round(maintained, 3),
                                                                        round(returned, 3))
        stats = key.upload_stats
        row[f"{name}: upload GB, s, reader s (summed), chunks, pinned buffers"] = (
            round(stats.nbytes / 1e9, 2), round(stats.seconds, 3), round(stats.read_seconds, 3), stats.chunks,
            stats.pinned_buffers)
    return usable, key


def random_witness(key, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 2**63, size=(key.n_wires, 4), dtype=np.uint64)
    w[:, 3] &= np.uint64((1 << 60) - 1)  # below r
    return w


def proof_s(backend: GpuBackend, key, witness: np.ndarray) -> tuple[float, int]:
    """Wall seconds of one proof of `key` (memory and compute phases, the wait), and its fold."""
    t = time.perf_counter()
    core = backend.compute(backend.stage(key, witness)).wait()
    return time.perf_counter() - t, int(core.timings["gpu_fold"])


def proofs_around_load(backend: GpuBackend, path: Path, row: dict, proofs: int) -> None:
    """A proof right after load_key returns (beside the tables), then proofs on the built key."""
    zkey = read_zkey(path)
    backend.prepare_key(zkey)
    t = time.perf_counter()
    key = backend.load_key(zkey)
    returned = time.perf_counter() - t
    witness = random_witness(key)
    s, fold = proof_s(backend, key, witness)
    row["proof right after load_key (load_key s, proof s, fold, tables built after it)"] = (
        round(returned, 3), round(s, 3), fold, key.tables_built())
    key.synchronize()
    row["proof load->tables done s"] = round(time.perf_counter() - t, 3)
    if backend.maintenance_due():  # the proofs' pinned buffers (device-global: only now, the device idle)
        backend.maintain()
    times = [proof_s(backend, key, witness) for _ in range(proofs + 1)]
    row["proof after the tables s (median, fold)"] = (round(statistics.median(s for s, _ in times[1:]), 3),
                                                      times[-1][1])
    backend.unload_key(key)


def legacy_csr(coeffs, matrix: int, domain: int):
    """The CSR build before the cache (fd596b2): a stable argsort by row, searchsorted row starts."""
    sel = coeffs["matrix"] == matrix
    rows = coeffs["row"][sel]
    order = np.argsort(rows, kind="stable")
    row_ptr = np.searchsorted(rows[order], np.arange(domain + 1, dtype=np.int64), side="left").astype(np.uint32)
    return (row_ptr, np.ascontiguousarray(coeffs["wire"][sel][order], dtype=np.uint32),
            np.ascontiguousarray(coeffs["value"][sel][order], dtype=np.uint64))


def legacy_load(backend: GpuBackend, path: Path) -> float:
    """The load of commit fd596b2, for an A/B in the same run (its buffers are freed after)."""
    t = time.perf_counter()
    zkey = read_zkey(path)
    ctx = backend.ctx
    dev, stream, curve = ctx.device, ctx.upload_stream, zkey.curve
    mod = ctx.module(curve)
    footprint = backend.plan_key(zkey)  # the same plans the new load gets (resident tier)
    plan_w, plan_h = footprint.plan_w, footprint.plan_h
    bufs = []
    tables = build_tables(dev, mod, curve, zkey.log_domain, stream, coset=True)

    def up(host, reserve=0):
        host = np.ascontiguousarray(host)
        buf = dev.alloc(max(reserve, host.nbytes), stream)
        if host.nbytes:
            Device.upload(buf, host, stream)
        bufs.append(buf)
        return buf

    for matrix in (0, 1):
        for part in legacy_csr(zkey.coeffs, matrix, zkey.domain_size):
            up(part)
    lq = curve.q_limbs64
    c_padded = np.concatenate([np.zeros((zkey.n_public + 1, 2, lq), dtype=np.uint64), np.asarray(zkey.c)])
    for host, plan, group in ((zkey.a, plan_w, "g1"), (zkey.b1, plan_w, "g1"), (c_padded, plan_w, "g1"),
                              (zkey.b2, plan_w, "g2"), (zkey.h, plan_h, "g1")):
        buf = up(host, plan.fold * np.asarray(host).nbytes)
        gmsm.precompute(mod, group, plan, buf, stream)
    stream.synchronize()
    seconds = time.perf_counter() - t
    tables.free(stream)
    for b in bufs:
        Device.free(b, stream)
    stream.synchronize()
    return seconds


def device_tables_ms(backend: GpuBackend, key) -> float:
    """The window tables' kernels alone, re-run on the loaded key's buffers (table 0 is unchanged)."""
    stream = backend.ctx.upload_stream
    e0, e1 = Event(timing=True), Event(timing=True)
    e0.record(stream)
    for buf, plan, group in ((key.a, key.plan_w, "g1"), (key.b1, key.plan_w, "g1"), (key.c, key.plan_w, "g1"),
                             (key.b2, key.plan_w, "g2"), (key.h, key.plan_h, "g1")):
        gmsm.precompute(key.module, group, plan, buf, stream)
    e1.record(stream)
    e1.synchronize()
    return e0.elapsed_ms(e1)


def device_csr_ms(backend: GpuBackend, zkey) -> float:
    """The device CSR's kernels alone (device_csr.enqueue), by CUDA events, over the key's raw records
    uploaded again into fresh buffers (freed after)."""
    from engine.backends.gpu import device_csr  # noqa: PLC0415
    from engine.formats.coeffs_scan import scan_of  # noqa: PLC0415

    ctx = backend.ctx
    stream, dev, scan = ctx.upload_stream, ctx.device, scan_of(zkey)
    module = ctx.module(zkey.curve)
    records = np.ascontiguousarray(zkey.coeffs).view(np.uint8)
    raw = dev.alloc(records.nbytes, stream)
    Device.upload(raw, records, stream)
    scratch = dev.alloc(device_csr.scratch_bytes(scan), stream)
    bufs = [[dev.alloc(n, stream) for n in sizes] for sizes in device_csr.part_sizes(scan, zkey.domain_size)]
    e0, e1 = Event(timing=True), Event(timing=True)
    e0.record(stream)
    device_csr.enqueue(module, stream, raw.ptr, scratch.ptr, scan, zkey.domain_size, bufs)
    e1.record(stream)
    e1.synchronize()
    ms = e0.elapsed_ms(e1)
    for b in [raw, scratch] + [b for part in bufs for b in part]:
        Device.free(b, stream)
    stream.synchronize()
    e0.destroy()
    e1.destroy()
    return ms


def pool_probe(backend: GpuBackend, path: Path, row: dict, mode: str) -> None:
    """Before the key's first load: allocate its footprint in one buffer, then "touch" (memset all of
    it, synchronized) or "wait" (2 s idle), then free it (the pool keeps it), so that the first load
    reuses memory the device has already had, touched or idle: what part of a first load is the
    first use of fresh device memory."""
    zkey = read_zkey(path)
    nbytes = backend.plan_key(zkey).device_bytes
    ctx = backend.ctx
    ctx.bind_thread()
    stream = ctx.upload_stream
    t = time.perf_counter()
    buf = ctx.device.alloc(nbytes, stream)
    alloc_s = time.perf_counter() - t
    Device.memset32(buf.ptr + nbytes - 4, 0, 1, stream)
    stream.synchronize()
    usable = time.perf_counter() - t
    extra = 0.0
    if mode == "touch":
        t1 = time.perf_counter()
        Device.memset32(buf, 0, nbytes // 4, stream)
        stream.synchronize()
        extra = time.perf_counter() - t1
    elif mode == "wait":
        time.sleep(2.0)
        extra = 2.0
    Device.free(buf, stream)
    stream.synchronize()
    row[f"pool probe ({mode}): GB, alloc call s, last word written s, {mode} s"] = (
        round(nbytes / 1e9, 2), round(alloc_s, 3), round(usable, 3), round(extra, 3))


class _Row(dict):
    """A result row that prints every figure as it is set (a run cut short still reports what it got)."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        print(f"  {self.get('key', '?')}: {key} = {value}", flush=True)


def run_size(label: str, path: Path, backend_dir: Path, repeats: int, legacy: bool, cold: bool,
             tables_rerun: bool = True, proofs: int = 0, cache_off: bool = True, probe: str = "",
             miss_again: bool = False, cached_loads: bool = True) -> dict:
    """One size's figures (keys are unloaded as an Engine does: backend.unload_key, so no load
    pins buffers that an earlier key's proofs wanted)."""
    size = path.stat().st_size
    row = _Row(key=label)
    row["zkey GB"] = round(size / 1e9, 3)
    row["read file s"] = round(min(read_file_s(path) for _ in range(2)), 3)
    cache_dir = backend_dir / "cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    backend = GpuBackend(key_cache_dir=str(cache_dir))
    nocache = GpuBackend.__new__(GpuBackend)
    nocache.__dict__.update(backend.__dict__)
    nocache.key_cache = None
    try:
        if probe:
            pool_probe(backend, path, row, probe)
        first, key = timed_load(backend, path, row, "first")
        assert key.cache_hit is False, key.cache_hit
        row["first load s"] = round(first, 3)
        row["first / read"] = round(first / max(row["read file s"], 1e-3), 2)
        row["first: host"] = {k: round(v, 3) for k, v in key.timings.items()}
        row["resident GB"] = round(key.nbytes / 1e9, 2)
        row["fold"] = key.plan_w.fold
        row["fold-1 plans while the tables build (c witness, c H)"] = (
            (key.footprint.early_w.c, key.footprint.early_h.c) if key.footprint.early_w is not None else None)
        if tables_rerun:
            row["device tables ms"] = round(device_tables_ms(backend, key), 1)
        t = time.perf_counter()
        key.cache_stored()
        row["first: cache entry written after the load (s, waited s)"] = (
            round(key.timings.get("key cache write (after the load)", -1.0), 3), round(time.perf_counter() - t, 3))
        row["device csr ms (kernels alone)"] = round(device_csr_ms(backend, read_zkey(path)), 2)
        backend.unload_key(key)
        if miss_again:  # a second miss in this process: the pool and the pinned buffers already there
            shutil.rmtree(cache_dir, ignore_errors=True)
            again, key = timed_load(backend, path, row, "miss again")
            assert key.cache_hit is False
            row["miss again s"] = round(again, 3)
            row["miss again / read"] = round(again / max(row["read file s"], 1e-3), 2)
            row["miss again: host"] = {k: round(v, 3) for k, v in key.timings.items()}
            key.cache_stored()
            backend.unload_key(key)
        cached = []
        for i in range(repeats + 1 if cached_loads else 0):
            s, key = timed_load(backend, path, row if i == repeats else None, "cached")
            assert key.cache_hit is True
            cached.append(s)
            last = {k: round(v, 3) for k, v in key.timings.items()}
            up = key.upload_stats
            backend.unload_key(key)
        if cached:
            row["staging buffers pinned"] = up.pinned_buffers
            row["cached load s"] = round(statistics.median(cached[1:] or cached), 3)
            row["cached loads s"] = [round(x, 3) for x in cached]
            row["cached: host"] = last
            row["upload GB/s"] = round(up.nbytes / up.seconds / 1e9, 1)
        if cache_off:
            s, key = timed_load(nocache, path)
            row["cache off s"] = round(s, 3)
            backend.unload_key(key)
        if proofs:
            proofs_around_load(backend, path, row, proofs)
        if legacy:  # after the others: the module and the page cache are as warm for it
            row["before (fd596b2) s"] = round(legacy_load(backend, path), 3)
        if cold:
            entry = [str(p) for p in cache_dir.glob("*.gkc")]
            evict(path, *entry)
            t = read_file_s(path)
            row["cold: read file s"] = round(t, 3)
            evict(path, *entry)
            s, key = timed_load(backend, path)
            row["cold: cached load s"] = round(s, 3)
            backend.unload_key(key)
            shutil.rmtree(cache_dir, ignore_errors=True)
            evict(path)
            s, key = timed_load(backend, path)
            row["cold: first load s"] = round(s, 3)
            key.cache_stored()
            backend.unload_key(key)
    finally:
        backend.close()
    return row


_sizes = optional(count_list)  # sizes (log constraints) among --log-constraints; "": none


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-constraints", type=count_list, default="22")
    ap.add_argument("--curve", type=curve_name, default="bn128")
    ap.add_argument("--zkey", type=input_file, help="time this key instead of synthetic ones")
    ap.add_argument("--workdir", type=output_dir, default=None)
    ap.add_argument("--repeats", type=positive, default=3)
    ap.add_argument("--legacy", type=_sizes, default="",
                    help="sizes (log constraints) to also time the pre-cache load at")
    ap.add_argument("--cold", type=_sizes, default="",
                    help="sizes to also time with the files evicted from the page cache")
    ap.add_argument("--tables-rerun", type=word_or("all", count_list, "sizes_or_all"), default="all",
                    help="sizes to re-run the tables' kernels alone at (device tables ms); 'all' or a list")
    ap.add_argument("--proofs", type=int, default=0, help="proof latencies around a load (0: none)")
    ap.add_argument("--no-cache-off", action="store_true", help="skip the load with the cache off")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic zkeys")
    ap.add_argument("--pool-probe", choices=("touch", "wait"), default="",
                    help="grow the memory pool by the key's footprint before the first load, then memset all of "
                         "it or wait 2 s (pool_probe)")
    ap.add_argument("--no-cached", action="store_true", help="no loads from the cache")
    ap.add_argument("--miss-again", action="store_true", help="a second cache miss after the first load")
    ap.add_argument("--json", type=output_file)
    args = ap.parse_args()
    sizes = set(args.log_constraints.split(","))
    for flag, value in (("--legacy", args.legacy), ("--cold", args.cold), ("--tables-rerun", args.tables_rerun)):
        unknown = [k for k in value.split(",") if k and k != "all" and (args.zkey or k not in sizes)]
        if unknown:  # a size no run has timed nothing, and said nothing
            where = "--zkey times one key, no sizes" if args.zkey else f"--log-constraints {args.log_constraints}"
            ap.error(f"argument {flag}: {','.join(unknown)} is not among the sizes timed ({where})")
    require_gpu()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="keyload-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    jobs = [(Path(args.zkey).name, Path(args.zkey), "z")] if args.zkey else [
        (f"2^{k}", work / f"synthetic_{args.curve}_{k}.zkey", k) for k in args.log_constraints.split(",")]
    for label, path, k in jobs:
        if not path.exists():
            t = time.perf_counter()
            synthetic_zkey(path, args.curve, int(k))
            print(f"wrote {path} in {time.perf_counter() - t:.1f} s", flush=True)
        rows.append(run_size(label, path, work, args.repeats, str(k) in args.legacy.split(","),
                             str(k) in args.cold.split(","),
                             args.tables_rerun == "all" or str(k) in args.tables_rerun.split(","), args.proofs,
                             not args.no_cache_off, args.pool_probe, args.miss_again, not args.no_cached))
        print(json.dumps(rows[-1]), flush=True)
        if not args.keep and not args.zkey:
            path.unlink()
    if args.json:
        write_file(args.json, json.dumps(rows, indent=1))


if __name__ == "__main__":
    run_main(main)
