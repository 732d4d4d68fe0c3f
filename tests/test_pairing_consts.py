"""The device pairing's constants (engine/backends/gpu/verify.py): the tower's Frobenius powers from one
exponentiation, equal to the 22 exponentiations they replace, and a key's byte count made without building them (it
cost 26 ms here in every cold key load: eighteen Fq2 exponentiations to powers of up to 760 bits)."""
from __future__ import annotations

import pytest

from engine.algebra import pairing as pr
from engine.algebra.curves import BLS12_381, BN254
from engine.algebra.field import fq2_pow
from engine.backends.gpu import epilogue as gepi
from engine.backends.gpu import verify as gverify
from engine.backends.gpu.footprint import KeyShape, plan_key

CURVES = [BN254, BLS12_381]


@pytest.mark.parametrize("curve", CURVES, ids=lambda c: c.name)
def test_frobenius_powers_are_the_exponentiations_they_replace(curve):
    q, xi = curve.q, curve.fq6_nonresidue
    direct = [fq2_pow(xi, i * (q**k - 1) // 6, q) for k in (1, 2, 3) for i in range(6)]
    assert pr.frobenius_powers(xi, q) == direct
    twist = (fq2_pow(xi, (q - 1) // 3, q), fq2_pow(xi, (q - 1) // 2, q), fq2_pow(xi, (q * q - 1) // 3, q),
             fq2_pow(xi, (q * q - 1) // 2, q))
    assert pr._twist_frobenius_consts(curve) == twist


def test_frobenius_powers_refuse_a_field_where_six_does_not_divide_q_minus_one():
    with pytest.raises(ValueError):
        pr.frobenius_powers((1, 1), 11)


@pytest.mark.parametrize("curve", CURVES, ids=lambda c: c.name)
def test_the_constants_byte_count_is_the_buffers_size(curve):
    assert gverify.pairing_consts_nbytes(curve) == gverify.pairing_consts(curve).nbytes


@pytest.mark.parametrize("curve", CURVES, ids=lambda c: c.name)
def test_a_keys_footprint_is_planned_without_building_the_pairing_constants(curve, monkeypatch):
    def refuse(curve):
        raise AssertionError("the pairing constants were built to count their bytes")

    monkeypatch.setattr(gverify, "pairing_consts", refuse)
    assert gepi.key_bytes(curve, 2) > 0
    n = (1 << 14) + 8
    assert plan_key(KeyShape(curve, n, 1 << 15, 4 * n, 4 * n, 2), 16 << 30).device_bytes > 0
