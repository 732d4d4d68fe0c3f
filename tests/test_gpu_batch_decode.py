"""A batch's results blocks decoded by batch_decode give what pipeline._core gives, proof by proof
(the affine proof and verdict at once, the five MSM sums on first read), on both curves, on seeded
random blocks and on the edge cases: zero points (None), a failed verdict, the flag's other values."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.backends.base import CoreResult
from engine.backends.gpu import epilogue as gepi
from engine.backends.gpu.batch_decode import BatchCore, decode_batch
from engine.backends.gpu.footprint import acc_bytes
from engine.backends.gpu.pipeline import _core


def _block(curve, rng, *, zero=(), flag=1) -> np.ndarray:
    """A results block: five G2-wide XYZZ slots then pi_a, pi_b, pi_c (Montgomery limbs) and the flag."""
    w, q = curve.n8q, curve.q
    slot = acc_bytes(curve, True)
    vals = [int(rng.integers(1, 1 << 62)) * int(rng.integers(1, 1 << 62)) * 7919 % q for _ in range(5 * slot // w)]
    body = b"".join(v.to_bytes(w, "little") for v in vals)
    pts = [int(rng.integers(1, 1 << 62)) ** 4 % q for _ in range(8)]
    for name in zero:
        for i in {"a": (0, 1), "b": (2, 3, 4, 5), "c": (6, 7)}[name]:
            pts[i] = 0
    gap = bytes(rng.integers(0, 256, 2 * w, dtype=np.uint8))  # the slot between pi_c and the flag
    tail = b"".join(v.to_bytes(w, "little") for v in pts) + gap + int(flag).to_bytes(4, "little")
    nbytes = len(body) + len(tail) + gepi.scratch_bytes(curve)
    raw = np.zeros(nbytes, dtype=np.uint8)
    raw[:len(body) + len(tail)] = np.frombuffer(body + tail, dtype=np.uint8)
    return raw


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_a_batch_decodes_as_core_does(curve):
    rng = np.random.default_rng(13)
    cases = [{}, {"zero": ("a",)}, {"zero": ("b",)}, {"zero": ("c",)}, {"zero": ("a", "b", "c")}, {"flag": 0},
             {"flag": 2}, {}, {}]
    raws = [_block(curve, rng, **c) for c in cases]
    timings = [{"gpu_batch": len(raws), "i": i} for i in range(len(raws))]
    got = decode_batch(curve, raws, timings)
    for raw, tm, g in zip(raws, timings, got):
        want = _core(curve, raw, tm)
        assert isinstance(g, BatchCore) and isinstance(g, CoreResult)
        assert (g.proof, g.verified, g.timings) == (want.proof, want.verified, want.timings)
        assert g._sums is None  # nothing but the proof decoded yet
        assert (g.pi_a0, g.pi_b1_0, g.pi_b2_0, g.pi_c0, g.pi_h) == (want.pi_a0, want.pi_b1_0, want.pi_b2_0,
                                                                     want.pi_c0, want.pi_h)
        assert g == want and want == g  # equal to the plain CoreResult of the same values
        back = pickle.loads(pickle.dumps(g))
        assert type(back) is CoreResult and back == want
    assert [g.verified for g in got] == [True, True, True, True, True, False, False, True, True]
    assert got[1].proof[0] is None and got[2].proof[1] is None and got[3].proof[2] is None
