"""The values a Groth16 proof and its verification key hold (points as plain-int affine tuples)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from engine.algebra.curves import Curve
from engine.algebra.ec import G1Point, G2Point
from engine.formats.json_text import proof_to_json, public_to_json, write_atomically


@dataclass
class Proof:
    """A Groth16 proof and its public signals; `write` gives snarkjs's proof.json and public.json."""

    curve: Curve
    pi_a: G1Point
    pi_b: G2Point
    pi_c: G1Point
    public: list[int] = field(default_factory=list)  # w_1 .. w_nPublic (plain)
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds, for --verbose and perf

    def to_json(self) -> str:
        """Exactly the text `snarkjs groth16 prove` writes to proof.json."""
        return proof_to_json(self)

    def public_json(self) -> str:
        """Exactly the text snarkjs writes to public.json."""
        return public_to_json(self.public)

    def write(self, proof_path: str | os.PathLike, public_path: str | os.PathLike) -> None:
        """Write proof.json and public.json, both or neither (temporary files, then renames)."""
        write_atomically([(proof_path, self.to_json()), (public_path, self.public_json())])


@dataclass
class VerificationKey:
    curve: Curve
    n_public: int
    alpha1: G1Point
    beta2: G2Point
    gamma2: G2Point
    delta2: G2Point
    ic: list[G1Point]  # n_public + 1 points
