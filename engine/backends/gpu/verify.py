"""The Groth16 pairing check on the device: per-curve constants, per-key prepared lines, e(α, β).

cuda_kernels/pairing.cuh takes everything curve-specific that is data from one
constants buffer built here from the `Curve` (`pairing_consts`): the Miller loop's
operation codes and the NAF of the curve parameter (from engine/algebra/pairing.py,
so both sides walk the same loop), the twist's 3b, and the Frobenius constants.
`KeyPairing` holds what a key adds: the lines of γ2, δ2 and β2 (made on the device
by `g2_prepare`) and e(α1, β2) (made on the device by `pairing_tools`), computed
once when the key is loaded.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from engine.algebra import pairing as pr
from engine.algebra.curves import Curve

SQUARE = 9  # the loop code for "square f" (pairing.cuh, pairing_layout::SQUARE)
N_FQ2 = 23


def pairing_shape(curve: Curve) -> tuple[int, bool]:
    """(XI0, D-type twist) the kernels were built with for this curve (kernels.cu derives them
    from the base field's width: 8 limbs BN254, 12 limbs BLS12-381)."""
    xi0, d_twist = (9, True) if curve.n8q == 32 else (1, False)
    if curve.fq6_nonresidue != (xi0, 1) or (curve.family == "bn") != d_twist:
        raise ValueError(f"{curve.name}: the device pairing supports BN254 and BLS12-381 only")
    return xi0, d_twist


def loop_codes(curve: Curve) -> list[int]:
    """The Miller loop as codes: SQUARE, then the step's line operations (the first square omitted)."""
    codes: list[int] = []
    for i, (square, ops) in enumerate(pr._loop_shape(curve)):
        if square and i:
            codes.append(SQUARE)
        codes.extend(ops)
    return codes


def n_lines(curve: Curve) -> int:
    return sum(1 for c in loop_codes(curve) if c != SQUARE)


def _words(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & 0xFFFFFFFF for i in range(n)]


def mont_words(curve: Curve, values) -> list[int]:
    """Fq ints -> their Montgomery form as 32-bit words (R = 2^(8 n8q))."""
    n = curve.n8q // 4
    out: list[int] = []
    for v in values:
        out += _words(v * (1 << (32 * n)) % curve.q, n)
    return out


def _loop_ints(curve: Curve) -> list[int]:
    """The constants buffer's tail after its Fq2 values: the loop's codes, the NAF of |x|, x's sign."""
    codes = loop_codes(curve)
    naf = pr._naf(abs(curve.x_param))
    return [len(codes), *codes, len(naf), *naf, int(curve.x_param < 0)]


def pairing_consts_nbytes(curve: Curve) -> int:
    """pairing_consts(curve).nbytes, without making its Fq2 values (a key's footprint counts them before any load)."""
    return 4 * (N_FQ2 * 2 * (curve.n8q // 4) + len(_loop_ints(curve)))


@lru_cache(maxsize=None)
def pairing_consts(curve: Curve) -> np.ndarray:
    """The constants buffer of pairing.cuh (layout documented there), uint32."""
    pairing_shape(curve)
    q, xi = curve.q, curve.fq6_nonresidue
    b3 = (3 * curve.g2_b[0] % q, 3 * curve.g2_b[1] % q)
    fq2 = [b3]
    if curve.family == "bn":
        fq2 += list(pr._twist_frobenius_consts(curve))
    else:
        fq2 += [(0, 0)] * 4
    fq2 += pr.frobenius_powers(xi, q)
    assert len(fq2) == N_FQ2
    words = mont_words(curve, [c for v in fq2 for c in v])
    return np.array(words + [i & 0xFFFFFFFF for i in _loop_ints(curve)], dtype=np.uint32)


def fq12_to_words(curve: Curve, f) -> list[int]:
    """An Fq12 of engine/algebra/pairing.py as Montgomery words in the kernels' layout."""
    return mont_words(curve, [c for half in f for coef in half for c in coef])


def fq12_from_mont(curve: Curve, words: np.ndarray):
    """Montgomery words (the kernels' layout) -> an Fq12 tuple of plain ints."""
    n = curve.n8q // 4
    w = np.ascontiguousarray(words, dtype=np.uint32).reshape(12, n)
    rinv = pow(1 << (32 * n), -1, curve.q)
    vals = [int.from_bytes(row.tobytes(), "little") * rinv % curve.q for row in w]
    c = [(vals[2 * i], vals[2 * i + 1]) for i in range(6)]
    return ((c[0], c[1], c[2]), (c[3], c[4], c[5]))
