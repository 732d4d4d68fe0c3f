"""A key is usable as soon as its points are on the device; its fold tables build behind it.

On the fake driver (tests/fake_cuda.py, `events_pending` makes every event query say "not
ready"): a proof whose compute starts before the tables are done runs the fold-1 plans and its
streams wait on the key's `ready` event only, never on the tables (and nothing blocks on the
host); once the tables' event has fired proofs take the full fold and wait on it; a proof keeps
the plan it started with; a batch takes one plan for all its proofs; closing a key orders its
frees after the tables' kernels, and a load that fails after some tables were queued waits for
them before it frees.  On the GPU (marked gpu, both curves): proofs made while the tables are
still building (held back behind a long kernel on their stream) have the same MSM sums as
proofs of the built key, and every proof verifies, on the device and with the CPU verifier.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from pathlib import Path

from conftest import FIXTURES
from engine.formats import read_wtns, read_zkey

ROOT = Path(__file__).resolve().parent.parent
TINY = FIXTURES / "tiny"
LOGGED = ("cuStreamWaitEvent", "cuStreamSynchronize", "cuEventSynchronize", "cuEventQuery", "cuMemFreeAsync",
          "cuStreamCreate", "cuStreamCreateWithPriority")


class _Log:
    """The fake driver with the calls in LOGGED kept in order, with their arguments."""

    def __init__(self, fake):
        self.fake, self.log = fake, []

    def __getattr__(self, name):
        attr = getattr(self.fake, name)
        if name not in LOGGED:
            return attr

        def logged(*args):
            ret = attr(*args)
            self.log.append((name, tuple(int(a) if isinstance(a, int) else a for a in args), ret))
            return ret
        return logged

    def since(self, start: int, name: str) -> list[tuple]:
        return [args for n, args, _ in self.log[start:] if n == name]


@pytest.fixture
def fake(monkeypatch):
    from cuda_kernels import driver
    from fake_cuda import FakeDriver

    log = _Log(FakeDriver())
    previous = driver.set_bindings(log)
    try:
        yield log
    finally:
        driver.set_bindings(previous)


@pytest.fixture
def sorts(monkeypatch):
    """Every MSM plan a proof sorts its scalars under (H's and the witness's), in order."""
    from engine.backends.gpu import msm as gmsm

    seen: list = []
    real = gmsm.sort_scalars

    def recording(mod, plan, *args, **kwargs):
        seen.append(plan)
        return real(mod, plan, *args, **kwargs)

    monkeypatch.setattr(gmsm, "sort_scalars", recording)
    return seen


def _proof_sorts(plan_w, plan_h, domain: int | None = None, granted: bool = False) -> list:
    """The sorts one proof runs, in order: H's then the witness's; a small full-fold proof, or a larger one
    whose footprint was `granted` B2's own stream (its B2 MSM beside the rest, on a sort of its own:
    launch._launch_small) sorts the witness twice, then H; with the products beside (a key of `domain`,
    proof_streams.products_beside: launch._launch_products) B2's, H's, r w's, s w's, then the witness's for A and C."""
    from engine.backends.gpu import proof_streams

    if not proof_streams.b2_beside(plan_w, granted):
        return [plan_h, plan_w]
    if domain is not None and proof_streams.products_beside(plan_w, domain):
        return [plan_w, plan_h, plan_w, plan_w, plan_w]
    return [plan_w, plan_w, plan_h]


def _backend(**options):
    from engine.backends.gpu import GpuBackend

    backend = GpuBackend(0, key_cache_dir=False, **options)
    backend.ctx.prepare = lambda curve: b"fake cubin"
    return backend


def _tiny(curve):
    return read_zkey(TINY / curve / "tiny.zkey"), np.asarray(read_wtns(TINY / curve / "tiny.wtns").values)


@contextlib.contextmanager
def _loaded(curve: str = "bn128", **options):
    """(backend, key, witness): the tiny key loaded on a fresh backend, unloaded and closed after."""
    zkey, witness = _tiny(curve)
    backend = _backend(**options)
    try:
        key = backend.load_key(zkey)
        yield backend, key, witness
        backend.unload_key(key)
    finally:
        backend.close()


def _waited(fake, start: int) -> set[int]:
    return {args[1] for args in fake.since(start, "cuStreamWaitEvent")}


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_proof_before_the_tables_runs_fold_1_and_waits_only_for_the_points(fake, sorts, curve):
    zkey, witness = _tiny(curve)
    backend = _backend()
    try:
        key = backend.load_key(zkey)
        fp = key.footprint
        assert fp.fold > 1 and fp.early_w.fold == fp.early_h.fold == 1 and key.tables_done is not None
        fake.fake.events_pending = True  # the tables' kernels still run
        assert not key.tables_built()
        start = len(fake.log)
        core = backend.prove_core(key, witness)
        assert core.timings["gpu_fold"] == 1
        assert sorts == _proof_sorts(fp.early_w, fp.early_h)  # over table 0 only (fold 1: H, then the witness)
        waited = _waited(fake, start)
        assert key.ready.handle in waited and key.tables_done.handle not in waited
        assert key.tables_done.handle not in {a[0] for a in fake.since(start, "cuEventSynchronize")}

        fake.fake.events_pending = False  # the tables' event has fired
        sorts.clear()
        start = len(fake.log)
        core = backend.prove_core(key, witness)
        assert core.timings["gpu_fold"] == fp.fold and sorts == _proof_sorts(fp.plan_w, fp.plan_h, key.domain)
        assert {key.ready.handle, key.tables_done.handle} <= _waited(fake, start)
        tables = [(key.tables_done.handle,)]
        queries = len([q for q in fake.since(0, "cuEventQuery") if q in tables])
        backend.prove_core(key, witness)
        # built stays built: no more queries of the tables' event (the waiter polls its proof's own)
        assert len([q for q in fake.since(0, "cuEventQuery") if q in tables]) == queries
        backend.unload_key(key)
    finally:
        backend.close()
    assert not fake.fake.live_device and not fake.fake.live_events and not fake.fake.live_streams


def test_proofs_run_on_urgent_streams_and_the_tables_on_a_default_one(fake, monkeypatch):
    """A proof's blocks are scheduled ahead of the tables' (both compete for the SMs meanwhile)."""
    from engine.backends.gpu import msm as gmsm

    tables_streams = []
    real = gmsm.precompute

    def noting(mod, group, plan, buf, stream):
        tables_streams.append(stream.handle)
        return real(mod, group, plan, buf, stream)

    monkeypatch.setattr(gmsm, "precompute", noting)
    with _loaded() as (backend, key, witness):
        fake.fake.events_pending = True
        backend.prove_core(key, witness)
        urgent = {ret[1] for n, args, ret in fake.log if n == "cuStreamCreateWithPriority" and args[1] == -5}
        plain = {ret[1] for n, args, ret in fake.log if n == "cuStreamCreate"}
        assert backend.ctx.compute_stream(0).handle in urgent and backend.side_streams.get(0).handle in urgent
        assert tables_streams and set(tables_streams) <= plain


def test_a_proof_keeps_the_plan_it_started_with(fake, monkeypatch):
    """The tables finish between the proof's H MSM and its witness MSMs: it stays on fold 1."""
    from engine.backends.gpu import msm as gmsm

    seen = []
    real = gmsm.sort_scalars

    def finishing(mod, plan, *args, **kwargs):
        seen.append(plan)
        fake.fake.events_pending = False  # the tables complete now
        return real(mod, plan, *args, **kwargs)

    with _loaded() as (backend, key, witness):
        fake.fake.events_pending = True
        monkeypatch.setattr(gmsm, "sort_scalars", finishing)
        core = backend.prove_core(key, witness)
        assert core.timings["gpu_fold"] == 1
        assert [p.fold for p in seen] == [1, 1] and seen == [key.footprint.early_h, key.footprint.early_w]
        assert key.tables_built()  # the next proof takes the full fold


def test_a_proof_staged_before_the_tables_may_compute_after_them(fake, sorts):
    """Its scratch (allocated at stage) serves either plan: the choice is made at compute."""
    with _loaded() as (backend, key, witness):
        fp = key.footprint
        fake.fake.events_pending = True
        staged = backend.stage(key, witness)
        plans = [fp.plan_w, fp.plan_h, fp.early_w, fp.early_h]
        assert staged.state.sort.sorted.nbytes >= 4 * max(p.max_entries for p in plans)
        assert staged.state.sort.counts.nbytes >= 4 * (max(p.keys for p in plans) + 1)
        fake.fake.events_pending = False
        core = backend.compute(staged).wait()
        assert core.timings["gpu_fold"] == fp.fold and sorts == _proof_sorts(fp.plan_w, fp.plan_h, key.domain)


def test_a_batch_before_the_tables_runs_fold_1_for_every_proof(fake, sorts):
    with _loaded() as (backend, key, witness):
        fp = key.footprint
        backend.maintain()
        assert backend.max_batch(key) >= 3
        fake.fake.events_pending = True
        start = len(fake.log)
        cores = [p.wait() for p in backend.compute_batch([backend.stage(key, witness) for _ in range(3)])]
        assert [c.timings["gpu_fold"] for c in cores] == [1, 1, 1]
        assert [(p.fold, p.batch, p.c) for p in sorts] == [(1, 3, fp.early_h.c), (1, 3, fp.early_w.c)]
        assert key.tables_done.handle not in _waited(fake, start)
        fake.fake.events_pending = False
        sorts.clear()
        cores = [p.wait() for p in backend.compute_batch([backend.stage(key, witness) for _ in range(2)])]
        assert [c.timings["gpu_fold"] for c in cores] == [fp.fold] * 2 and sorts[0].fold == fp.plan_h.fold


def test_a_key_without_tables_has_no_tables_event_and_one_plan(fake, sorts):
    with _loaded(fold=1, tier="resident") as (backend, key, witness):
        assert key.tables_done is None and key.footprint.early_w is None and key.tables_built()
        fake.fake.events_pending = True
        core = backend.prove_core(key, witness)
        assert key.footprint.b2_stream  # fold 1 is no small plan: B2's own stream by grant (the fake budget holds it)
        assert core.timings["gpu_fold"] == 1 and sorts == _proof_sorts(key.plan_w, key.plan_h, granted=True)
        assert (key.ready.handle,) not in fake.since(0, "cuEventQuery")  # (the waiter polls its proof's own)


def test_closing_a_key_orders_its_frees_after_the_tables(fake):
    zkey, _ = _tiny("bn128")
    backend = _backend()
    try:
        key = backend.load_key(zkey)
        tables = key.tables_done.handle
        upload = backend.ctx.upload_stream.handle
        fake.fake.events_pending = True
        start = len(fake.log)
        backend.unload_key(key)
        calls = [(n, a) for n, a, _ in fake.log[start:]]
        wait = calls.index(("cuStreamWaitEvent", (upload, tables, 0)))
        frees = [i for i, (n, _) in enumerate(calls) if n == "cuMemFreeAsync"]
        assert frees and wait < frees[0]
        assert all(a[1] == upload for n, a in calls if n == "cuMemFreeAsync")
    finally:
        backend.close()
    assert not fake.fake.live_events


def test_a_load_that_fails_after_tables_were_queued_waits_for_them_before_freeing(fake, monkeypatch):
    from engine.backends.gpu import msm as gmsm
    from engine.backends.gpu import staging
    from engine.errors import DeviceError

    monkeypatch.setattr(staging, "DIRECT_BYTES", 0)
    monkeypatch.setattr(staging, "BUFFERS", 2)
    zkey, _ = _tiny("bn128")
    backend = _backend()
    real = gmsm.precompute
    sides, failed_at = [], []

    def failing(mod, group, plan, buf, stream):
        real(mod, group, plan, buf, stream)
        sides.append(stream.handle)
        if len(sides) == 2:  # A's and B1's tables are queued, then the device fails
            failed_at.append(len(fake.log))
            raise DeviceError("injected fault after the tables' kernels were queued")

    try:
        backend.prepare_key(zkey)
        backend.maintain()
        backend.ctx.module(zkey.curve)
        before = dict(fake.fake.live_device)
        monkeypatch.setattr(gmsm, "precompute", failing)
        start = len(fake.log)
        with pytest.raises(DeviceError, match="injected"):
            backend.load_key(zkey)
        calls = [(n, a) for n, a, _ in fake.log[failed_at[0]:]]  # from the fault on: the key's frees
        synced = calls.index(("cuStreamSynchronize", (sides[0],)))
        frees = [i for i, (n, _) in enumerate(calls) if n == "cuMemFreeAsync"]
        assert frees and synced < frees[0]
        assert fake.fake.live_device == before and backend.ctx.pinned.free_count() == 2
        monkeypatch.setattr(gmsm, "precompute", real)
        backend.unload_key(backend.load_key(zkey))  # and the next load works
    finally:
        backend.close()
    assert not fake.fake.live_device and not fake.fake.live_events and not fake.fake.live_streams


def test_the_working_set_covers_the_fold_1_plans_of_a_building_key():
    from engine.algebra.curves import curve_by_name
    from engine.backends.gpu import footprint as fpm
    from engine.backends.gpu import msm as gmsm

    shape = fpm.KeyShape(curve_by_name("bn128"), (1 << 22) + (1 << 22) // 100 + 3, 1 << 23, 2 << 22, 1 << 22, 2)
    fp = fpm.resident_footprint(shape, "full", 1 << 40, 1, 132)
    assert fp.fold > 1 and fp.early_w == gmsm.plan_msm(shape.n_wires, 254, 1)
    full_only = fpm.proof_working_set(shape.curve, shape.n_wires, shape.domain, fp.plan_w, fp.plan_h, 132)
    early_only = fpm.proof_working_set(shape.curve, shape.n_wires, shape.domain, fp.early_w, fp.early_h, 132)
    assert fp.working_set_bytes >= max(full_only, early_only) and fp.all_plans()[1] == (fp.early_w, fp.early_h)
    one = fpm.resident_footprint(shape, 1, 1 << 40, 1, 132)
    assert one.early_w is None and one.all_plans() == [(one.plan_w, one.plan_h)]
    assert one.working_set_bytes == fpm.proof_working_set(shape.curve, shape.n_wires, shape.domain, one.plan_w,
                                                          one.plan_h, 132)


# ---------------------------------------------------------------- on the device

def _cuda() -> int:
    from engine.backends.select import cuda_device_count

    return cuda_device_count()


def _hold_tables(monkeypatch, device, points: int = 1 << 21) -> list[str]:
    """Each point array's tables queue behind a long precompute over a scratch buffer of `points`
    non-zero points on the same stream (about 0.1 s each on an H200): proofs right after load_key
    then certainly start while the tables build.  Returns the groups held so far."""
    from cuda_kernels.driver import Device
    from engine.backends.gpu import msm as gmsm

    real = gmsm.precompute
    calls: list[str] = []

    def held(mod, group, plan, buf, stream):
        if plan.fold > 1:
            words = buf.nbytes // (plan.fold * plan.n) // 4  # 32-bit words a point
            scratch = device.alloc(points * plan.fold * words * 4, stream)
            Device.memset32(scratch, 0x01010101, points * words, stream)  # table 0: points, none at infinity
            real(mod, group, gmsm.MsmPlan(points, plan.c, plan.windows, plan.fold, plan.scalar_bits), scratch, stream)
            Device.free(scratch, stream)
            calls.append(group)
        real(mod, group, plan, buf, stream)

    monkeypatch.setattr(gmsm, "precompute", held)
    return calls


@pytest.mark.gpu
@pytest.mark.skipif(_cuda() == 0, reason="no CUDA device on this machine")
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_proofs_while_the_tables_build_are_the_proofs_of_the_built_key(monkeypatch, curve):
    from engine.backends.gpu import GpuBackend
    from engine.groth16.prover import prove, verify_or_raise
    from engine.groth16.verifier import vk_from_zkey

    z = read_zkey(ROOT / "examples" / curve / "sudoku.zkey")
    w = np.asarray(read_wtns(ROOT / "examples" / curve / "sudoku.wtns").values)
    vk = vk_from_zkey(z)
    backend = GpuBackend(key_cache_dir=False)
    calls = _hold_tables(monkeypatch, backend.ctx.device)
    try:
        built = backend.load_key(z)
        backend.prove_core(built, w)  # warm: module, pinned pool
        built.synchronize()
        reference = backend.prove_core(built, w)
        assert reference.timings["gpu_fold"] == built.footprint.fold > 1 and reference.verified is True

        key = backend.load_key(z)
        assert calls and not key.tables_built()  # the tables are still building behind the long kernels
        early = backend.prove_core(key, w)
        proof = prove(z, w, backend, key, vk=vk)  # the device's check passed, or it raised
        batch = [p.wait() for p in backend.compute_batch([backend.stage(key, w) for _ in range(2)])]
        assert not key.tables_built()  # all of them ran beside the tables
        for core in (early, *batch):
            assert core.timings["gpu_fold"] == 1 and core.verified is True
            for name in ("pi_a0", "pi_b1_0", "pi_b2_0", "pi_c0", "pi_h"):
                assert getattr(core, name) == getattr(reference, name), name
        assert proof.timings["gpu_fold"] == 1
        verify_or_raise(vk, proof)  # and the CPU verifier accepts it
        key.synchronize()
        assert key.tables_built()
        after = backend.prove_core(key, w)
        assert after.timings["gpu_fold"] == key.footprint.fold and after.verified is True
        assert after.pi_b2_0 == reference.pi_b2_0 and after.pi_h == reference.pi_h
        closing = backend.load_key(z)  # closed while its tables build: its frees wait for them
        backend.unload_key(closing)
        for k in (built, key):
            backend.unload_key(k)
        last = backend.load_key(z)
        verify_or_raise(vk, prove(z, w, backend, last, vk=vk))  # the device still serves
        backend.unload_key(last)
    finally:
        backend.close()


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_key_loaded_for_one_proof_makes_it_wait_for_the_tables_its_plan_paid_for(fake, sorts, curve):
    """The CLI's load (proofs_per_load = 1) chose the fold by counting the tables' build against its one proof's
    MSMs: that proof takes the full fold and its streams wait for the tables, where before it took the fold-1
    plans whenever the tables were a few milliseconds late (the 2^14-domain CLI proof: 21-22 against 14 ms of
    its own on the H200, perf/RESULTS.md session 31) and the build was paid for nothing."""
    zkey, witness = _tiny(curve)
    backend = _backend()
    backend.proofs_per_load = 1
    try:
        key = backend.load_key(zkey)
        fp = key.footprint
        assert fp.fold > 1 and fp.tables_awaited and key.tables_done is not None
        fake.fake.events_pending = True  # the tables' kernels still run
        start = len(fake.log)
        core = backend.prove_core(key, witness)
        assert core.timings["gpu_fold"] == fp.fold and sorts == _proof_sorts(fp.plan_w, fp.plan_h, key.domain)
        assert {key.ready.handle, key.tables_done.handle} <= _waited(fake, start)  # on the device, not the host
        assert key.tables_done.handle not in {a[0] for a in fake.since(start, "cuEventSynchronize")}
        fake.fake.events_pending = False
        backend.unload_key(key)
    finally:
        backend.close()
    backend = _backend()  # a service's load (proofs unknown): the early proofs keep the fold-1 plans
    try:
        key = backend.load_key(zkey)
        assert not key.footprint.tables_awaited
        fake.fake.events_pending = True
        sorts.clear()
        assert backend.prove_core(key, witness).timings["gpu_fold"] == 1
        fake.fake.events_pending = False
        backend.unload_key(key)
    finally:
        backend.close()
