"""The epilogue and the self-check on the device: proofs that verify, a fault that is caught, batches.

Marked `gpu`: skipped only when no CUDA device exists.  The CPU verifier
(engine/groth16/verifier.py) is the independent judge of every proof made here.
"""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from engine.backends.select import cuda_device_count
from engine.errors import VerificationError
from engine.formats import read_wtns, read_zkey
from engine.groth16.proof import Proof
from engine.groth16.prover import checked_on_device, prove
from engine.groth16.verifier import verify, vk_from_zkey

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]


@pytest.fixture(scope="module")
def backend():
    from engine.backends.gpu import GpuBackend

    b = GpuBackend()
    yield b
    b.close()


@pytest.fixture(params=["bn128", "bls12381"])
def loaded(request, backend):
    d = FIXTURES / "tiny" / request.param
    zkey = read_zkey(d / "tiny.zkey")
    key = backend.load_key(zkey)
    yield zkey, key, read_wtns(d / "tiny.wtns").values
    key.close()


def test_device_epilogue_proofs_verify_on_the_cpu(backend, loaded):
    zkey, key, values = loaded
    vk = vk_from_zkey(zkey)
    proofs = [prove(zkey, values, backend, key) for _ in range(3)]
    assert len({p.pi_a for p in proofs}) == 3  # fresh r, s each time
    for p in proofs:
        assert checked_on_device(p)
        assert {"gpu_check", "side_early", "side_mid"} <= set(p.timings)
        assert "epilogue" not in p.timings and "verify" not in p.timings  # no host EC arithmetic, no CPU check
        assert verify(vk, p.public, p)


def test_core_result_carries_the_device_verdict(backend, loaded):
    zkey, key, values = loaded
    core = backend.prove_core(key, values)
    assert core.verified is True and core.proof is not None


def test_device_epilogue_with_edge_blinding_scalars(backend, loaded, monkeypatch):
    """r and s at the edges of the mid phase's GLV split (0, 1, r - 1, lambda, both halves
    negative): every proof still verifies on the CPU."""
    import random

    from engine.algebra import glv
    from engine.backends.gpu import epilogue as gepi

    zkey, key, values = loaded
    curve = zkey.curve
    lam = glv.endomorphism(curve)[1]
    rng = random.Random(3)
    both_neg = next(k for k in (rng.randrange(curve.r) for _ in range(1000)) if glv.split_words(curve, k)[1] == 3)
    pairs = [(0, 0), (1, curve.r - 1), (lam, both_neg), (curve.r - lam, 1 << 127)]
    draws = iter([x for pair in pairs for x in pair])
    real = gepi.blinding_scalars
    monkeypatch.setattr(gepi, "blinding_scalars", lambda c: real(c, draw=lambda _n: next(draws)))
    vk = vk_from_zkey(zkey)
    for _ in pairs:
        p = prove(zkey, values, backend, key)
        assert checked_on_device(p) and verify(vk, p.public, p)


@pytest.mark.parametrize("slot", [0, 1, 2, 3, 4])  # A, B1, B2, C, H
def test_corrupted_msm_result_on_device_gives_verification_error(backend, loaded, slot):
    from cuda_kernels.driver import Device

    zkey, key, values = loaded

    def corrupt(results, slot_bytes, stream, after):  # overwrite the first word of one MSM sum's x
        if (slot == 2) == (after == "b2"):
            Device.memset32(results.ptr + slot * slot_bytes, 0x1234567, 1, stream)

    backend.fault_hook = corrupt
    try:
        with pytest.raises(VerificationError, match="does not verify"):
            prove(zkey, values, backend, key)
        with pytest.raises(VerificationError):  # verify=False does not let a failed check through
            prove(zkey, values, backend, key, verify=False)
    finally:
        backend.fault_hook = None
    assert verify(vk_from_zkey(zkey), *_public_and(prove(zkey, values, backend, key)))  # and recovers


@pytest.mark.parametrize("pi_b,products", [("1", "1"), ("0", "1"), ("1", "0"), ("0", "0")])
def test_small_proofs_with_pi_b_beside_or_not_verify_and_catch_a_fault(backend, loaded, pi_b, products, monkeypatch):
    """The tiny keys' proofs take the small path (proof_streams.b2_beside); with pi_b made on B2's stream after B2
    (the default) and in the final phase (GROTH16_PI_B_BESIDE=0), and with the mid phase's products as MSMs
    beside (proof_streams.products_beside, the default for these domains) or as scalar products of the sums
    (GROTH16_PRODUCTS_BESIDE=0), they make proofs the CPU accepts, and a corrupted MSM sum of any of the five
    (with the products beside, B1's slot holds r B1) or of s A in the scratch is caught by the device check."""
    from cuda_kernels.driver import Device

    from engine.backends.gpu import epilogue as gepi

    monkeypatch.setenv("GROTH16_PI_B_BESIDE", pi_b)
    monkeypatch.setenv("GROTH16_PRODUCTS_BESIDE", products)
    zkey, key, values = loaded
    key.synchronize()  # its fold tables: the small path's full-fold plan (a fresh key's proofs take fold 1)
    vk = vk_from_zkey(zkey)
    for _ in range(2):
        p = prove(zkey, values, backend, key)
        assert checked_on_device(p) and verify(vk, p.public, p)
        assert "side_b2" in p.timings and ("side_pi_b" in p.timings) == (pi_b == "1")
        assert ("side_products" in p.timings) == (products == "1")
    if products == "1":  # s A, in the tail's scratch: every sum done when the join is queued ("products")
        def corrupt_s_a(results, slot_bytes, stream, after):
            if after == "products":
                Device.memset32(results.ptr + 5 * slot_bytes + gepi.glv_sum_offset(zkey.curve), 0x5A5A5A5, 1, stream)

        backend.fault_hook = corrupt_s_a
        try:
            with pytest.raises(VerificationError, match="does not verify"):
                prove(zkey, values, backend, key)
        finally:
            backend.fault_hook = None
    for slot in range(5):
        def corrupt(results, slot_bytes, stream, after, _slot=slot):
            if (_slot == 2) == (after == "b2"):
                Device.memset32(results.ptr + _slot * slot_bytes, 0x7654321, 1, stream)

        backend.fault_hook = corrupt
        try:
            with pytest.raises(VerificationError, match="does not verify"):
                prove(zkey, values, backend, key)
        finally:
            backend.fault_hook = None
    assert verify(vk, *_public_and(prove(zkey, values, backend, key)))


def _public_and(p: Proof):
    return p.public, p


def test_batched_device_check_accepts_good_and_rejects_one_bad(backend, loaded):
    zkey, key, values = loaded
    proofs = [prove(zkey, values, backend, key) for _ in range(4)]
    items = [(p.public, p) for p in proofs]
    assert backend.verify_batch(key, items)
    assert backend.verify_batch(key, items[:1])
    bad = Proof(proofs[2].curve, proofs[2].pi_a, proofs[2].pi_b, proofs[1].pi_c, proofs[2].public)
    assert not backend.verify_batch(key, items[:2] + [(bad.public, bad)] + items[3:])
    if zkey.n_public:
        wrong_public = [(v + 1) % zkey.curve.r for v in proofs[0].public]
        assert not backend.verify_batch(key, [(wrong_public, proofs[0])] + items[1:])


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("n_public", [0, 1, 4, 5, 9])
def test_device_public_input_point_with_and_without_ic_tables(backend, curve, n_public):
    """L = IC_0 + sum pub_i IC_i: from the IC points' byte tables for up to IC_TABLE_MAX public inputs
    (a warp a product), by double-and-add beyond (a thread each): bench keys on either side of the
    bound prove on the device and verify on the CPU."""
    from engine.algebra.curves import curve_by_name
    from engine.backends.gpu import epilogue as gepi
    from engine.groth16.bench_circuit import make_bench_circuit
    from engine.groth16.setup import select_setup_ops, setup

    bench = make_bench_circuit(curve_by_name(curve), 40, n_public, seed=n_public)
    zkey = setup(bench.r1cs, select_setup_ops("cpu"))
    assert gepi.ic_tables(zkey.n_public) == (n_public if n_public <= gepi.IC_TABLE_MAX else 0)
    key = backend.load_key(zkey)
    try:
        vk = vk_from_zkey(zkey)
        for _ in range(2):
            p = prove(zkey, bench.witness, backend, key)
            assert checked_on_device(p) and verify(vk, p.public, p)
    finally:
        key.close()
