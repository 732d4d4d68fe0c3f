"""The CPU reference backend: every stage of a proof with engine.algebra.ntt and engine.algebra.msm.

It is the oracle the GPU kernels are checked against and the fallback where
no GPU exists.  A loaded key keeps its decoded sections (affine plain-int
points, Fr coefficients), decoded on first use, so repeated proofs decode
nothing; `msm_g1`/`msm_g2` recognise a loaded key's section arrays by
identity and use those decoded points.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from engine.algebra import msm as _msm
from engine.backends.base import Backend, ComputeStopped, G1Point, G2Point, ResidentKey
from engine.algebra.curves import Curve
from engine.errors import FormatError
from engine.algebra.limbs import fr_from_ints, fr_to_ints, g1_from_mont, g2_from_mont, to_ints
from engine.algebra.ntt import ntt as _ntt

_G1_SECTIONS = ("a", "b1", "c", "h", "ic")
_G2_SECTIONS = ("b2",)


def _obj(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class CpuResidentKey(ResidentKey):
    """A zkey with its point sections and coefficients decoded lazily, once."""

    def __init__(self, zkey: Any):
        super().__init__(zkey)
        self._points: dict[str, list] = {}
        self._coeffs: tuple | None = None
        self._lock = threading.Lock()

    def points(self, section: str) -> list:
        """Affine plain-int points of a section ("a", "b1", "b2", "c", "h", "ic"), None = infinity."""
        with self._lock:
            pts = self._points.get(section)
            if pts is None:
                arr = getattr(self.zkey, section)
                decode = g2_from_mont if section in _G2_SECTIONS else g1_from_mont
                pts = decode(self.curve, arr) if len(arr) else []
                self._points[section] = pts
            return pts

    def coeffs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(matrix, row, wire, c) of the coeffs section, c = v·R^-2 mod r as an object array (spec §4.4)."""
        with self._lock:
            if self._coeffs is None:
                z, curve = self.zkey, self.curve
                co = z.coeffs
                mtx = np.asarray(co["matrix"], dtype=np.int64)
                rows = np.asarray(co["row"], dtype=np.int64)
                wires = np.asarray(co["wire"], dtype=np.int64)
                bad = np.flatnonzero((mtx > 1) | (rows >= z.domain_size) | (wires >= z.n_vars))
                if bad.size:
                    i = int(bad[0])
                    raise FormatError(
                        z.path,
                        f"coeffs entry {i} (matrix {mtx[i]}, row {rows[i]}, wire {wires[i]}) is outside "
                        f"the key (2 matrices, {z.domain_size} rows, {z.n_vars} wires)",
                    )
                r = curve.r
                vals = _obj(to_ints(co["value"])) * (curve.rr_inv * curve.rr_inv % r) % r
                self._coeffs = (mtx, rows, wires, vals)
            return self._coeffs

    def close(self) -> None:
        with self._lock:
            self._points.clear()
            self._coeffs = None


class CpuBackend(Backend):
    """Pure-Python stages; `workers` sizes the MSM process pool (None: one per CPU, 1: none)."""

    name = "cpu"

    def __init__(self, workers: int | None = None):
        self.workers = workers
        self._keys: weakref.WeakSet = weakref.WeakSet()
        self._proof = threading.local()  # the `stop` of the proof this thread computes (pooled MSMs poll it)

    def prove_core(self, key, witness, stop=None):
        self._proof.stop = stop
        try:
            return super().prove_core(key, witness, stop=stop)
        finally:
            self._proof.stop = None

    def _check_stop(self, stage: str) -> None:
        """Inside a stage: end the proof this thread computes once its `stop` says so (its job was cancelled)."""
        stop = getattr(self._proof, "stop", None)
        if stop is not None and stop():
            raise ComputeStopped(f"{stage}: the proof's job was cancelled")

    # ---- keys
    def load_key(self, zkey: Any) -> CpuResidentKey:
        key = CpuResidentKey(zkey)
        self._keys.add(key)
        return key

    def _points(self, curve: Curve, bases: np.ndarray, g2: bool) -> list:
        """Decoded points of bases: a loaded key's cached section when it is one, else decoded now."""
        for key in list(self._keys):
            for section in _G2_SECTIONS if g2 else _G1_SECTIONS:
                if getattr(key.zkey, section, None) is bases:
                    return key.points(section)
        if len(bases) == 0:
            return []
        return (g2_from_mont if g2 else g1_from_mont)(curve, bases)

    # ---- stages
    def evaluate(self, key: CpuResidentKey, witness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A·w and B·w on the domain: entries hitting the same cell are summed (spec §5.1 step 2)."""
        z = key.zkey
        r, n = z.curve.r, z.domain_size
        if len(witness) != z.n_vars:
            raise ValueError(f"evaluate: witness has {len(witness)} values, the key expects {z.n_vars}")
        mtx, rows, wires, vals = key.coeffs()
        w = _obj(fr_to_ints(z.curve, witness))
        out = []
        for m in (0, 1):
            sel = mtx == m
            acc = np.zeros(n, dtype=object)
            np.add.at(acc, rows[sel], vals[sel] * w[wires[sel]])
            out.append(fr_from_ints((acc % r).tolist()))
        return out[0], out[1]

    def quotient(self, curve: Curve, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """h = a'·b' - c' on the coset g·ω^j, with cc = a∘b taken on the domain first (spec §5.1 3-5)."""
        r = curve.r
        av, bv = _obj(fr_to_ints(curve, a)), _obj(fr_to_ints(curve, b))
        if len(av) != len(bv):
            raise ValueError(f"quotient: a has {len(av)} values, b has {len(bv)}")
        cv = av * bv % r
        shifted = []
        for x in (av, bv, cv):  # six NTTs in this thread: a cancelled proof stops between two of them
            self._check_stop("quotient")
            coeffs = _ntt(curve, x.tolist(), inverse=True)
            self._check_stop("quotient")
            shifted.append(_obj(_ntt(curve, coeffs, coset=True)))
        h = (shifted[0] * shifted[1] - shifted[2]) % r
        return fr_from_ints(h.tolist())

    def ntt(self, curve: Curve, values: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        return fr_from_ints(_ntt(curve, fr_to_ints(curve, values), inverse=inverse, coset=coset))

    def msm_g1(self, curve: Curve, bases: np.ndarray, scalars: np.ndarray) -> G1Point:
        ks = fr_to_ints(curve, scalars)
        return _msm.msm_g1(curve, self._points(curve, bases, g2=False), ks, workers=self.workers,
                           stop=getattr(self._proof, "stop", None))

    def msm_g2(self, curve: Curve, bases: np.ndarray, scalars: np.ndarray) -> G2Point:
        ks = fr_to_ints(curve, scalars)
        return _msm.msm_g2(curve, self._points(curve, bases, g2=True), ks, workers=self.workers,
                           stop=getattr(self._proof, "stop", None))

    def close(self) -> None:
        """Forget the loaded keys' decoded data; the shared MSM pool stays up until exit (msm.shutdown_pool)."""
        for key in list(self._keys):
            key.close()
        self._keys = weakref.WeakSet()
