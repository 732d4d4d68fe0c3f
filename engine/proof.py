"""The values a Groth16 proof and its verification key hold (points as plain-int affine tuples)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .backend import G1Point, G2Point
from .curves import Curve


@dataclass
class Proof:
    curve: Curve
    pi_a: G1Point
    pi_b: G2Point
    pi_c: G1Point
    public: list[int] = field(default_factory=list)  # w_1 .. w_nPublic (plain)
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds, for --verbose and perf


@dataclass
class VerificationKey:
    curve: Curve
    n_public: int
    alpha1: G1Point
    beta2: G2Point
    gamma2: G2Point
    delta2: G2Point
    ic: list[G1Point]  # n_public + 1 points
