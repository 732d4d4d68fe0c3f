"""Every GPU kernel against the CPU reference, on fresh random inputs and edge cases.

Marked `gpu`: skipped only when no CUDA device exists.  The CPU side is the
reference backend's own math (engine.algebra.ntt, engine.algebra.msm, engine.algebra.ec), so a
disagreement is a GPU bug or a reference bug, never a shared one.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from engine.algebra import ec
from engine.backends.select import cuda_device_count
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.limbs import from_ints, g1_to_mont, g2_to_mont, to_ints
from engine.algebra.msm import msm_g1 as cpu_msm_g1, msm_g2 as cpu_msm_g2
from engine.algebra.ntt import ntt as cpu_ntt

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]

CURVES = [BN254, BLS12_381]
FIXTURES = Path(__file__).parent / "fixtures" / "tiny"


@pytest.fixture(scope="module")
def backend():
    from engine.backends.gpu import GpuBackend

    b = GpuBackend()
    yield b
    b.close()


@pytest.fixture(params=CURVES, ids=lambda c: c.name)
def curve(request):
    return request.param


def rand_fr(curve, n, rng, edge=True):
    vals = [rng.randrange(curve.r) for _ in range(n)]
    if edge and n >= 4:
        vals[:4] = [0, 1, curve.r - 1, 2]
    return vals


def points(curve, n, rng, g2=False):
    """n distinct-ish points: random multiples of the generator, built by additions."""
    mul, add = (ec.g2_mul, ec.g2_add) if g2 else (ec.g1_mul, ec.g1_add)
    gen = curve.g2_gen if g2 else curve.g1_gen
    step = mul(curve, gen, rng.randrange(1, curve.r))
    p, out = mul(curve, gen, rng.randrange(1, curve.r)), []
    for _ in range(n):
        out.append(p)
        p = add(curve, p, step)
    return out


def points_g1(curve, n, rng):
    return points(curve, n, rng)


def points_g2(curve, n, rng):
    return points(curve, n, rng, g2=True)


def _launch_field_test(backend, curve, name, p, limbs32, a, b):
    from cuda_kernels.driver import Device, U32, launch

    backend.bind_thread()
    mod, stream = backend.ctx.module(curve), backend.ctx.compute_stream(0)
    dev = backend.device
    n = len(a)
    n64 = limbs32 // 2
    R = 1 << (32 * limbs32)
    ha = from_ints([x * R % p for x in a], n64)
    hb = from_ints([x * R % p for x in b], n64)
    da, db = dev.alloc(ha.nbytes, stream), dev.alloc(hb.nbytes, stream)
    out = dev.alloc(4 * ha.nbytes, stream)
    Device.upload(da, ha, stream)
    Device.upload(db, hb, stream)
    launch(mod, name, -(-n // 128), 128, stream, da, db, U32(n), out)
    host = np.empty((4 * n, n64), dtype=np.uint64)
    Device.download(host, out, stream)
    stream.synchronize()
    for buf in (da, db, out):
        Device.free(buf, stream)
    rinv = pow(R, -1, p)
    vals = [v * rinv % p for v in to_ints(host)]
    return [vals[4 * i:4 * i + 4] for i in range(n)]


@pytest.mark.parametrize("field", ["fr", "fq"])
def test_field_mul_add_sub_inverse_match_python(backend, curve, field):
    rng = random.Random()
    p = curve.r if field == "fr" else curve.q
    limbs32 = 8 if field == "fr" else curve.n8q // 4
    a = [rng.randrange(p) for _ in range(1000)] + [0, 1, p - 1, p - 1, 0]
    b = [rng.randrange(p) for _ in range(1000)] + [0, p - 1, p - 1, 1, 5]
    got = _launch_field_test(backend, curve, f"{field}_mul_test", p, limbs32, a, b)
    for x, y, g in zip(a, b, got):
        assert g[0] == x * y % p
        assert g[1] == (x + y) % p
        assert g[2] == (x - y) % p
        assert g[3] == (pow(x, -1, p) if x else 0)


def _launch_fr_pairs(backend, curve, name: str, ha: np.ndarray, hb: np.ndarray, out_factor: int = 1) -> np.ndarray:
    """out[i] = kernel(a[i], b[i]) for a kernel (a, b, n, out) over field elements (out_factor
    elements an i)."""
    from cuda_kernels.driver import Device, U32, launch

    backend.bind_thread()
    mod, stream, dev = backend.ctx.module(curve), backend.ctx.compute_stream(0), backend.device
    n = ha.shape[0]
    da, db = dev.alloc(ha.nbytes, stream), dev.alloc(hb.nbytes, stream)
    dout = dev.alloc(out_factor * ha.nbytes, stream)
    Device.upload(da, ha, stream)
    Device.upload(db, hb, stream)
    launch(mod, name, -(-n // 128), 128, stream, da, db, U32(n), dout)
    host = np.empty((n * out_factor, ha.shape[1]), dtype=ha.dtype)
    Device.download(host, dout, stream)
    stream.synchronize()
    for buf in (da, db, dout):
        Device.free(buf, stream)
    return host


def test_twiddle_product_matches_python(backend, curve):
    """The NTT's product by a Shoup pair (both scalar fields; the table entry built on the device
    from the Montgomery form).  The Montgomery twiddles run through test_ntt_matches_cpu."""
    rng = random.Random()
    r = curve.r
    edge = [(0, 5), (1, r - 1), (r - 1, r - 1), (r - 1, 1), (0, 0), (r - 1, 0), (2, (r + 1) // 2)]
    x = [rng.randrange(r) for _ in range(5000)] + [a for a, _ in edge]
    w = [rng.randrange(r) for _ in range(5000)] + [b for _, b in edge]
    host = _launch_fr_pairs(backend, curve, "fr_twiddle_test", from_ints(x, 4), from_ints(w, 4))
    assert to_ints(host) == [a * b % r for a, b in zip(x, w)]


@pytest.mark.parametrize("n", [1, 5, 257, 3000])
def test_scale_pair_matches_python(backend, curve, n):
    """A small proof's s w and r w (launch.py's products beside, kernels.cu fr_scale_pair): plain in, plain out,
    fully reduced; w with its edges (0, 1, r - 1), and k0, k1 at theirs in turn (0, 1, r - 1) and random."""
    from cuda_kernels.driver import Device, U32, launch

    rng = random.Random()
    r = curve.r
    w = rand_fr(curve, n, rng)
    backend.bind_thread()
    mod, stream, dev = backend.ctx.module(curve), backend.ctx.compute_stream(0), backend.device
    for k0, k1 in [(0, 1), (r - 1, 1), (rng.randrange(r), rng.randrange(r)), (1, r - 1)]:
        hw, hk = from_ints(w, 4), from_ints([k0, k1], 4)
        dw, dk, dout = dev.alloc(hw.nbytes, stream), dev.alloc(hk.nbytes, stream), dev.alloc(2 * hw.nbytes, stream)
        Device.upload(dw, hw, stream)
        Device.upload(dk, hk, stream)
        launch(mod, "fr_scale_pair", (-(-n // 256), 2, 1), 256, stream, dw, U32(n), dk, dk.ptr + 32, dout)
        host = np.empty((2 * n, 4), np.uint64)
        Device.download(host, dout, stream)
        stream.synchronize()
        for buf in (dw, dk, dout):
            Device.free(buf, stream)
        assert to_ints(host) == [x * k0 % r for x in w] + [x * k1 % r for x in w], (n, k0, k1)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 10, 11, 13, 17])
@pytest.mark.parametrize("inverse,coset", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("twiddles", ["shoup", "montgomery"])
def test_ntt_matches_cpu(backend, curve, k, inverse, coset, twiddles, monkeypatch):
    """Both twiddle forms at every size (gntt.SHOUP_MAX_LOG picks one per curve and size)."""
    from engine.backends.gpu import ntt as gntt

    monkeypatch.setattr(gntt, "SHOUP_MAX_LOG", {} if twiddles == "shoup" else {curve.name: 0})
    rng = random.Random()
    vals = rand_fr(curve, 1 << k, rng)
    got = to_ints(backend.ntt(curve, from_ints(vals, 4), inverse=inverse, coset=coset))
    assert got == cpu_ntt(curve, vals, inverse=inverse, coset=coset)


@pytest.mark.parametrize("k", [1, 4, 12])
def test_quotient_matches_cpu(backend, curve, k):
    from engine.backends.cpu import CpuBackend

    rng = random.Random()
    a = from_ints(rand_fr(curve, 1 << k, rng), 4)
    b = from_ints(rand_fr(curve, 1 << k, rng), 4)
    assert np.array_equal(backend.quotient(curve, a, b), CpuBackend().quotient(curve, a, b))


@pytest.mark.parametrize("n", [1, 2, 3, 100, 1000, 5001])
def test_msm_g1_matches_cpu(backend, curve, n):
    rng = random.Random()
    pts = points_g1(curve, n, rng)
    scalars = rand_fr(curve, n, rng)
    if n >= 8:
        pts[5] = None  # the point at infinity
        pts[6] = pts[7]  # a repeated point
    expect = cpu_msm_g1(curve, pts, scalars)
    got = backend.msm_g1(curve, g1_to_mont(curve, pts), from_ints(scalars, 4))
    assert got == expect


def test_msm_g1_skewed_scalars_hit_heavy_buckets(backend, curve):
    """Mostly zeros and ones (real witnesses): one bucket gets most points."""
    rng = random.Random()
    n = 20000
    pts = points_g1(curve, n, rng)
    scalars = [rng.choice([0, 1, 1, 1, 2, rng.randrange(curve.r)]) for _ in range(n)]
    expect = cpu_msm_g1(curve, pts, scalars)
    assert backend.msm_g1(curve, g1_to_mont(curve, pts), from_ints(scalars, 4)) == expect


def test_msm_g1_equal_points_and_cancellation(backend, curve):
    """P + P (doubling inside a bucket) and P + (-P) (cancellation to infinity)."""
    rng = random.Random()
    p = points_g1(curve, 1, rng)[0]
    pts = [p] * 64 + [ec.g1_neg(curve, p)] * 64
    scalars = [1] * 128
    assert backend.msm_g1(curve, g1_to_mont(curve, pts), from_ints(scalars, 4)) is None
    scalars = [3] * 64 + [0] * 64
    assert backend.msm_g1(curve, g1_to_mont(curve, pts), from_ints(scalars, 4)) == ec.g1_mul(curve, p, 192)


@pytest.mark.parametrize("fold", [1, 2, "full"])
def test_msm_g1_every_fold_agrees(backend, curve, fold):
    rng = random.Random()
    n = 777
    pts = points_g1(curve, n, rng)
    scalars = rand_fr(curve, n, rng)
    got = backend._msm(curve, g1_to_mont(curve, pts), from_ints(scalars, 4), False, fold=fold)
    assert got == cpu_msm_g1(curve, pts, scalars)


@pytest.mark.parametrize("g2", [False, True], ids=["g1", "g2"])
@pytest.mark.parametrize("c,fold", [(3, 2), (13, 20), (9, 29)])
def test_fold_tables_match_cpu(backend, curve, g2, c, fold):
    """Table t of a folded key holds 2^(c*t) * P (affine).  The kernel batches the inversions of up to
    16 levels (Montgomery's trick): folds within one batch, across a batch's edge (levels 16 | 17) and
    over two edges, a point at infinity, n not a multiple of the block."""
    from types import SimpleNamespace

    from cuda_kernels.driver import Device
    from engine.algebra.limbs import g1_from_mont, g2_from_mont
    from engine.backends.gpu import msm as gmsm

    rng = random.Random()
    n = 131
    pts = points(curve, n, rng, g2=g2)
    pts[7] = None
    host = (g2_to_mont if g2 else g1_to_mont)(curve, pts)
    mod, stream = backend._run(curve)
    buf = backend.device.alloc(fold * host.nbytes, stream)
    Device.upload(buf, host, stream)
    gmsm.precompute(mod, "g2" if g2 else "g1", SimpleNamespace(n=n, c=c, fold=fold), buf, stream)
    out = np.empty((fold,) + host.shape, dtype=np.uint64)
    Device.download(out, buf, stream)
    stream.synchronize()
    Device.free(buf, stream)
    from_mont, mul = (g2_from_mont, ec.g2_mul) if g2 else (g1_from_mont, ec.g1_mul)
    assert from_mont(curve, out[0]) == pts
    for t in sorted({1, 15, 16, 17, fold - 1} & set(range(1, fold))):
        assert from_mont(curve, out[t]) == [None if p is None else mul(curve, p, 1 << (c * t)) for p in pts], t


@pytest.mark.parametrize("n", [1, 5, 300])
def test_msm_g2_matches_cpu(backend, curve, n):
    rng = random.Random()
    pts = points_g2(curve, n, rng)
    scalars = rand_fr(curve, n, rng)
    if n >= 5:
        pts[3] = None
    assert backend.msm_g2(curve, g2_to_mont(curve, pts), from_ints(scalars, 4)) == cpu_msm_g2(curve, pts, scalars)


def test_msm_rejects_unreduced_scalars(backend, curve):
    pts = g1_to_mont(curve, [curve.g1_gen])
    with pytest.raises(ValueError, match="not reduced"):
        backend.msm_g1(curve, pts, from_ints([curve.r], 4))


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_evaluate_and_full_proof_match_cpu(backend, curve_name):
    from engine.backends.cpu import CpuBackend
    from engine.formats import read_wtns, read_zkey
    from engine.groth16.prover import prove
    from engine.groth16.verifier import verify, vk_from_zkey

    zkey = read_zkey(FIXTURES / curve_name / "tiny.zkey")
    wit = read_wtns(FIXTURES / curve_name / "tiny.wtns")
    gkey = backend.load_key(zkey)
    a, b = backend.evaluate(gkey, wit.values)
    ca, cb = CpuBackend().evaluate(CpuBackend().load_key(zkey), wit.values)
    assert np.array_equal(a, ca) and np.array_equal(b, cb)
    for _ in range(2):  # the key stays resident across proofs
        proof = prove(zkey, wit.values, backend, gkey)
        assert verify(vk_from_zkey(zkey), proof.public, proof)
    gkey.close()


@pytest.mark.parametrize("g2", [False, True], ids=["g1", "g2"])
def test_fixed_base_matches_scalar_multiplication(backend, curve, g2):
    from engine.backends.gpu import GpuSetupOps
    from engine.algebra.limbs import g1_from_mont, g2_from_mont

    rng = random.Random()
    scalars = rand_fr(curve, 300 if not g2 else 60, rng) + [255, 256, 1 << 248]
    ops = GpuSetupOps(backend=backend)
    out = (ops.g2_fixed_base if g2 else ops.g1_fixed_base)(curve, from_ints(scalars, 4))
    got = (g2_from_mont if g2 else g1_from_mont)(curve, out)
    mul, gen = (ec.g2_mul, curve.g2_gen) if g2 else (ec.g1_mul, curve.g1_gen)
    assert got == [mul(curve, gen, k) for k in scalars]
    ops.close()


def test_even_odd_montgomery_product_matches_python(backend, curve):
    """The NTT's Montgomery product (even/odd chains, cuda_kernels/gen_mont_eo.py) on the device."""
    rng = random.Random()
    r, R = curve.r, 1 << 256
    edge = [0, 1, 2, r - 1, r - 2, R % r, (R - 1) % r, (r - 1) // 2]
    a = [rng.randrange(r) for _ in range(3000)] + [x for x in edge for _ in edge]
    b = [rng.randrange(r) for _ in range(3000)] + [y for _ in edge for y in edge]
    out = _launch_fr_pairs(backend, curve, "fr_mul_eo_test", from_ints(a, 4), from_ints(b, 4))
    rinv = pow(R, -1, r)
    assert to_ints(out) == [x * y * rinv % r for x, y in zip(a, b)]


def test_split_base_field_products_match_python(backend, curve):
    """The split form (field.cuh by_value_split): its product, its squaring (the cross products once,
    then REDC) and a difference of two products with one reduction (mul_sub), exactly a b R^-1 mod q,
    a^2 R^-1 and (x y - z w) R^-1, fully reduced, on random operands and edges (0, 1, q-1, R mod q,
    equal and zero halves, a difference of zero, negative differences)."""
    rng = random.Random()
    q, words = curve.q, curve.n8q // 4
    R, h = 1 << (32 * words), 16 * words
    edge = [0, 1, 2, q - 1, q - 2, (q - 1) // 2, R % q, R * R % q, (1 << h) - 1, 1 << h, ((1 << h) + 1) % q,
            (((1 << h) - 1) << h) % q, q - (1 << 200)]
    a = [rng.randrange(q) for _ in range(5000)] + [x for x in edge for _ in edge]
    b = [rng.randrange(q) for _ in range(5000)] + [y for _ in edge for y in edge]
    n = len(a)
    out = _launch_fr_pairs(backend, curve, "fq_split_test", from_ints(a, words // 2), from_ints(b, words // 2),
                           out_factor=3)
    got = to_ints(out.reshape(-1, words // 2))
    rinv = pow(R, -1, q)
    for i in range(n):
        z, w = a[(i + 1) % n], b[(i + 7) % n]
        assert got[3 * i] == a[i] * b[i] * rinv % q, (a[i], b[i])
        assert got[3 * i + 1] == a[i] * a[i] * rinv % q, a[i]
        assert got[3 * i + 2] == (a[i] * b[i] - z * w) * rinv % q, (a[i], b[i], z, w)


def test_split_fq2_product_matches_python(backend, curve):
    """G2's Fq2 product over the split form (three double-width products, c0 = (w0 - w1) / R and
    c1 = (ws - (w0 + w1)) / R): exactly (a b) R^-1 in Fq2 = Fq[u]/(u^2 + 1), fully reduced, on random
    and edge operands.  Session 32's version (an asm 2N-word addition after c0's reduction) got c1
    wrong here, which the host simulator cannot show; why is not established (perf/RESULTS.md, session 33)."""
    rng = random.Random()
    q, words = curve.q, curve.n8q // 4
    R = 1 << (32 * words)
    edge = [0, 1, q - 1, q - 2, (q + 1) // 2, R % q]
    pairs = [((a0, a1), (b0, b1)) for a0 in edge for a1 in edge for b0 in (0, 1, q - 1) for b1 in (0, q - 1)]
    pairs += [((rng.randrange(q), rng.randrange(q)), (rng.randrange(q), rng.randrange(q))) for _ in range(4000)]
    a = [c for x, _ in pairs for c in x]  # c0, c1 of each element
    b = [c for _, y in pairs for c in y]
    half = words // 2
    out = _launch_fr_pairs(backend, curve, "fq2_split_test", from_ints(a, half).reshape(len(pairs), 2 * half),
                           from_ints(b, half).reshape(len(pairs), 2 * half))
    got = to_ints(out.reshape(-1, half))
    rinv = pow(R, -1, q)
    for i, ((a0, a1), (b0, b1)) in enumerate(pairs):
        assert got[2 * i] == (a0 * b0 - a1 * b1) * rinv % q, (a0, a1, b0, b1)
        assert got[2 * i + 1] == (a0 * b1 + a1 * b0) * rinv % q, (a0, a1, b0, b1)


def test_c64_montgomery_product_matches_python(backend, curve):
    """The plain-C++ product (an alternative to the PTX chains) is exact too."""
    rng = random.Random()
    r, R = curve.r, 1 << 256
    a = [rng.randrange(r) for _ in range(500)] + [0, 1, r - 1]
    b = [rng.randrange(r) for _ in range(500)] + [r - 1, r - 1, r - 1]
    ha, hb = from_ints([x * R % r for x in a], 4), from_ints([x * R % r for x in b], 4)
    out = _launch_fr_pairs(backend, curve, "fr_mul_c64_test", ha, hb)
    rinv = pow(R, -1, r)
    assert [v * rinv % r for v in to_ints(out)] == [x * y % r for x, y in zip(a, b)]


@pytest.mark.slow
@pytest.mark.parametrize("curve,k", [(BN254, 26), (BN254, 21), (BLS12_381, 22), (BN254, 23)],
                         ids=["bn128-26", "bn128-21", "bls12381-22", "bn128-23"])
def test_large_ntt_round_trips_and_matches_direct_sums(backend, curve, k):
    """Sizes of three passes, where the CPU reference is too slow: 2^26 (the largest asked for,
    2 GiB of data), and 2^21..2^23, whose remainder passes are of 1, 2 and 3 levels.
    inverse(forward(x)) == x with the coset on dense random data, and exact outputs for a
    sparse input checked against direct sums."""
    r = curve.r
    n = 1 << k
    rng = np.random.default_rng()
    x = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    x[:, 3] %= np.uint64(r >> 192)  # below r
    assert np.array_equal(backend.ntt(curve, backend.ntt(curve, x, coset=True), inverse=True, coset=True), x)
    del x
    prng = random.Random()
    terms = {prng.randrange(n): prng.randrange(r) for _ in range(8)}
    sparse = np.zeros((n, 4), dtype=np.uint64)
    for j, v in terms.items():
        sparse[j] = from_ints([v], 4)[0]
    out = backend.ntt(curve, sparse)
    w = curve.root_of_unity(k)
    for i in [0, 1, n - 1] + [prng.randrange(n) for _ in range(5)]:
        expect = sum(v * pow(w, i * j, r) for j, v in terms.items()) % r
        assert to_ints(out[i:i + 1])[0] == expect
