"""A batch of proofs in one launch set (engine/backends/gpu/batch.py) on the device, both curves.

The batched front kernels (cuda_kernels/front_batch.cuh: blockIdx.y = the proof) against the CPU
reference slice by slice on seeded random inputs with edge values (0, 1, r - 1), at sizes that
run one pass, two passes and a lone-level pass; the batched evaluate against the single kernel on
each slice (that one is checked against the CPU in test_gpu_kernels.py); and a batch's tails, one
launch of k blocks a phase: a corrupted sum gives that proof, and only that one, a failed check.
Marked `gpu`: skipped only when no CUDA device exists.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import FIXTURES
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.limbs import from_ints, to_ints
from engine.algebra.ntt import ntt as cpu_ntt
from engine.backends.select import cuda_device_count
from engine.formats import read_wtns, read_zkey

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]
BATCH = 3


@pytest.fixture(scope="module")
def backend():
    from engine.backends.gpu import GpuBackend

    b = GpuBackend()
    yield b
    b.close()


@pytest.fixture(params=[BN254, BLS12_381], ids=lambda c: c.name)
def curve(request):
    return request.param


def _vectors(curve, n: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(BATCH):
        v = [rng.randrange(curve.r) for _ in range(n)]
        v[: min(n, 3)] = [0, 1, curve.r - 1][: min(n, 3)]
        out.append(v)
    return out


def _run(backend, curve, host: np.ndarray, fn) -> list[list[int]]:
    """Upload the BATCH vectors (rows of `host`), run fn(mod, stream, buf), download them."""
    from cuda_kernels.driver import Device

    backend.bind_thread()
    mod, stream, dev = backend.ctx.module(curve), backend.ctx.compute_stream(0), backend.device
    buf = dev.alloc(host.nbytes, stream)
    Device.upload(buf, np.ascontiguousarray(host), stream)
    extra = fn(mod, stream, dev, buf) or []
    out = np.empty_like(host)
    Device.download(out, buf, stream)
    for b in [buf, *extra]:
        Device.free(b, stream)
    stream.synchronize()
    n = host.shape[0] // BATCH
    return [to_ints(out[j * n:(j + 1) * n]) for j in range(BATCH)]


@pytest.mark.parametrize("k", [1, 2, 5, 10, 11, 13])
def test_batched_ntt_passes_match_cpu_coset_transform(backend, curve, k):
    """dif (w^-1, the coset factors g^j / n fused) then dit (w), as the prover runs them, on BATCH
    vectors at once: each slice the evaluations on the coset of its interpolant."""
    from engine.backends.gpu import ntt as gntt

    n = 1 << k
    vecs = _vectors(curve, n, seed=k)
    host = np.concatenate([from_ints(v, 4) for v in vecs])

    def fn(mod, stream, dev, buf):
        tables = gntt.build_tables(dev, mod, curve, k, stream, coset=True)
        gntt.dif(mod, buf, tables, stream, inverse=True, scale=tables.coset, batch=BATCH)
        gntt.dit(mod, buf, tables, stream, inverse=False, batch=BATCH)
        stream.synchronize()
        tables.free(stream)

    got = _run(backend, curve, host, fn)
    for j, v in enumerate(vecs):
        assert got[j] == cpu_ntt(curve, cpu_ntt(curve, v, inverse=True), coset=True), f"vector {j}"


@pytest.mark.parametrize("k", [1, 4, 12])
def test_batched_quotient_matches_cpu(backend, curve, k):
    """h = (a b R^-1 - c) R^-1 mod r (Montgomery operands, plain result) on each slice, in place over c."""
    from cuda_kernels.driver import U32, launch

    n = 1 << k
    a, b, c = (_vectors(curve, n, seed=100 * k + i) for i in range(3))
    stack = [np.concatenate([from_ints(v, 4) for v in x]) for x in (a, b)]

    def fn(mod, stream, dev, buf):
        from cuda_kernels.driver import Device

        bufs = []
        for h in stack:
            bufs.append(dev.alloc(h.nbytes, stream))
            Device.upload(bufs[-1], h, stream)
        launch(mod, "quotient_h_batch", (-(-n // 256), BATCH, 1), 256, stream, bufs[0], bufs[1], buf, U32(n), buf)
        return bufs

    got = _run(backend, curve, np.concatenate([from_ints(v, 4) for v in c]), fn)
    r, rinv = curve.r, pow(1 << 256, -1, curve.r)
    for j in range(BATCH):
        assert got[j] == [(x * y * rinv - z) * rinv % r for x, y, z in zip(a[j], b[j], c[j])], f"vector {j}"


@pytest.mark.parametrize("name", ["bn128", "bls12381"])
def test_batched_evaluate_matches_the_single_kernel_on_each_witness(backend, name):
    from cuda_kernels.driver import Device, U32, launch

    zkey = read_zkey(FIXTURES / "tiny" / name / "tiny.zkey")
    curve = zkey.curve
    key = backend.load_key(zkey)
    key.synchronize()  # its CSR is built by kernels on the upload stream: this stream does not wait on `ready`
    try:
        backend.bind_thread()
        mod, stream, dev = key.module, backend.ctx.compute_stream(0), backend.device
        n, wires = key.domain, key.n_wires
        rng = random.Random(5)
        wits = [from_ints([rng.choice([0, 1, curve.r - 1, rng.randrange(curve.r)]) for _ in range(wires)], 4)
                for _ in range(BATCH)]
        w_all = dev.alloc(BATCH * wires * 32, stream)
        Device.upload(w_all, np.concatenate(wits), stream)
        out = [dev.alloc(BATCH * n * 32, stream) for _ in range(3)]
        one = [dev.alloc(n * 32, stream) for _ in range(3)]
        (rp_a, wa, ca), (rp_b, wb, cb) = key.csr
        launch(mod, "evaluate_ab_batch", (-(-n // 256), BATCH, 1), 256, stream, rp_a, wa, ca, rp_b, wb, cb, w_all,
               U32(wires * 8), U32(n), *out)
        got = [np.empty((BATCH * n, 4), np.uint64) for _ in range(3)]
        for g, o in zip(got, out):
            Device.download(g, o, stream)
        for j in range(BATCH):
            launch(mod, "evaluate_ab", -(-n // 256), 256, stream, rp_a, wa, ca, rp_b, wb, cb, w_all.ptr + j * wires * 32,
                   U32(n), *one)
            want = [np.empty((n, 4), np.uint64) for _ in range(3)]
            for w, o in zip(want, one):
                Device.download(w, o, stream)
            stream.synchronize()
            for g, w in zip(got, want):
                assert np.array_equal(g[j * n:(j + 1) * n], w), f"witness {j}"
        for b in [w_all, *out, *one]:
            Device.free(b, stream)
        stream.synchronize()
    finally:
        key.close()


@pytest.mark.parametrize("slot", [0, 2, 4])  # A, B2, H
@pytest.mark.parametrize("name", ["bn128", "bls12381"])
def test_a_corrupted_sum_in_a_batch_fails_that_proof_alone(backend, name, slot):
    """Proof 2 of a batch of 4 gets one word of one MSM sum overwritten on the device: its check
    fails, the other three verify (on the device and by the CPU verifier), each with its own r, s."""
    from cuda_kernels.driver import Device
    from engine.groth16.proof import Proof
    from engine.groth16.prover import public_signals
    from engine.groth16.verifier import verify, vk_from_zkey

    d = FIXTURES / "tiny" / name
    zkey = read_zkey(d / "tiny.zkey")
    values = read_wtns(d / "tiny.wtns").values
    key = backend.load_key(zkey)
    calls = {"a_b1_c_h": 0, "b2": 0}
    bad = 2

    def corrupt(results, slot_bytes, stream, after):
        if (slot == 2) == (after == "b2") and calls[after] == bad:
            Device.memset32(results.ptr + slot * slot_bytes, 0x1234567, 1, stream)
        calls[after] += 1

    backend.fault_hook = corrupt
    try:
        assert backend.max_batch(key) >= 4
        cores = [p.wait() for p in backend.compute_batch([backend.stage(key, values) for _ in range(4)])]
    finally:
        backend.fault_hook = None
        key.close()
    assert calls == {"a_b1_c_h": 4, "b2": 4}  # each proof's sums handed to the hook once each time
    assert [c.verified for c in cores] == [j != bad for j in range(4)]
    vk, public = vk_from_zkey(zkey), public_signals(zkey, values)
    good = [c for j, c in enumerate(cores) if j != bad]
    assert len({c.proof[0] for c in good}) == 3  # fresh r, s each
    for c in good:
        assert c.timings["gpu_batch"] == 4
        assert verify(vk, public, Proof(zkey.curve, *c.proof, public, {}))
