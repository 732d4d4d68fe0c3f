"""Keys on the GPU under a budget: the footprint's byte counts are the allocations, and the host
tier (bases streamed from pinned host memory in chunks) gives the resident path's MSMs and proofs.

The tests marked `gpu` are skipped only when no CUDA device exists; the host tier's failure paths
also run on the CPU over tests/fake_cuda.py (kernels do nothing there; the accounting is checked).
"""
from __future__ import annotations

import random

import pytest

from conftest import FIXTURES
from engine.backends.select import cuda_device_count


def gpu(test):
    return pytest.mark.gpu(pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine")(test))


GiB = 1 << 30
SEED = 18


@pytest.fixture(scope="module", params=["bn128", "bls12381"])
def bench(request):
    """A 2^12-constraint bench circuit, its witness and a development key made on the GPU."""
    from engine.algebra.curves import curve_by_name
    from engine.groth16.bench_circuit import make_bench_circuit
    from engine.groth16.setup import select_setup_ops, setup

    curve = curve_by_name(request.param)
    circuit = make_bench_circuit(curve, 1 << 12, seed=SEED)
    zkey = setup(circuit.r1cs, select_setup_ops("gpu"))
    return zkey, circuit.witness


@pytest.fixture(scope="module")
def backends():
    """One backend per way of holding a key (each its own context on device 0)."""
    from engine.backends.gpu import GpuBackend

    made = {}

    def get(**options):
        name = tuple(sorted(options.items()))
        if name not in made:
            made[name] = GpuBackend(**options)
        return made[name]

    yield get
    for b in made.values():
        b.close()


def scalars_from(seed):
    rng = random.Random(seed)
    return lambda r: rng.randrange(1, r)


def prove_with(backend, zkey, witness, seed=1):
    """(footprint, core, proof): `proof` is the CPU epilogue of the core's MSM sums with seeded r, s
    (verified), so that tiers compare byte for byte; a resident key's own proof (the device tail,
    r and s from the OS) must verify too, a host-tier key's proof ends on the CPU."""
    import dataclasses

    from engine.groth16.prover import finish, prove

    key = backend.load_key(zkey)
    try:
        core = backend.prove_core(key, witness)
        own = prove(zkey, witness, backend, key)  # verified (on the device or the CPU) before it returns
        assert (core.proof is None) == (key.footprint.tier == "host") and own.pi_a is not None
        sums = dataclasses.replace(core, proof=None, verified=None)
        return key.footprint, core, finish(zkey, sums, witness, scalars=scalars_from(seed))
    finally:
        backend.unload_key(key)


@gpu
@pytest.mark.parametrize("chunk", [97, 1000, 1 << 20])
def test_host_tier_gives_the_resident_msms_and_proof_bytes(bench, backends, chunk):
    zkey, witness = bench
    fp_r, core_r, proof_r = prove_with(backends(), zkey, witness)
    fp_h, core_h, proof_h = prove_with(backends(tier="host", host_chunk=chunk), zkey, witness)
    assert fp_r.tier == "resident" and fp_h.tier == "host"
    for name in ("pi_a0", "pi_b1_0", "pi_b2_0", "pi_c0", "pi_h"):
        assert getattr(core_h, name) == getattr(core_r, name), f"{name} differs (seed {SEED}, chunk {chunk})"
    assert proof_h.to_json() == proof_r.to_json()  # same r, s: the same proof bytes


@gpu
@pytest.mark.parametrize("fold", [1, 2, "full"])
def test_every_fold_gives_the_same_msms(bench, backends, fold):
    zkey, witness = bench
    _, core_ref, _ = prove_with(backends(fold=1), zkey, witness)
    fp, core, proof = prove_with(backends(fold=fold), zkey, witness)
    assert fp.tier == "resident" and (fold == "full" or fp.fold == fold)
    assert (core.pi_a0, core.pi_b2_0, core.pi_c0, core.pi_h) == (core_ref.pi_a0, core_ref.pi_b2_0, core_ref.pi_c0,
                                                                  core_ref.pi_h)


@gpu
@pytest.mark.parametrize("options", [{}, {"fold": 1}, {"tier": "host", "host_chunk": 1000}])
def test_footprint_counts_are_the_allocations(bench, backends, options):
    zkey, _ = bench
    backend = backends(**options)
    key = backend.load_key(zkey)
    try:
        fp = key.footprint
        assert backend.resident_bytes(key) == fp.device_bytes
        assert backend.host_resident_bytes(key) == fp.host_bytes
        assert backend.working_set_bytes(key) == fp.working_set_bytes
    finally:
        backend.unload_key(key)


@gpu
@pytest.mark.parametrize("chunk", [1, 3])
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_tiny_keys_one_point_chunks_and_tails(backends, curve, chunk):
    from engine.formats import read_wtns, read_zkey

    d = FIXTURES / "tiny" / curve
    zkey, w = read_zkey(d / "tiny.zkey"), read_wtns(d / "tiny.wtns")
    _, core_r, proof_r = prove_with(backends(), zkey, w.values)
    fp, core_h, proof_h = prove_with(backends(tier="host", host_chunk=chunk), zkey, w.values)
    assert fp.tier == "host" and fp.chunk_w == chunk
    assert (core_h.pi_a0, core_h.pi_b1_0, core_h.pi_b2_0, core_h.pi_c0, core_h.pi_h) == (
        core_r.pi_a0, core_r.pi_b1_0, core_r.pi_b2_0, core_r.pi_c0, core_r.pi_h)
    assert proof_h.to_json() == proof_r.to_json()  # verified inside prove() by our verifier


@gpu
async def test_engine_picks_the_host_tier_from_a_tight_budget_and_proofs_verify(bench, backends, tmp_path):
    from engine.api import Engine
    from engine.backends.gpu import footprint as fpm
    from engine.config import EngineConfig
    from engine.formats.zkey import write_zkey
    from engine.groth16.verifier import verify, vk_from_zkey

    zkey, witness = bench
    path = tmp_path / "bench.zkey"
    write_zkey(path, zkey)
    shape, sm = fpm.KeyShape.of(zkey), backends().device.sm_count
    smallest_resident = min(fp.device_bytes + fp.working_set_bytes
                            for fp in (fpm.resident_footprint(shape, f, 0, 1, sm) for f in fpm.FOLDS))
    budget = smallest_resident - 1  # no fold's points fit beside one proof
    host_budget = 4 * GiB
    config = EngineConfig(backend="gpu", vram_budget=budget, host_budget=host_budget, synthesis_workers=1,
                          idle_trim_s=None)
    async with Engine(config) as eng:
        key = await eng.load_key(path)
        assert key.tier == "host" and key.key_host_bytes == shape.bases_bytes()
        # the host budget holds the pinned bases and the proofs' pinned buffers, pinned after the load
        pinned = eng.devices[0].backend.host_pinned_bytes()
        assert eng.host.capacity(0) == host_budget - shape.bases_bytes() - pinned
        assert key.key_device_bytes + key.proofs_in_flight * key.working_set_bytes <= budget
        proofs = await eng.prove(key, partitions=[witness] * 4)
        assert eng.at_rest()
        await eng.unload_key(key)
        assert eng.host.capacity(0) == host_budget and eng.vram.capacity(0) == budget
    vk = vk_from_zkey(zkey)
    assert all(verify(vk, p.public, p) for p in proofs)


@gpu
async def test_engine_refuses_a_budget_below_key_plus_one_proof_before_any_upload(bench, tmp_path):
    from engine.api import Engine
    from engine.config import EngineConfig
    from engine.errors import BudgetError
    from engine.formats.zkey import write_zkey

    zkey, _ = bench
    path = tmp_path / "bench.zkey"
    write_zkey(path, zkey)
    async with Engine(EngineConfig(backend="gpu", vram_budget=1 << 16, idle_trim_s=None)) as eng:
        with pytest.raises(BudgetError, match=r"too small for this key plus one proof"):
            await eng.load_key(path)
        assert eng.vram.capacity(0) == 1 << 16 and eng.at_rest()


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_host_tier_failure_paths_free_everything_on_a_fake_driver(curve):
    """Every injected fault of stage and compute (issue 14 item 11's cases) on a host-tier key: the
    pool, the pinned buffers and the events come back, and closing frees the pinned bases."""
    from fake_cuda import fake_driver
    from test_gpu_failure_paths import _backend, _check_every_fault

    with fake_driver() as fake:
        backend = _backend(fake=True)
        backend.tier, backend.host_chunk = "host", 2
        events_before, idle_before = len(fake.live_events), backend.ctx.events.idle_count()
        _check_every_fault(backend, curve, fake)
        # the unloaded key's ready event went too; the proofs' are back in the context's pool, idle
        assert len(fake.live_events) - backend.ctx.events.idle_count() == events_before - idle_before
        backend.close()
        assert not fake.live_device and not fake.live_pinned


@pytest.mark.parametrize("nth", [1, 2, 3, 4, 5])
def test_a_host_tier_proofs_staging_leaks_no_event_when_one_cannot_be_made(nth):
    """HostTier.stage makes five events: a cuEventCreate failing at any of them raises, and the ones made
    before it are destroyed (they leaked before: the pipeline's fault sweep reached them once the proofs'
    own events came from the context's pool)."""
    from cuda_kernels import driver  # noqa: PLC0415
    from engine.errors import DeviceError  # noqa: PLC0415
    from engine.formats import read_zkey  # noqa: PLC0415
    from fake_cuda import fake_driver  # noqa: PLC0415
    from test_gpu_failure_paths import _backend  # noqa: PLC0415

    with fake_driver() as fake:
        backend = _backend(fake=True)
        backend.tier, backend.host_chunk = "host", 2
        key = backend.load_key(read_zkey(FIXTURES / "tiny" / "bn128" / "tiny.zkey"))
        stream = backend.ctx.upload_stream
        events_before = set(fake.live_events)
        with driver.Device.recording() as bufs:
            with driver.inject_fault("cuEventCreate", nth), pytest.raises(DeviceError):
                key.host.stage(backend.ctx.device, stream)
        assert set(fake.live_events) == events_before
        for b in bufs:
            driver.Device.free(b, stream)
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device and not fake.live_events


@gpu
async def test_two_host_tier_proofs_compute_at_once_each_streaming_its_own_bases(bench, monkeypatch, tmp_path):
    """compute_slots "auto" shares the device for a host-tier key whose budget holds a third working set
    at the same chunks (scheduler/compute_share.py): two proofs stream side by side, each through its own
    staging buffers and copy stream, and every proof verifies."""
    import anyio

    from engine.api import Engine
    from engine.backends.gpu import GpuBackend
    from engine.config import EngineConfig
    from engine.formats.zkey import write_zkey
    from engine.groth16.verifier import verify, vk_from_zkey
    from scheduler import compute_share
    from scheduler.timeline import Stage

    monkeypatch.setattr(compute_share, "MIN_SHARED_MSM_S", 0.0)  # a 2^12 key's proofs are short
    zkey, witness = bench
    path = tmp_path / "bench.zkey"
    write_zkey(path, zkey)
    backend = GpuBackend(tier="host", host_chunk=1 << 10)  # four witness chunks a proof
    config = EngineConfig(backend="gpu", vram_budget=GiB, host_budget=4 * GiB, synthesis_workers=2, idle_trim_s=None)
    spans, starts = [], {}

    def watch(event):
        if event.stage == Stage.GPU_START:
            starts[(event.job, event.partition)] = event.t_ns
        elif event.stage == Stage.GPU_END:
            spans.append((starts.pop((event.job, event.partition)), event.t_ns))

    async with Engine(config, backends=[backend]) as eng:
        eng.timeline.add_sink(watch)
        key = await eng.load_key(path)
        assert key.tier == "host" and key.proofs_in_flight == 3 and key.proofs_computing == 2
        proofs = []

        async def job():
            proofs.extend(await eng.prove(key, partitions=[witness] * 4))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(job)
        copies = len(key._record.resident[0].host.copy_streams)
        await eng.unload_key(key)
        assert eng.at_rest()
    vk = vk_from_zkey(zkey)
    assert len(proofs) == 12 and all(verify(vk, p.public, p) for p in proofs)
    spans.sort()
    assert any(b0 < a1 for (_, a1), (b0, _) in zip(spans, spans[1:])), "no two proofs computed at once"
    assert copies == 2  # one copy stream a compute slot


@pytest.mark.parametrize("fixture, curve, chunk, over", [
    ("tiny", "bn128", 1, 1), ("tiny", "bn128", 2, 0), ("tiny", "bls12381", 1, 1), ("interop", "bn128", 2, 2),
    ("interop", "bls12381", 130, 2)])
def test_host_tier_staging_over_a_and_b_costs_no_memory_and_waits_for_the_front(fixture, curve, chunk, over):
    """A host-tier proof's staging buffers lie over its a and b where they fit (dead once h is made): the
    memory phase allocates only the others, the footprint counts only those, and every upload into a buffer
    over a and b comes after the front's last kernel, while one into a buffer of its own may overlap the front."""
    from engine.backends.gpu import footprint as fpm  # noqa: PLC0415
    from engine.formats import read_wtns, read_zkey  # noqa: PLC0415
    from fake_cuda import fake_driver  # noqa: PLC0415
    from stream_order import StreamOrder  # noqa: PLC0415
    from test_gpu_tail_fake import _backend  # noqa: PLC0415

    d = FIXTURES / fixture / curve
    stem = "tiny" if fixture == "tiny" else "power_table"
    zkey, witness = read_zkey(d / f"{stem}.zkey"), read_wtns(d / f"{stem}.wtns").values
    with fake_driver() as fake:
        order = StreamOrder(fake)
        backend = _backend(tier="host", host_chunk=chunk)
        key = backend.load_key(zkey)
        assert fpm.staging_over_front(key.domain, key.host.chunk_bytes) == key.footprint.staging_over_front == over
        said = {0: "", 1: "(one of its two staging buffers over its a and b)",
                2: "(both its staging buffers over its a and b)"}
        assert said[over] in key.footprint.describe() and (over or "staging buffers" not in key.footprint.describe())
        before = sum(fake.live_device.values())
        staged = backend.stage(key, witness)
        taken = sum(fake.live_device.values()) - before
        st, ws = staged.state, backend.working_set_bytes(key)
        assert ws == key.footprint.working_set_bytes and ws - fpm.alloc_slack() <= taken <= ws
        hp = st.streaming
        lo, hi = st.a.ptr, st.b.ptr + st.b.nbytes
        laid = [buf for buf in hp.staging if lo <= buf.ptr and buf.ptr + buf.nbytes <= hi]
        assert hp.over_front == len(laid) == over and len({buf.ptr for buf in hp.staging}) == 2
        n0 = len(order.launches)
        backend.compute(staged).wait()
        run = order.launches[n0:]
        (quotient,) = [x for x in run if x.name == "quotient_h"]
        uploads = [x for x in run if x.name == "upload"]
        assert len(uploads) == len(key.host.chunks_h) + 4 * len(key.host.chunks_w)
        for up in uploads:
            if lo <= up.first_arg < hi:
                assert order.before(quotient, up)
        if over < 2:  # the first chunk goes to a buffer of its own: its copy may run beside the front
            assert not order.before(quotient, uploads[0]) and not lo <= uploads[0].first_arg < hi
        backend.unload_key(key)
        backend.close()
        assert not fake.live_device and not fake.live_events
