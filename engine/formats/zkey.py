"""Groth16 `.zkey` (spec §4).  CONTRACT STUB: the formats work fills this in."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import Curve


# numpy dtype of one coeffs entry as stored (spec §4.4): 12 + 32 bytes, packed
COEFF_DTYPE = np.dtype([("matrix", "<u4"), ("row", "<u4"), ("wire", "<u4"), ("value", "<u8", (4,))])


@dataclass
class ZKey:
    path: str | None
    curve: Curve
    n_vars: int  # wires, including wire 0
    n_public: int  # public signals, not counting wire 0
    domain_size: int  # n = 2^log_domain
    log_domain: int
    # header points, raw Montgomery limbs as in the file (uint64):
    alpha1: np.ndarray  # (2, Lq)
    beta1: np.ndarray  # (2, Lq)
    beta2: np.ndarray  # (2, 2, Lq)
    gamma2: np.ndarray  # (2, 2, Lq)
    delta1: np.ndarray  # (2, Lq)
    delta2: np.ndarray  # (2, 2, Lq)
    # sections, numpy views (read-only) over the mapped file:
    ic: np.ndarray  # (n_public+1, 2, Lq)
    coeffs: np.ndarray  # (nCoef,) COEFF_DTYPE; value = c*R^2 mod r, plain bytes (spec §4.4)
    a: np.ndarray  # (n_vars, 2, Lq)
    b1: np.ndarray  # (n_vars, 2, Lq)
    b2: np.ndarray  # (n_vars, 2, 2, Lq)
    c: np.ndarray  # (n_vars - n_public - 1, 2, Lq)
    h: np.ndarray  # (domain_size, 2, Lq)
    sha: bytes = b""  # identity of the key's bytes for caches (hash of header + section sizes + sampled bytes)


def read_zkey(path) -> ZKey:
    raise NotImplementedError


def write_zkey(path, key: ZKey, mpc_section: bytes | None = None) -> None:
    """Write a Groth16 zkey in snarkjs's layout (sections 1..10 ascending)."""
    raise NotImplementedError
