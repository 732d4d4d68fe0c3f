"""`.wtns` witness files (spec §3).  CONTRACT STUB: the formats work fills this in."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import Curve


@dataclass
class Witness:
    path: str | None
    prime: int  # the scalar field r written in the file
    curve: Curve | None  # the curve with that r, or None when no supported curve has it
    values: np.ndarray  # (nWitness, 4) uint64 plain values, w[0] = 1 (a view over the mapped file)


def read_wtns(path) -> Witness:
    raise NotImplementedError


def write_wtns(path, prime: int, values: np.ndarray) -> None:
    """Write version 2, two sections, byte-identical to snarkjs `wtns calculate`."""
    raise NotImplementedError
