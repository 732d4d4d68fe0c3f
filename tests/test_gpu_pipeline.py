"""The GPU proof pipeline (stage -> compute, as the scheduler runs it) at real sizes, against the CPU.

Domains 2^12 .. 2^18 on both curves.  Each key is synthetic: random sparse A and B matrices and
random bases that are known multiples s_i·G (made by the GPU fixed-base setup), so every MSM of
the pipeline has an exact, cheap CPU reference: Σ w_i·(s_i·G) = (Σ w_i·s_i)·G, one scalar dot
product mod r and one scalar multiplication, instead of a 2^18-point MSM in Python (minutes).
The H polynomial is compared in full: the CPU reference (CpuBackend.evaluate and .quotient: 3
inverse and 3 coset NTTs) gives every h_i, and the pipeline's H MSM must equal (Σ h_i·t_i)·G.
Witnesses mix zeros, ones, r-1 and random values.  Seeded: set GROTH16_TEST_SEED to rerun a
failure; the seed is in every assertion message.

Marked `gpu`: skipped only when no CUDA device exists.
"""
from __future__ import annotations

import os
import random

import numpy as np
import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.ec import g1_mul, g2_mul
from engine.algebra.limbs import fr_from_ints, to_ints
from engine.backends.select import cuda_device_count
from engine.formats.zkey import COEFF_DTYPE, ZKey

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA device on this machine"),
]

N_PUBLIC = 2


def _seed(curve, k: int) -> int:
    base = int(os.environ.get("GROTH16_TEST_SEED", "14"))
    return base * 1000 + k * 10 + (curve is BLS12_381)


@pytest.fixture(scope="module")
def gpu():
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415
    from engine.backends.gpu.setup_points import GpuSetupOps  # noqa: PLC0415

    backend = GpuBackend(0)
    yield backend, GpuSetupOps(backend=backend)
    backend.close()


def _scalars(rng: random.Random, count: int, r: int) -> list[int]:
    return [rng.randrange(1, r) for _ in range(count)]


def _witness(rng: random.Random, count: int, r: int) -> list[int]:
    """1 first (wire 0), then a mix like real circuits: many 0/1 (bits), some r-1, the rest random."""
    out = [1]
    for _ in range(count - 1):
        x = rng.random()
        out.append(0 if x < 0.2 else 1 if x < 0.4 else r - 1 if x < 0.45 else rng.randrange(r))
    return out


def _coeffs(rng: random.Random, n: int, m: int, r: int) -> np.ndarray:
    """Random sparse A and B: 0 to 3 terms per row and matrix, a repeated cell now and then."""
    rows, wires, matrix, values = [], [], [], []
    for mtx in (0, 1):
        for row in range(n):
            for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
                rows.append(row)
                wires.append(rng.randrange(m))
                matrix.append(mtx)
                values.append(rng.randrange(r))
    co = np.zeros(len(rows), dtype=COEFF_DTYPE)
    co["matrix"], co["row"], co["wire"] = matrix, rows, wires
    co["value"] = fr_from_ints(values)
    return co


def _synthetic_key(curve, k: int, rng: random.Random, ops) -> tuple[ZKey, dict]:
    n = 1 << k
    m = n - 3  # wires
    r, lq = curve.r, curve.q_limbs64
    s = {name: _scalars(rng, count, r) for name, count in
         (("a", m), ("b1", m), ("b2", m), ("c", m - N_PUBLIC - 1), ("h", n))}
    pts = {name: ops._fixed_base(curve, fr_from_ints(v), name == "b2") for name, v in s.items()}
    zero1, zero2 = np.zeros((2, lq), np.uint64), np.zeros((2, 2, lq), np.uint64)
    zkey = ZKey(path=f"synthetic-2^{k}", curve=curve, n_vars=m, n_public=N_PUBLIC, domain_size=n, log_domain=k,
                alpha1=zero1, beta1=zero1, beta2=zero2, gamma2=zero2, delta1=zero1, delta2=zero2,
                ic=np.zeros((N_PUBLIC + 1, 2, lq), np.uint64), coeffs=_coeffs(rng, n, m, r),
                a=pts["a"], b1=pts["b1"], b2=pts["b2"], c=pts["c"], h=pts["h"])
    return zkey, s


def _dot(xs, ys, r: int) -> int:
    return sum(x * y for x, y in zip(xs, ys)) % r


@pytest.mark.parametrize("k", [12, 14, 16, 18])
@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_the_pipeline_matches_the_cpu_reference(gpu, curve, k):
    from engine.backends.cpu import CpuBackend, CpuResidentKey  # noqa: PLC0415

    backend, ops = gpu
    seed = _seed(curve, k)
    rng = random.Random(seed)
    zkey, s = _synthetic_key(curve, k, rng, ops)
    r = curve.r
    w = _witness(rng, zkey.n_vars, r)
    witness = fr_from_ints(w)
    key = backend.load_key(zkey)
    try:
        got = backend.prove_core(key, witness)
    finally:
        backend.unload_key(key)
    where = f"{curve.name} 2^{k}, seed {seed} (GROTH16_TEST_SEED={seed // 1000} reruns it)"
    g1, g2 = curve.g1_gen, curve.g2_gen
    assert got.pi_a0 == g1_mul(curve, g1, _dot(w, s["a"], r)), f"A MSM differs: {where}"
    assert got.pi_b1_0 == g1_mul(curve, g1, _dot(w, s["b1"], r)), f"B1 MSM differs: {where}"
    assert got.pi_b2_0 == g2_mul(curve, g2, _dot(w, s["b2"], r)), f"B2 MSM differs: {where}"
    assert got.pi_c0 == g1_mul(curve, g1, _dot(w[N_PUBLIC + 1:], s["c"], r)), f"C MSM differs: {where}"
    cpu = CpuBackend(workers=1)
    a, b = cpu.evaluate(CpuResidentKey(zkey), witness)
    h = to_ints(cpu.quotient(curve, a, b))
    assert got.pi_h == g1_mul(curve, g1, _dot(h, s["h"], r)), f"H (the quotient and its MSM) differs: {where}"
