"""The GPU backend: the seam of engine/backends/base.py over cuda_kernels/ on one device.

Proofs go through `stage` and `compute` (engine/backends/gpu/pipeline.py).  The stage
primitives below (evaluate, quotient, ntt, msm_g1, msm_g2) exist for tests and
benchmarks against the CPU reference: each uploads its inputs, runs the same
kernels the pipeline runs, and waits on its own stream.
"""
from __future__ import annotations

import logging

import numpy as np

from cuda_kernels.driver import Device, U32, launch

from engine.backends.base import Backend, CoreResult, Pending, ResidentKey, Staged
from engine.algebra.curves import Curve
from engine.errors import DeviceError
from engine.formats.binfile import first_row_ge
from engine.backends.gpu import batch
from engine.backends.gpu import epilogue as gepi
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import ntt as gntt
from engine.backends.gpu import pipeline
from engine.backends.gpu import staging
from engine.backends.gpu import waiting
from engine.backends.gpu.footprint import KeyCandidates, KeyFootprint, KeyShape, plan_key
from engine.backends.gpu.key import GpuKey, upload_bytes
from engine.backends.gpu.points import decode_xyzz_g1, decode_xyzz_g2
from engine.backends.gpu.runtime import GpuContext, release_all

FR = 32
BATCH_MAX_DOMAIN = 1 << 16  # keys up to this domain batch their queued proofs (scheduler/pipeline.py)
BATCH_MAX_PROOFS = 16
# A proof that finds no free pinned buffer copies through pageable memory: its upload is staged by
# the driver, and its result is fetched after its done event by the waiting thread (pipeline.
# _fetch_late; in the compute phase that download held the device thread until the kernels ended).
# Keys whose proofs need at most this much pinned memory each get a buffer for every proof of two
# full batches plus one: a batch computing (its buffers held until its done event) and the next one
# staging beside it (with one batch's worth, 15 of the next 16 went through pageable memory, their
# results fetched late one by one: perf/RESULTS.md, h13tput); larger keys get `pinned_per_key`;
# misses raise the count.
SMALL_PROOF_PINNED_BYTES = 64 << 20
log = logging.getLogger(__name__)


class GpuBackend(Backend):
    name = "gpu"
    # A proof's witness is range-checked on the device after its upload (pipeline.stage; raised as
    # UnreducedWitnessError by the Pending): callers skip the host's pass over it.
    checks_witness_range = True

    def __init__(self, device: int | Device = 0, *, fold: str | int = "auto", key_budget_bytes: int | None = None,
                 pinned_per_key: int = 2, tier: str = "auto", host_chunk: int | None = None,
                 key_cache_dir=None, proofs_per_load: int | None = None):
        """fold / tier / host_chunk force the key footprint's choices (tests, benchmarks); key_budget_bytes
        is the VRAM budget keys are planned against when the engine gives none (default: the measured one).
        key_cache_dir: the key cache's directory (engine/formats/key_cache.py); None: the environment's
        or the default one; "off" (or False): no cache.  proofs_per_load: how many proofs a key load
        serves when the caller knows (the CLI: one), shared among them the fold tables' build time
        (footprint.plan_key); None: a resident key's many.  device: an index, or a Device already started
        (the CLI's, engine/backends/device_start.py)."""
        self.ctx = GpuContext(device)
        self.fold = fold
        self.key_budget_bytes = key_budget_bytes
        self.pinned_per_key = pinned_per_key  # proofs of a key in flight at once (grows on misses)
        self.tier = tier
        self.host_chunk = host_chunk
        self.proofs_per_load = proofs_per_load
        self._budget: int | None = None
        from engine.formats.key_cache import KeyCache, resolve_dir  # noqa: PLC0415

        where = resolve_dir("off" if key_cache_dir is False else key_cache_dir)
        self.key_cache = KeyCache(where) if where is not None else None
        # tests only: called as fault_hook(results_buffer, slot_bytes, stream, after) with after
        # "a_b1_c_h" (those four sums are done) and "b2", to corrupt a result on the device
        # before the tail reads it (the check must then fail)
        self.fault_hook = None
        self.side_streams = gepi.SideStreams(self.ctx)
        self.flight = waiting.Flight()  # compute phases in flight: a lone one's waiter polls (waiting.py)
        self.wait_spin_s = waiting.spin_seconds()
        self._cache_writes: list[GpuKey] = []  # first loads whose key-cache entry is still being written

    def set_guard_owner(self, owner: object) -> None:
        """Device-global calls of this backend are checked against `owner`'s proof reservations
        (the scheduler's budget): two Engines on one GPU do not refuse each other's idle calls."""
        self.ctx.device.set_owner(owner)

    @property
    def device(self) -> Device:
        return self.ctx.device

    def bind_thread(self) -> None:
        self.ctx.bind_thread()

    # ---- keys and proofs
    def prepare_key(self, zkey) -> None:
        """Host-side work of a key load, for any thread but the device's: the NVRTC compile; and the
        staging buffers a large key's upload wants pinned (at the next maintenance: staging.py)."""
        self.ctx.prepare(zkey.curve)
        staging.want_buffers(self.ctx, upload_bytes(zkey))

    def plan_key(self, zkey, budget_bytes: int | None = None, proofs: int = 2,
                 label: str | None = None, proofs_per_load: int | None = None,
                 candidates: KeyCandidates | None = None) -> KeyFootprint:
        """The key's footprint on this device under `budget_bytes` with `proofs` working sets beside it
        (no device work; BudgetError when not even the host tier and one proof fit); proofs_per_load
        as in __init__ (its default); `candidates` made ahead as footprint.plan_key takes them."""
        if budget_bytes is None:
            budget_bytes = self.key_budget_bytes if self.key_budget_bytes is not None else self.memory_budget_bytes()
        return plan_key(KeyShape.of(zkey), budget_bytes, proofs=proofs, sm_count=self.device.sm_count,
                        fold=self.fold, tier=self.tier, chunk=self.host_chunk,
                        label=label or getattr(zkey, "path", None) or "the key",
                        proofs_per_load=proofs_per_load if proofs_per_load is not None else self.proofs_per_load,
                        candidates=candidates)

    def load_key(self, zkey, footprint: KeyFootprint | None = None) -> GpuKey:
        """Make the key resident as `footprint` says (planned here against the budget when not given).
        A host-tier key pins its bases here: the engine loads it while it holds the whole pool."""
        key = GpuKey(self, zkey, footprint if footprint is not None else self.plan_key(zkey), cache=self.key_cache)
        self._cache_writes = [k for k in self._cache_writes if k.cache_writer is not None and k.cache_writer.is_alive()]
        if key.cache_writer is not None:
            self._cache_writes.append(key)
        nbytes = pipeline.pinned_bytes(key)
        self.ctx.pinned.want(key, nbytes, self.pinned_count(key, nbytes))
        return key

    def pinned_count(self, key: ResidentKey, nbytes: int) -> int:
        """Pinned buffers a key's proofs want (pinned in maintenance, off the proof path)."""
        if nbytes <= SMALL_PROOF_PINNED_BYTES:
            return max(self.pinned_per_key, 2 * self.max_batch(key) + 1)
        return self.pinned_per_key

    def host_resident_bytes(self, key: ResidentKey) -> int:
        """Pinned host bytes the key itself holds (its bases, when on the host tier)."""
        host = getattr(key, "host", None)
        return host.nbytes if host is not None else 0

    def working_set_bytes(self, key: ResidentKey) -> int:
        return pipeline.working_set_bytes(key, self.device.sm_count)

    def stage(self, key: ResidentKey, witness: np.ndarray) -> Staged:
        staged = pipeline.stage(self, key, witness)
        self.flight.staged(staged)  # others staged: the next compute phase is not alone (proof_streams.products_now)
        return staged

    def compute(self, staged: Staged, slot: int = 0) -> Pending:
        self.flight.unstaged(staged)
        return self.flight.track([pipeline.compute(self, staged, slot)])[0]

    def compute_batch(self, staged: list[Staged], slot: int = 0) -> list[Pending]:
        """Staged proofs of one key in one compute phase (their MSMs batched); one Pending each."""
        for s in staged:
            self.flight.unstaged(s)
        return self.flight.track(batch.compute_batch(self, staged, slot))

    def max_batch(self, key: ResidentKey) -> int:
        """How many proofs of `key` the scheduler may hand compute_batch at once: 1 (no batching)
        above BATCH_MAX_DOMAIN, where one proof's MSMs already fill the device (10 x 2^20 MSMs
        in one pass measured 7.2x one, perf/RESULTS.md), else up to BATCH_MAX_PROOFS within
        the bucket sort's range."""
        if key.domain > BATCH_MAX_DOMAIN or getattr(key, "host", None) is not None:
            return 1  # (a host-tier key streams its bases per proof: no batch pass over them)
        plans = [p for pair in key.footprint.all_plans() for p in pair]  # fold 1 while the tables build
        return max(1, min(BATCH_MAX_PROOFS, *(gmsm.max_batch(p) for p in plans)))

    def prove_core(self, key: ResidentKey, witness: np.ndarray) -> CoreResult:
        return self.compute(self.stage(key, witness)).wait()

    def discard(self, staged: Staged) -> Pending:
        self.flight.unstaged(staged)
        return pipeline.discard(self, staged)

    def verify_batch(self, key: ResidentKey, items) -> bool:
        """Several proofs of one key checked with one device multi-pairing (random linear
        combination, one final exponentiation); items: (public signals, Proof) pairs.  A host-tier
        key has no epilogue tables on the device: its proofs are checked by the CPU verifier."""
        if getattr(key, "epilogue", None) is None:
            from engine.groth16.verifier import verify_batch, vk_from_zkey  # noqa: PLC0415

            return verify_batch(vk_from_zkey(key.zkey), [(list(pub), p) for pub, p in items])
        self.ctx.bind_thread()
        return gepi.verify_batch(self.ctx, key.module, key.epilogue,
                                 [(list(pub), (p.pi_a, p.pi_b, p.pi_c)) for pub, p in items])

    # ---- what the scheduler asks of a device (start-up and idle time only)
    def memory_budget_bytes(self) -> int:
        """VRAM the engine may use: 90% of what was free when first asked (start-up reading)."""
        if self._budget is None:
            free, _total = self.device.memory_info()  # start-up only: never on a proof's path
            self._budget = int(free * 0.9)
        return self._budget

    def resident_bytes(self, key: ResidentKey) -> int:
        return int(getattr(key, "nbytes", 0))

    def unload_key(self, key: ResidentKey) -> None:
        try:
            key.close()
        finally:  # its proofs' pinned buffers are unwanted even when a free of the key failed
            self.ctx.pinned.unwant(key)

    def trim_pool(self) -> None:
        """Hand pooled device memory and unwanted pinned buffers back to the system (idle only:
        the driver wrapper refuses both while this owner holds a proof reservation)."""
        self.ctx.bind_thread()
        try:
            self.device.trim_pool(0)
        except DeviceError as exc:  # an optimisation: raised, it stopped the engine from the idle loop
            log.warning("%s; the pool keeps its cached memory", exc)
        self.ctx.pinned.maintain()

    # ---- pinned host buffers: grown and shrunk off the proof path (runtime.PinnedPool)
    def maintenance_due(self) -> bool:
        return self.ctx.pinned.maintenance_due()

    def maintain(self) -> None:
        self.ctx.bind_thread()
        self.ctx.pinned.maintain()

    def host_pinned_bytes(self) -> int:
        """Pinned host memory this backend holds (counted in the engine's host budget)."""
        return self.ctx.pinned.nbytes

    # ---- stage primitives (tests, benchmarks)
    def _run(self, curve: Curve):
        self.ctx.bind_thread()
        return self.ctx.module(curve), self.ctx.compute_stream(0)

    def _upload_fr(self, values: np.ndarray, stream):
        dev = self.device
        vals = np.ascontiguousarray(values, dtype=np.uint64)
        buf = dev.alloc(vals.nbytes, stream)
        Device.upload(buf, vals, stream)
        return buf

    def _download_fr(self, buf, n: int, stream) -> np.ndarray:
        out = np.empty((n, 4), dtype=np.uint64)
        Device.download(out, buf, stream)
        stream.synchronize()
        return out

    def evaluate(self, key: ResidentKey, witness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mod, stream = self._run(key.curve)
        stream.wait_event(key.ready)
        dev, n = self.device, key.domain
        w = self._upload_fr(witness, stream)
        a, b, c = (dev.alloc(n * FR, stream) for _ in range(3))
        (rp_a, wa, ca), (rp_b, wb, cb) = key.csr
        launch(mod, "evaluate_ab", -(-n // 256), 256, stream, rp_a, wa, ca, rp_b, wb, cb, w, U32(n), a, b, c)
        for buf in (a, b):
            launch(mod, "fr_from_mont", -(-n // 256), 256, stream, buf, U32(n))
        out = self._download_fr(a, n, stream), self._download_fr(b, n, stream)
        for buf in (w, a, b, c):
            Device.free(buf, stream)
        return out

    def quotient(self, curve: Curve, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        mod, stream = self._run(curve)
        dev, n = self.device, a.shape[0]
        k = n.bit_length() - 1
        if n != 1 << k:
            raise ValueError(f"quotient: domain size {n} is not a power of two")
        bufs = [self._upload_fr(x, stream) for x in (a, b)]
        for buf in bufs:
            launch(mod, "fr_to_mont", -(-n // 256), 256, stream, buf, U32(n))
        c = dev.alloc(n * FR, stream)
        # c = a∘b before the transforms (spec pitfall 6): a quotient_h-shaped product with zero c
        zero = dev.alloc(n * FR, stream)
        Device.memset32(zero, 0, n * 8, stream)
        launch(mod, "quotient_h", -(-n // 256), 256, stream, bufs[0], bufs[1], zero, U32(n), c)
        launch(mod, "fr_to_mont", -(-n // 256), 256, stream, c, U32(n))
        tables = gntt.build_tables(dev, mod, curve, k, stream, coset=True)
        for buf in (*bufs, c):
            gntt.dif(mod, buf, tables, stream, inverse=True, scale=tables.coset)
            gntt.dit(mod, buf, tables, stream, inverse=False)
        launch(mod, "quotient_h", -(-n // 256), 256, stream, bufs[0], bufs[1], c, U32(n), c)
        out = self._download_fr(c, n, stream)
        tables.free(stream)
        for buf in (*bufs, c, zero):
            Device.free(buf, stream)
        return out

    def ntt(self, curve: Curve, values: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        mod, stream = self._run(curve)
        dev, n = self.device, values.shape[0]
        k = n.bit_length() - 1
        if n != 1 << k:
            raise ValueError(f"ntt: size {n} is not a power of two")
        r = curve.r
        x = self._upload_fr(values, stream)
        launch(mod, "fr_to_mont", -(-n // 256), 256, stream, x, U32(n))
        tables = gntt.build_tables(dev, mod, curve, k, stream, coset=False)
        tmp = dev.alloc(n * FR, stream)
        g = curve.coset_generator(k) if coset else 1
        extra = []
        if not inverse:
            if coset:  # x_j *= g^j, then bit-reverse and DIT
                t = gntt.powers_table(dev, mod, curve, g, 1, n, stream)
                launch(mod, "fr_scale", -(-n // 256), 256, stream, x, t, U32(k))
                extra.append(t)
            launch(mod, "fr_bit_reverse", -(-n // 256), 256, stream, x, tmp, U32(k))
            gntt.dit(mod, tmp, tables, stream, inverse=False)
        else:  # DIF with w^-1, bit-reverse, then * g^-j / n
            gntt.dif(mod, x, tables, stream, inverse=True)
            launch(mod, "fr_bit_reverse", -(-n // 256), 256, stream, x, tmp, U32(k))
            t = gntt.powers_table(dev, mod, curve, pow(g, -1, r), pow(n, -1, r), n, stream)
            launch(mod, "fr_scale", -(-n // 256), 256, stream, tmp, t, U32(k))
            extra.append(t)
        launch(mod, "fr_from_mont", -(-n // 256), 256, stream, tmp, U32(n))
        out = self._download_fr(tmp, n, stream)
        tables.free(stream)
        for buf in (x, tmp, *extra):
            Device.free(buf, stream)
        return out

    def _msm(self, curve: Curve, bases: np.ndarray, scalars: np.ndarray, g2: bool, fold: str | int | None = None,
             accumulation: str | None = None, rounds: int | None = None, plan: gmsm.MsmPlan | None = None,
             seg_len: int | None = None):
        """One MSM (scalars (n, 4)) or a batch against the same bases (scalars (k, n, 4)): a point,
        or a list of k points.  `plan` and `seg_len` replace the planner's choices (tests: every
        window, fold and segment length must give the same point)."""
        n = bases.shape[0]
        sc_all = np.ascontiguousarray(scalars, dtype=np.uint64)
        batched = sc_all.ndim == 3
        vectors = sc_all if batched else sc_all[None]
        if vectors.shape[1] != n:
            raise ValueError(f"msm: {n} bases but {vectors.shape[1]} scalars")
        bad = first_row_ge(vectors.reshape(-1, 4), curve.r)
        if bad >= 0:
            raise ValueError(f"msm: scalar {bad % max(n, 1)} of vector {bad // max(n, 1)} is not reduced modulo r")
        k = vectors.shape[0]
        if n == 0 or k == 0:
            return [None] * k if batched else None
        mod, stream = self._run(curve)
        dev = self.device
        group = "g2" if g2 else "g1"
        fold = self.fold if fold is None else fold
        if plan is None:
            plan = gmsm.plan_msm(n, curve.r.bit_length(), "full" if fold == "auto" else fold, batch=k,
                                 accumulation=accumulation, rounds=rounds, curve=curve.name, groups=(group,))
        layout = gmsm.AccumulateLayout.for_plan(plan, dev.sm_count, seg_len)
        host = np.ascontiguousarray(bases)
        pts = dev.alloc(plan.fold * host.nbytes, stream)
        Device.upload(pts, host, stream)
        gmsm.precompute(mod, group, plan, pts, stream)
        sc = self._upload_fr(vectors.reshape(-1, 4), stream)
        acc = (8 if g2 else 4) * curve.n8q
        sort = gmsm.SortScratch(dev, [plan], stream, binned=gmsm.SortScratch.wants_bins([plan]))
        bs = gmsm.BucketScratch(dev, [(plan, layout)], acc, stream)
        res = dev.alloc(k * acc, stream)
        gmsm.run_msm(mod, group, plan, layout, pts, sc, sort, bs, acc, res.ptr, stream)
        raw = np.empty(k * acc, dtype=np.uint8)
        Device.download(raw, res, stream)
        stream.synchronize()
        sort.free(stream)
        bs.free(stream)
        for buf in (pts, sc, res):
            Device.free(buf, stream)
        decode = decode_xyzz_g2 if g2 else decode_xyzz_g1
        out = [decode(curve, raw[j * acc:(j + 1) * acc]) for j in range(k)]
        return out if batched else out[0]

    def msm_g1(self, curve: Curve, bases: np.ndarray, scalars: np.ndarray):
        return self._msm(curve, bases, scalars, False)

    def msm_g2(self, curve: Curve, bases: np.ndarray, scalars: np.ndarray):
        return self._msm(curve, bases, scalars, True)

    def wait_cache_writes(self) -> None:
        """Block until the key-cache entries of this backend's first loads are written (they are
        written after each load returns: close() waits, so a process ending after it keeps them)."""
        for key in self._cache_writes:
            key.cache_stored()
        self._cache_writes = []

    def close(self) -> None:
        """The cache writes waited for, then the side streams and the context released: the context even
        when the side streams fail (the first failure raised after; a lost context's only logged)."""
        self.wait_cache_writes()
        self.ctx.bind_thread()
        release_all(self.side_streams.close, self.ctx.close)

    def close_for_exit(self) -> None:
        """The key cache's writes and every stream's work waited for; the streams, events, pinned buffers,
        pool and context left to the process's end (~60 ms of releases on the H200's host, run by the
        exit's hand-off in the background: engine/exit_handoff.py)."""
        self.wait_cache_writes()
        self.ctx.bind_thread()
        release_all(self.side_streams.finish, self.ctx.finish)  # a lost context's waits: logged, not raised
