"""The CPU backend's stages against direct computations, and a full proof of the snarkjs fixture."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from engine.backends import cpu as cpu_backend
from engine.algebra import ec
from engine.algebra.curves import BLS12_381, BN254
from engine.errors import FormatError
from engine.formats import read_wtns, read_zkey
from engine.formats.zkey import COEFF_DTYPE, ZKey
from engine.algebra.limbs import fr_from_ints, g1_to_mont, g2_to_mont, to_ints
from engine.groth16.proof import VerificationKey
from engine.groth16.prover import prove
from engine.groth16.verifier import verify, vk_from_zkey

FIXTURES = Path(__file__).parent / "fixtures" / "tiny"
CURVES = pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
rng = random.Random()


def rand_g1(curve):
    return ec.g1_mul(curve, curve.g1_gen, rng.randrange(1, curve.r))


def rand_g2(curve):
    return ec.g2_mul(curve, curve.g2_gen, rng.randrange(1, curve.r))


def make_zkey(curve, n_vars=7, n_public=2, log_domain=3, n_coef=30):
    """A random (not provable) key: random points with some infinities, random coeffs with repeats."""
    n = 1 << log_domain
    r = curve.r
    entries = []
    for _ in range(n_coef):
        entries.append((rng.randrange(2), rng.randrange(n), rng.randrange(n_vars), rng.randrange(r)))
    entries += [entries[0], entries[1]]  # the same cell twice: must be summed
    r2 = curve.rr * curve.rr % r
    coeffs = np.zeros(len(entries), dtype=COEFF_DTYPE)
    coeffs["matrix"] = [e[0] for e in entries]
    coeffs["row"] = [e[1] for e in entries]
    coeffs["wire"] = [e[2] for e in entries]
    coeffs["value"] = fr_from_ints([e[3] * r2 % r for e in entries])  # stored v = c·R^2 (spec §4.4)
    pts = {
        "a": [rand_g1(curve) for _ in range(n_vars - 1)] + [None],
        "b1": [None] + [rand_g1(curve) for _ in range(n_vars - 1)],
        "b2": [rand_g2(curve) for _ in range(n_vars - 2)] + [None, rand_g2(curve)],
        "c": [rand_g1(curve) for _ in range(n_vars - n_public - 1)],
        "h": [rand_g1(curve) for _ in range(n)],
        "ic": [rand_g1(curve) for _ in range(n_public + 1)],
    }
    hdr1 = g1_to_mont(curve, [rand_g1(curve) for _ in range(3)])
    hdr2 = g2_to_mont(curve, [rand_g2(curve) for _ in range(3)])
    z = ZKey(
        path=None, curve=curve, n_vars=n_vars, n_public=n_public, domain_size=n, log_domain=log_domain,
        alpha1=hdr1[0], beta1=hdr1[1], beta2=hdr2[0], gamma2=hdr2[1], delta1=hdr1[2], delta2=hdr2[2],
        ic=g1_to_mont(curve, pts["ic"]), coeffs=coeffs,
        a=g1_to_mont(curve, pts["a"]), b1=g1_to_mont(curve, pts["b1"]), b2=g2_to_mont(curve, pts["b2"]),
        c=g1_to_mont(curve, pts["c"]), h=g1_to_mont(curve, pts["h"]),
    )  # fmt: skip
    return z, entries, pts


def naive_msm(curve, pts, ks, g2=False):
    add, mul = (ec.g2_add, ec.g2_mul) if g2 else (ec.g1_add, ec.g1_mul)
    acc = None
    for P, k in zip(pts, ks):
        acc = add(curve, acc, mul(curve, P, k))
    return acc


@CURVES
def test_evaluate_sums_decoded_coefficients_times_witness_per_row(curve):
    z, entries, _ = make_zkey(curve)
    w = [1] + [rng.randrange(curve.r) for _ in range(z.n_vars - 1)]
    want = [[0] * z.domain_size, [0] * z.domain_size]
    for m, row, wire, c in entries:
        want[m][row] = (want[m][row] + c * w[wire]) % curve.r
    be = cpu_backend.CpuBackend(workers=1)
    a, b = be.evaluate(be.load_key(z), fr_from_ints(w))
    assert a.shape == (z.domain_size, 4) and a.dtype == np.uint64
    assert to_ints(a) == want[0] and to_ints(b) == want[1]


@CURVES
def test_quotient_is_p_on_the_coset_from_direct_interpolation(curve):
    r, n = curve.r, 8
    a = [rng.randrange(r) for _ in range(n)]
    b = [rng.randrange(r) for _ in range(n)]
    c = [x * y % r for x, y in zip(a, b)]
    w, g = curve.root_of_unity(3), curve.coset_generator(3)
    n_inv, w_inv = pow(n, -1, r), pow(w, -1, r)

    def interpolate(vals):
        return [n_inv * sum(v * pow(w_inv, i * j, r) for i, v in enumerate(vals)) % r for j in range(n)]

    def at(coeffs, x):
        return sum(cf * pow(x, j, r) for j, cf in enumerate(coeffs)) % r

    A, B, C = interpolate(a), interpolate(b), interpolate(c)
    want = []
    for j in range(n):
        x = g * pow(w, j, r) % r
        want.append((at(A, x) * at(B, x) - at(C, x)) % r)
    h = cpu_backend.CpuBackend(workers=1).quotient(curve, fr_from_ints(a), fr_from_ints(b))
    assert to_ints(h) == want


@CURVES
def test_msm_seams_take_montgomery_bases_and_plain_scalars(curve):
    be = cpu_backend.CpuBackend(workers=1)
    pts1 = [rand_g1(curve) for _ in range(6)] + [None]
    pts2 = [rand_g2(curve) for _ in range(3)] + [None]
    ks1 = [rng.randrange(curve.r) for _ in pts1[:-2]] + [1, 0]
    ks2 = [0, 1, rng.randrange(curve.r), 5]
    got1 = be.msm_g1(curve, g1_to_mont(curve, pts1), fr_from_ints(ks1))
    assert got1 == naive_msm(curve, pts1, ks1)
    got2 = be.msm_g2(curve, g2_to_mont(curve, pts2), fr_from_ints(ks2))
    assert got2 == naive_msm(curve, pts2, ks2, g2=True)


def test_msm_scalar_not_below_r_raises_value_error():
    curve = BN254
    be = cpu_backend.CpuBackend(workers=1)
    bases = g1_to_mont(curve, [rand_g1(curve), rand_g1(curve)])
    with pytest.raises(ValueError, match="not reduced"):
        be.msm_g1(curve, bases, fr_from_ints([3, curve.r]))
    with pytest.raises(ValueError, match="not reduced"):
        be.msm_g2(curve, g2_to_mont(curve, [rand_g2(curve)]), fr_from_ints([curve.r + 1]))


def test_loaded_key_sections_are_decoded_once(monkeypatch):
    curve = BN254
    z, _, pts = make_zkey(curve)
    calls = []
    real = cpu_backend.g1_from_mont
    monkeypatch.setattr(cpu_backend, "g1_from_mont", lambda c, a: calls.append(len(a)) or real(c, a))
    be = cpu_backend.CpuBackend(workers=1)
    key = be.load_key(z)
    ks = fr_from_ints([rng.randrange(curve.r) for _ in range(z.domain_size)])
    first = be.msm_g1(curve, z.h, ks)
    second = be.msm_g1(curve, z.h, ks)
    assert first == second == naive_msm(curve, pts["h"], to_ints(ks))
    assert calls == [z.domain_size]
    assert key.points("h") == pts["h"]


@CURVES
def test_prove_core_feeds_each_msm_its_section_and_witness_slice(curve):
    z, _, pts = make_zkey(curve)
    w = [1] + [rng.randrange(curve.r) for _ in range(z.n_vars - 1)]
    be = cpu_backend.CpuBackend(workers=1)
    key = be.load_key(z)
    core = be.prove_core(key, fr_from_ints(w))
    a, b = be.evaluate(key, fr_from_ints(w))
    h = to_ints(be.quotient(curve, a, b))
    assert core.pi_a0 == naive_msm(curve, pts["a"], w)
    assert core.pi_b1_0 == naive_msm(curve, pts["b1"], w)
    assert core.pi_b2_0 == naive_msm(curve, pts["b2"], w, g2=True)
    assert core.pi_c0 == naive_msm(curve, pts["c"], w[z.n_public + 1 :])
    assert core.pi_h == naive_msm(curve, pts["h"], h)


def test_evaluate_rejects_wrong_witness_length_and_bad_coeffs():
    curve = BN254
    z, _, _ = make_zkey(curve)
    be = cpu_backend.CpuBackend(workers=1)
    with pytest.raises(ValueError, match="witness"):
        be.evaluate(be.load_key(z), fr_from_ints([1, 2]))
    z.coeffs = z.coeffs.copy()
    z.coeffs["row"][3] = z.domain_size  # outside the domain
    with pytest.raises(FormatError, match="coeffs entry 3"):
        be.evaluate(be.load_key(z), fr_from_ints([1] * z.n_vars))


def _vk_from_json(curve) -> VerificationKey:
    vk = json.loads((FIXTURES / curve.name / "verification_key.json").read_text())

    def g1(v):
        return (int(v[0]), int(v[1]))

    def g2(v):
        return ((int(v[0][0]), int(v[0][1])), (int(v[1][0]), int(v[1][1])))

    return VerificationKey(
        curve, vk["nPublic"], g1(vk["vk_alpha_1"]), g2(vk["vk_beta_2"]), g2(vk["vk_gamma_2"]),
        g2(vk["vk_delta_2"]), [g1(p) for p in vk["IC"]],
    )  # fmt: skip


@CURVES
def test_fixture_proof_from_cpu_backend_verifies_against_snarkjs_vkey(curve):
    d = FIXTURES / curve.name
    for zkey_name in ("tiny_0.zkey", "tiny.zkey"):  # before contribution, then contributed (δ ≠ 1)
        z = read_zkey(d / zkey_name)
        wtns = read_wtns(d / "tiny.wtns")
        proof = prove(z, wtns.values, cpu_backend.CpuBackend())
        assert proof.public == [int(v) for v in json.loads((d / "public.json").read_text())]
        assert verify(vk_from_zkey(z), proof.public, proof)
    assert verify(_vk_from_json(curve), proof.public, proof)  # the last proof: contributed key


@CURVES
def test_epilogue_matches_the_textbook_formulas(curve):
    """pi_a = α1 + A + rδ1, pi_b = β2 + B2 + sδ2, pi_c = C + H + s·pi_a + r·b1 - rs·δ1 with
    b1 = β1 + B1 + sδ1 (spec §5.1 step 7), against the epilogue's shorter evaluation."""
    from engine.backends.base import CoreResult
    from engine.algebra.limbs import g1_from_mont, g2_from_mont
    from engine.groth16.prover import epilogue

    zk, _, _ = make_zkey(curve)
    add, mul = ec.g1_add, ec.g1_mul
    alpha1, beta1, delta1 = g1_from_mont(curve, np.stack([zk.alpha1, zk.beta1, zk.delta1]))
    beta2, delta2 = g2_from_mont(curve, np.stack([zk.beta2, zk.delta2]))
    for r, s in [(rng.randrange(curve.r), rng.randrange(curve.r)), (0, 0), (1, curve.r - 1)]:
        core = CoreResult(pi_a0=rand_g1(curve), pi_b1_0=rand_g1(curve), pi_b2_0=rand_g2(curve),
                          pi_c0=rand_g1(curve), pi_h=rand_g1(curve))
        pi_a = add(curve, add(curve, alpha1, core.pi_a0), mul(curve, delta1, r))
        pi_b = ec.g2_add(curve, ec.g2_add(curve, beta2, core.pi_b2_0), ec.g2_mul(curve, delta2, s))
        b1 = add(curve, add(curve, beta1, core.pi_b1_0), mul(curve, delta1, s))
        pi_c = add(curve, core.pi_c0, core.pi_h)
        for term in (mul(curve, pi_a, s), mul(curve, b1, r), ec.g1_neg(curve, mul(curve, delta1, r * s))):
            pi_c = add(curve, pi_c, term)
        assert epilogue(zk, core, r, s) == (pi_a, pi_b, pi_c)
