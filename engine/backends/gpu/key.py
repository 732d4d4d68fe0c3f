"""A proving key resident on one GPU: points (with their window tables), coeffs, NTT tables, epilogue tables.

Uploaded once by `GpuBackend.load_key` and reused by every later proof of
the circuit; a proof then moves only its witness over PCIe.  The C points are
padded with the point at infinity for wires 0..nPublic so that the A, B1, B2
and C MSMs all take the same scalars (the whole witness) and share one sort.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

import numpy as np

from cuda_kernels.driver import Device, DeviceBuffer, Event
from engine.errors import DeviceError

from engine.backends.base import ResidentKey
from engine.backends.gpu import device_csr
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_builds
from engine.backends.gpu import staging
from engine.backends.gpu.epilogue import KeyEpilogue
from engine.backends.gpu.footprint import KeyFootprint
from engine.backends.gpu.host_tier import HostTier
from engine.backends.gpu.ntt import build_tables
from engine.backends.gpu.runtime import destroy_events, free_buffers, release_all
from engine.formats.coeffs_scan import scan_of

log = logging.getLogger(__name__)


def _open_unchanged(zkey) -> int | None:
    """The zkey's file opened for reading when it is still the one that was mapped (same size and
    modification time), so its sections can be read with preadv; None: use the mapped arrays."""
    if not getattr(zkey, "path", None) or not getattr(zkey, "file_size", 0):
        return None
    try:
        fd = os.open(zkey.path, os.O_RDONLY)
    except OSError:
        return None
    st = os.fstat(fd)
    if st.st_size != zkey.file_size or st.st_mtime_ns != zkey.file_mtime_ns:
        os.close(fd)
        return None
    return fd


def upload_bytes(zkey) -> int:
    """About what a load of this key moves to the device: its point sections and its coeffs."""
    return sum(int(np.asarray(a).nbytes) for a in (zkey.a, zkey.b1, zkey.b2, zkey.c, zkey.h, zkey.coeffs))


def csr_from_coeffs(coeffs: np.ndarray, matrix: int, domain: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row_ptr u32 (domain+1), wires u32, values (nnz, 4) u64) for one matrix of the coeffs section.

    Entries hitting the same cell stay separate terms; the kernel's sum adds them, as snarkjs does.
    snarkjs and our setup write each matrix as one block with rows ascending: then the block is
    sliced as it is (no sort, no gather); any other order takes a stable sort by row."""
    mcol = coeffs["matrix"]
    sel = np.flatnonzero(mcol == matrix)
    if sel.size and sel[-1] - sel[0] + 1 == sel.size:
        block = coeffs[sel[0]:sel[-1] + 1]
        rows = block["row"]
        if rows.size < 2 or not np.any(rows[1:] < rows[:-1]):
            counts = np.bincount(rows, minlength=domain)
            row_ptr = np.zeros(domain + 1, dtype=np.uint32)
            np.cumsum(counts[:domain], out=row_ptr[1:], dtype=np.uint32)
            return (row_ptr, np.ascontiguousarray(block["wire"], dtype=np.uint32),
                    np.ascontiguousarray(block["value"], dtype=np.uint64))
    rows = coeffs["row"][sel]
    order = np.argsort(rows, kind="stable")
    idx = sel[order]
    counts = np.bincount(rows, minlength=domain)
    row_ptr = np.zeros(domain + 1, dtype=np.uint32)
    np.cumsum(counts[:domain], out=row_ptr[1:], dtype=np.uint32)
    return row_ptr, np.ascontiguousarray(coeffs["wire"][idx], dtype=np.uint32), \
        np.ascontiguousarray(coeffs["value"][idx], dtype=np.uint64)


def host_csr(coeffs: np.ndarray, domain: int) -> dict[str, np.ndarray]:
    """Both matrices' CSR arrays by the key cache's names ("a.row_ptr", ...)."""
    arrays = {}
    for matrix, tag in ((0, "a"), (1, "b")):
        for part, arr in zip(CSR_PARTS, csr_from_coeffs(coeffs, matrix, domain)):
            arrays[f"{tag}.{part}"] = arr
    return arrays


# What this module puts on the device, for the key cache's identity: bump it whenever the arrays
# below (the CSR of A and B; the points stream from the zkey) or their layout change.
LAYOUT_VERSION = 1
CSR_PARTS = ("row_ptr", "wires", "values")


def cache_layout() -> str:
    return f"gpu-csr-v{LAYOUT_VERSION}"


@dataclass(frozen=True)
class ProofPlans:
    """The MSM plans one proof runs under, fixed when its compute phase starts: `full` the
    footprint's fold (its tables built), else the fold-1 plans over table 0."""

    w: gmsm.MsmPlan
    h: gmsm.MsmPlan
    full: bool


class GpuKey(ResidentKey):
    """`footprint` (footprint.plan_key, chosen from the VRAM budget) fixes the tier and the MSM plans:
    resident keys hold their points and shifted copies here and the epilogue's tables (`epilogue`),
    host-tier keys a `HostTier` of pinned bases (and no `epilogue`: their proofs end on the CPU).

    Loading: kernel module, NTT tables (built on the device), the CSR of A and B (from the key
    cache; else built on the device from the raw coeffs records streamed with the points, or on the
    host for coeffs in another order than snarkjs's; then cached), a resident key's points straight
    from the zkey's sections.  Uploads go through staging.py; each point array's window tables are computed on a
    side stream as soon as its copies are enqueued, overlapping the next reads.  `ready` fires when
    all of it is on the device but the fold tables, `tables_done` (None: the key has none) when
    they are built too; `timings` says where the host's time went.

    Proofs need not wait for the tables: one whose compute starts before they are done
    (`plans_now`, an event query) runs the fold-1 plans (`footprint.early_w`, `early_h`) over
    table 0, which the tables' kernels only read, and waits on `ready` alone; later ones take
    the full fold and also wait on `tables_done`.  A proof's scratch covers both plans
    (footprint.proof_working_set), so a proof's plan is chosen once, at its compute, and kept."""

    def __init__(self, backend, zkey, footprint: KeyFootprint, *, cache=None):
        super().__init__(zkey)
        ctx = backend.ctx
        ctx.bind_thread()
        self.ctx = ctx
        curve = zkey.curve
        self.timings: dict[str, float] = {}
        self.cache_hit: bool | None = None  # None: no cache for this key
        self.cache_writer: threading.Thread | None = None  # a first load's cache write, after its upload
        # pipeline._layout: what each proof of this key allocates, by (SM count, upload bytes), made once
        self.proof_layouts: dict = {}
        t = time.perf_counter()
        self.module = ctx.module(curve)
        self.timings["kernel module"] = time.perf_counter() - t
        self.n_wires, self.domain, self.k = zkey.n_vars, zkey.domain_size, zkey.log_domain
        self.footprint = footprint
        self.plan_w, self.plan_h = footprint.plan_w, footprint.plan_h
        self.host: HostTier | None = None
        self.buffers: list[DeviceBuffer] = []
        self.tables = None
        self.epilogue: KeyEpilogue | None = None
        self._events: list[Event] = []
        self.tables_done: Event | None = None
        self._tables_built = footprint.early_w is None  # nothing to build
        with Device.recording() as made:
            try:
                self._load(zkey, cache)
            except BaseException:
                # a failed load (out of memory, a device fault, a vanished file) leaves nothing on the
                # device: the key's buffers and whatever a helper had allocated when it failed
                try:  # both, though one fails; the load's own error is the one raised
                    release_all(self.close, lambda: free_buffers(made, ctx.upload_stream))
                except DeviceError:
                    pass
                raise
        self.nbytes = sum(b.nbytes for b in self.buffers) + self.tables.nbytes

    def _load(self, zkey, cache) -> None:
        ctx, curve = self.ctx, zkey.curve
        dev, stream = ctx.device, ctx.upload_stream
        # Kernels loaded before any is queued (Module.preload: a lazy first launch can wait for the
        # queued work): the CSR's and the tables', then, where fold tables will build behind the
        # key, every other kernel too, so that the first proofs beside them do not load theirs
        # behind the tables either (a proof right after load_key took 2.1 s at 2^22 beside them).
        kernels = list(device_csr.KERNELS)
        tables = self.footprint.tier != "host" and not self._tables_built
        if tables:
            kernels += [msm_builds.precompute_kernel(g, curve.name) for g in ("g1", "g2")]
        self.module.preload(kernels)
        if tables:
            self.module.preload()
        self.tables = build_tables(dev, self.module, curve, self.k, stream, coset=True)
        zkey_fd = _open_unchanged(zkey)
        entry = side = None
        try:
            t = time.perf_counter()
            csr, entry, store = self._csr_sources(zkey, cache)
            self.timings["csr"] = time.perf_counter() - t
            side = dev.stream()  # the window tables' kernels, beside the copies
            t_queue = time.perf_counter()
            jobs: list[staging.Job] = []
            self.csr = []
            if csr is None:  # built on the device from the raw records (device_csr.py)
                self._device_csr(jobs, zkey, zkey_fd)
            else:
                for tag in ("a", "b"):
                    bufs = []
                    for part in CSR_PARTS:
                        src = csr[f"{tag}.{part}"]
                        buf = self._alloc(src.nbytes)
                        jobs.append(staging.Job(buf.ptr, src))
                        bufs.append(buf)
                    self.csr.append(bufs)
            if self.footprint.tier == "host":  # the bases stay pinned on the host (host_tier.py)
                lq = curve.q_limbs64
                c_padded = np.concatenate([np.zeros((zkey.n_public + 1, 2, lq), dtype=np.uint64), np.asarray(zkey.c)])
                self.host = HostTier(ctx, zkey, c_padded, self.footprint)
                self.a = self.b1 = self.c = self.b2 = self.h = None
            else:
                pad = (zkey.n_public + 1) * curve.g1_bytes  # C starts with infinity for wires 0..nPublic
                self.a = self._points(jobs, zkey, zkey_fd, 5, zkey.a, self.plan_w, "g1", side)
                self.b1 = self._points(jobs, zkey, zkey_fd, 6, zkey.b1, self.plan_w, "g1", side)
                self.c = self._points(jobs, zkey, zkey_fd, 8, zkey.c, self.plan_w, "g1", side, pad=pad)
                self.b2 = self._points(jobs, zkey, zkey_fd, 7, zkey.b2, self.plan_w, "g2", side)
                self.h = self._points(jobs, zkey, zkey_fd, 9, zkey.h, self.plan_h, "g1", side)
                # the epilogue's byte tables and the pairing check's lines and target (epilogue.py);
                # host-tier proofs end on the CPU (their MSM sums are complete only on the host)
                self.epilogue = KeyEpilogue(self, zkey)
            t = time.perf_counter()
            self.timings["buffers + epilogue queued"] = t - t_queue
            self.upload_stats = staging.upload(ctx, stream, jobs)
            self.timings["read + upload"] = time.perf_counter() - t
            if not self._tables_built:  # the tables build on behind `ready`; full-fold proofs wait on this
                self.tables_done = Event()  # held before its record: close() destroys it whatever happens
                self.tables_done.record(side)
            if store is not None:  # after the upload, not beside it (measured: it slowed the reads)
                self.cache_writer = threading.Thread(target=store, name="key-cache-write")
                self.cache_writer.start()
        except BaseException:
            try:  # the tables' kernels queued so far finish before close() frees their buffers
                if side is not None:
                    side.synchronize()
            except DeviceError:
                pass
            raise
        finally:  # the stream last, the events each on its own: a failing destroy leaks its own handle only
            if zkey_fd is not None:
                os.close(zkey_fd)
            if entry is not None:
                entry.close()
            destroy_events(*self._events)
            self._events = []
            if side is not None:
                side.destroy()  # returns at once; its queued kernels still run
        self.ready = Event()  # held before its record: close() destroys it whatever happens
        self.ready.record(stream)

    def tables_built(self) -> bool:
        """Whether the fold tables are complete: a query of their event, no wait (design.md
        section 5); once True it stays True."""
        if not self._tables_built and (self.tables_done is None or self.tables_done.query()):
            self._tables_built = True
        return self._tables_built

    def plans_now(self) -> ProofPlans:
        """The plans of a proof whose compute starts now (see the class docstring); the full fold's, after the
        tables, for a key loaded for a known number of proofs (footprint.tables_awaited)."""
        if self.footprint.tables_awaited or self.tables_built():
            return ProofPlans(self.plan_w, self.plan_h, True)
        return ProofPlans(self.footprint.early_w, self.footprint.early_h, False)

    def wait(self, plans: ProofPlans, stream) -> None:
        """Make `stream` wait for what a proof under `plans` reads: the key, and its tables for
        the full fold."""
        stream.wait_event(self.ready)
        if plans.full and self.tables_done is not None:
            stream.wait_event(self.tables_done)

    def synchronize(self) -> None:
        """Block until the whole key, tables included, is on the device (tests, benchmarks)."""
        self.ready.synchronize()
        if self.tables_done is not None:
            self.tables_done.synchronize()
            self._tables_built = True

    def cache_stored(self, timeout: float | None = None) -> bool:
        """Wait (at most `timeout` s) for this load's key-cache write; True when none is running.
        A first load writes its entry on a thread after its upload and returns without waiting
        (the key is usable meanwhile; a load of the same zkey before the write ends is a miss)."""
        if self.cache_writer is not None:
            self.cache_writer.join(timeout)
            if self.cache_writer.is_alive():
                return False
            self.cache_writer = None
        return True

    def _csr_sources(self, zkey, cache) -> tuple[dict | None, object, object]:
        """The CSR arrays by name: file ranges of a cache entry, arrays built now on the host, or
        None: built on the device (`_device_csr`, when the coeffs are in snarkjs's order); then
        also the entry (to close after the upload) and the call that writes a missing entry."""
        from engine.formats.key_cache import identity_of  # noqa: PLC0415

        identity = identity_of(zkey, cache_layout()) if cache is not None else None
        if identity is not None:
            entry = cache.load(identity)
            if entry is not None and all(f"{t}.{p}" in entry.ranges for t in ("a", "b") for p in CSR_PARTS):
                self.cache_hit = True
                return {name: staging.FileRange(entry.fd, off, n, entry.path)
                        for name, (off, n) in entry.ranges.items()}, entry, None
            if entry is not None:
                entry.close()
            self.cache_hit = False
        on_device = self.footprint.csr_build_bytes > 0  # rows in order and room in the budget (footprint)
        arrays = None if on_device else host_csr(zkey.coeffs, self.domain)
        store = None
        if identity is not None:
            meta = {"n_vars": zkey.n_vars, "domain": zkey.domain_size}

            def store() -> None:
                # a device-built CSR's entry is the host build's arrays, made here, after the load: the
                # same bytes (tests/test_gpu_csr.py), no device traffic while the first proofs start,
                # and a later hit checks the device build against the host's (test_key_cache.py)
                t = time.perf_counter()
                try:  # on a thread of its own: an error would be a traceback under the user's proofs
                    cache.store(identity, arrays if arrays is not None else host_csr(zkey.coeffs, self.domain),
                                meta)
                except Exception as exc:  # noqa: BLE001 - the key is loaded; only its entry is missing
                    log.warning("key cache: no entry written for %s (%s: %s); later loads build the CSR again",
                                identity.zkey_path, type(exc).__name__, exc)
                    return
                self.timings["key cache write (after the load)"] = time.perf_counter() - t
        return arrays, None, store

    def _device_csr(self, jobs: list, zkey, fd: int | None) -> None:
        """Queue the raw records' upload into a scratch buffer and, once its copies are enqueued,
        the kernels building the CSR from it (device_csr.py); the scratch is freed behind them."""
        ctx = self.ctx
        stream, scan = ctx.upload_stream, scan_of(zkey)
        for sizes in device_csr.part_sizes(scan, self.domain):
            self.csr.append([self._alloc(n) for n in sizes])
        records = device_csr.records_source(zkey, fd)
        # not the key's: the records and the kernels' scratch, freed once the kernels ran
        raw = ctx.device.alloc(records.nbytes, stream)
        scratch = ctx.device.alloc(device_csr.scratch_bytes(scan), stream)

        def build() -> None:
            device_csr.enqueue(self.module, stream, raw.ptr, scratch.ptr, scan, self.domain, self.csr)
            Device.free(raw, stream)
            Device.free(scratch, stream)

        jobs.append(staging.Job(raw.ptr, records, done=build))

    def _upload(self, host: np.ndarray, reserve: int | None = None) -> DeviceBuffer:
        """A small array copied as it is (the epilogue's tables): `reserve` bytes at least."""
        host = np.ascontiguousarray(host)
        buf = self._alloc(max(reserve or 0, host.nbytes))
        if host.nbytes:
            Device.upload(buf, host, self.ctx.upload_stream)
        return buf

    def _alloc(self, nbytes: int) -> DeviceBuffer:
        buf = self.ctx.device.alloc(nbytes, self.ctx.upload_stream)
        self.buffers.append(buf)
        return buf

    def _event(self, stream) -> Event:
        e = Event()
        self._events.append(e)  # before its record: a failing record leaks no event (the finally destroys it)
        return e.record(stream)

    def _points(self, jobs: list, zkey, fd: int | None, sid: int, host: np.ndarray, plan: gmsm.MsmPlan,
                group: str, side, pad: int = 0) -> DeviceBuffer:
        """Reserve the point array's fold tables, queue its upload (from the zkey's section when the
        file is unchanged since it was read, else from the mapped arrays), and once its copies are
        queued, the kernel filling tables 1..fold-1 on the side stream."""
        nbytes = pad + host.nbytes
        buf = self._alloc(plan.fold * nbytes)
        stream = self.ctx.upload_stream
        if pad:
            Device.memset32(buf, 0, pad // 4, stream)

        def tables() -> None:
            side.wait_event(self._event(stream))
            gmsm.precompute(self.module, group, plan, buf, side)

        if fd is not None and zkey.sections and sid in zkey.sections:
            offset, size = zkey.sections[sid]
            src = staging.FileRange(fd, offset, size, zkey.path) if size == host.nbytes else host
        else:
            src = host
        jobs.append(staging.Job(buf.ptr + pad, src, done=tables))
        return buf

    def close(self) -> None:
        """Free the key's buffers and tables, release its host tier and destroy its events: all of them though
        a call fails (the engine lets go of the key after this; a stopped close leaked the rest for good),
        a failed free retried once the stream is idle, the first failure raised after the last step."""
        steps = []
        if self.buffers or self.tables is not None:
            self.ctx.bind_thread()
            stream = self.ctx.upload_stream
            if self.tables_done is not None:  # the frees come after the tables' kernels
                try:
                    stream.wait_event(self.tables_done)
                except DeviceError:
                    try:
                        self.tables_done.synchronize()
                    except DeviceError:
                        pass
            tables, self.tables = self.tables, None
            bufs, self.buffers = list(self.buffers), []
            if tables is not None:
                bufs += [tables.tw_fwd, tables.tw_inv, tables.coset]
            steps.append(lambda: free_buffers(bufs, stream))
        host, self.host = self.host, None
        if host is not None:
            steps.append(host.close)
        for name in ("ready", "tables_done"):
            event = getattr(self, name, None)
            if event is not None:
                setattr(self, name, None)
                steps.append(event.destroy)  # after the frees were enqueued: destroying a recorded event is allowed
        release_all(*steps)
