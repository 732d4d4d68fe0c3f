"""circom `.r1cs` (spec §2).  CONTRACT STUB: the formats work fills this in."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import Curve


@dataclass
class LinearCombinations:
    """One matrix (A, B or C) of all constraints in CSR form."""

    row_ptr: np.ndarray  # (m+1,) int64: terms of constraint i are [row_ptr[i], row_ptr[i+1])
    wires: np.ndarray  # (nnz,) uint32
    coeffs: np.ndarray  # (nnz, 4) uint64, plain canonical values < r


@dataclass
class R1CS:
    path: str | None
    prime: int
    curve: Curve | None
    n_wires: int
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    n_labels: int
    n_constraints: int
    a: LinearCombinations
    b: LinearCombinations
    c: LinearCombinations
    wire_to_label: np.ndarray | None = None  # (n_wires,) uint64, section 3 when present

    @property
    def n_public(self) -> int:
        return self.n_pub_out + self.n_pub_in


def read_r1cs(path) -> R1CS:
    raise NotImplementedError


def write_r1cs(path, r1cs: R1CS) -> None:
    """Write sections 1, 2, 3 in circom's layout (header, constraints, wire->label)."""
    raise NotImplementedError
