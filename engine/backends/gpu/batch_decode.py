"""A batch's k results blocks into k CoreResults, at a few microseconds a proof.

Why (perf/RESULTS.md, t13tput): the first waiter of a batch decoded all k proofs with pipeline._core
while holding the GIL and, with one compute slot, the slot: the five MSM sums (four G1 and one G2
XYZZ point, ten modular inversions) and the affine proof (pipeline's decode_proof, which computes
R^-1 mod q three times a proof): ~0.85 ms a proof, 4-13 ms a batch of 3-16 on the H200's host (py-spy).
The sums are read only by tests (a device-made proof is finished from its affine proof), so here
they are decoded when first read; the k affine proofs are decoded with one R^-1 for the batch.
The values are those of pipeline._core (tests/test_gpu_batch_decode.py compares them).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.algebra.curves import Curve
from engine.backends.base import CoreResult
from engine.backends.gpu.footprint import acc_bytes
from engine.backends.gpu.pipeline import _core


class BatchCore(CoreResult):
    """A CoreResult whose five MSM sums are decoded from the results block on first read."""

    def __init__(self, curve: Curve, raw: np.ndarray, timings: dict, proof: tuple, verified: bool):
        self._curve, self._raw, self._sums = curve, raw, None
        self.timings, self.proof, self.verified = timings, proof, verified

    def _decoded(self) -> CoreResult:
        if self._sums is None:
            self._sums = _core(self._curve, self._raw, {})
        return self._sums

    pi_a0 = property(lambda self: self._decoded().pi_a0)
    pi_b1_0 = property(lambda self: self._decoded().pi_b1_0)
    pi_b2_0 = property(lambda self: self._decoded().pi_b2_0)
    pi_c0 = property(lambda self: self._decoded().pi_c0)
    pi_h = property(lambda self: self._decoded().pi_h)

    def _fields(self) -> tuple:
        return (self.pi_a0, self.pi_b1_0, self.pi_b2_0, self.pi_c0, self.pi_h, self.timings, self.proof, self.verified)

    def __eq__(self, other: object) -> bool:  # equal to the plain CoreResult of the same values
        if not isinstance(other, CoreResult):
            return NotImplemented
        theirs = other._fields() if isinstance(other, BatchCore) else (
            other.pi_a0, other.pi_b1_0, other.pi_b2_0, other.pi_c0, other.pi_h, other.timings, other.proof,
            other.verified)
        return self._fields() == theirs

    __hash__ = None  # as the dataclass's

    def __reduce__(self) -> tuple[Any, ...]:  # pickled as the plain CoreResult it stands for
        return (CoreResult, self._fields())


def decode_batch(curve: Curve, raws: list[np.ndarray], timings: list[dict]) -> list[BatchCore]:
    """Each results block's affine proof and verdict (as epilogue.decode_proof: a zero point is
    None, the verdict is the flag word == 1), one BatchCore a proof."""
    q, w = curve.q, curve.n8q
    inv = pow((1 << (8 * w)) % q, -1, q)  # R^-1 mod q, once for the batch
    off = 5 * acc_bytes(curve, True)
    at_flag = 3 * (2 * w) + 4 * w  # after three G1-sized and one G2-sized slot, as decode_proof reads it
    out = []
    for raw, tm in zip(raws, timings):
        b = np.ascontiguousarray(raw[off:off + at_flag + 4], dtype=np.uint8).tobytes()
        v = [int.from_bytes(b[i * w:(i + 1) * w], "little") * inv % q for i in range(8)]
        pi_a = None if v[0] == 0 and v[1] == 0 else (v[0], v[1])
        pi_b = None if not any(v[2:6]) else ((v[2], v[3]), (v[4], v[5]))
        pi_c = None if v[6] == 0 and v[7] == 0 else (v[6], v[7])
        flag = int.from_bytes(b[at_flag:at_flag + 4], "little")
        out.append(BatchCore(curve, raw, tm, (pi_a, pi_b, pi_c), flag == 1))
    return out
