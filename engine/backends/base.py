"""The backend seam: the stages of one Groth16 proof (design.md §2).

A backend turns (proving key, witness) into the five multi-scalar products of
a proof; the prover (`engine.groth16.prover`) adds the random r, s and assembles the
proof on the CPU, unless the backend did that itself and says so in `CoreResult.proof`
(the GPU backend runs the epilogue and the pairing check on the device).  The CPU backend (`engine.backends.cpu`) is the reference;
the GPU backend (`engine.backends.gpu`) implements the same methods.

Data at the seam (fixed so that arrays can be copied to a device as they are):

* Field elements: numpy ``uint64`` arrays of shape ``(n, n8/8)``, little-endian
  limbs, **plain** canonical values in [0, p) unless a name says ``mont``.
  Fr is ``(n, 4)`` on both curves.
* G1 bases: ``uint64`` ``(n, 2, n8q/8)`` affine x, y in Montgomery form, the
  zkey's own bytes; all-zero means the point at infinity.
* G2 bases: ``uint64`` ``(n, 2, 2, n8q/8)``: x.c0, x.c1, y.c0, y.c1, Montgomery.
* Points returned to Python: affine tuples of ints (plain, not Montgomery):
  G1 ``(x, y)``, G2 ``((x0, x1), (y0, y1))``, ``None`` for infinity.

The split into `stage` (memory phase: allocations and uploads) and `compute`
(compute phase: kernels) is what the scheduler's two locks gate
(design.md §5); `Pending.wait` blocks a waiter thread, never the event loop.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from engine.algebra.curves import Curve

G1Point = Optional[tuple[int, int]]
G2Point = Optional[tuple[tuple[int, int], tuple[int, int]]]


@dataclass
class CoreResult:
    """The multi-scalar products of one proof, before randomisation (spec §5.1 step 6)."""

    pi_a0: G1Point  # sum_i w_i A_i
    pi_b1_0: G1Point  # sum_i w_i B1_i
    pi_b2_0: G2Point  # sum_i w_i B2_i (G2)
    pi_c0: G1Point  # sum over private wires w_i C_{i-nPublic-1}
    pi_h: G1Point  # sum_j h_j H_j
    timings: dict[str, float] = field(default_factory=dict)  # stage name -> seconds
    # Set by a backend that runs the epilogue itself (the GPU): the proof's (pi_a, pi_b, pi_c),
    # affine (the MSM sums above are then for tests only).  `verified`: the backend's own
    # pairing check of that proof (None where it made none).
    proof: Optional[tuple] = None
    verified: Optional[bool] = None


class ComputeStopped(Exception):
    """A compute phase ended early at a stage boundary because its `stop` said so (a cancelled job)."""


class ResidentKey:
    """A proving key prepared for one backend (on a GPU: uploaded and kept resident).

    Backends subclass it; `zkey` is the parsed key it came from.
    """

    def __init__(self, zkey: Any):
        self.zkey = zkey

    @property
    def curve(self) -> Curve:
        return self.zkey.curve

    def close(self) -> None:
        """Release what the key holds (device memory); idempotent."""


class Pending:
    """A proof's compute phase in flight.  `wait()` blocks until it is done."""

    def __init__(self, wait: Callable[[], CoreResult]):
        self._wait = wait
        self._result: CoreResult | None = None

    def wait(self) -> CoreResult:
        if self._result is None:
            self._result = self._wait()
        return self._result


@dataclass
class Staged:
    """A proof after its memory phase: inputs are on the device (or, on the CPU, simply held)."""

    key: ResidentKey
    witness: np.ndarray
    state: Any = None  # backend-specific (device buffers, events)
    timings: dict[str, float] = field(default_factory=dict)


class Backend(ABC):
    """One way of running the heavy stages of a proof."""

    name: str = "abstract"
    # True: the backend checks that a witness's values are reduced (UnreducedWitnessError from its
    # prove_core or Pending) so its callers skip the host's own pass over the witness
    checks_witness_range: bool = False

    # ---- keys
    @abstractmethod
    def load_key(self, zkey: Any) -> ResidentKey:
        """Prepare a parsed zkey for repeated proofs (upload it once, keep it resident)."""

    def working_set_bytes(self, key: ResidentKey) -> int:
        """Device memory one proof of this key needs beyond the resident key (0 on the CPU)."""
        return 0

    # ---- stage primitives (the pipeline below, and tests against the CPU reference)
    @abstractmethod
    def evaluate(self, key: ResidentKey, witness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A·w and B·w on the n-point domain from the zkey's coeffs (plain, (n, 4) each)."""

    @abstractmethod
    def quotient(self, curve: Curve, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """h_j = a'_j b'_j - c'_j on the coset g·ω^j (spec §5.1 steps 3-5), plain (n, 4)."""

    @abstractmethod
    def ntt(self, curve: Curve, values: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        """Natural-order NTT of a power-of-two length (spec §5.2).

        forward:  out_i = sum_j x_j g^j ω^(ij)  (g = the coset generator when coset, else 1)
        inverse:  the exact inverse of forward with the same `coset` flag.
        """

    @abstractmethod
    def msm_g1(self, curve: Curve, bases: np.ndarray, scalars: np.ndarray) -> G1Point:
        """sum_i scalars_i * bases_i; bases (n, 2, L) Montgomery affine, scalars (n, 4) plain.

        Scalars must be < r; a backend raises ValueError for one that is not.
        """

    @abstractmethod
    def msm_g2(self, curve: Curve, bases: np.ndarray, scalars: np.ndarray) -> G2Point:
        """As msm_g1, over G2 bases (n, 2, 2, L)."""

    # ---- one proof, split into the scheduler's two phases
    def stage(self, key: ResidentKey, witness: np.ndarray) -> Staged:
        """Memory phase: make the witness available to `compute` (upload, allocate)."""
        return Staged(key=key, witness=witness)

    def compute(self, staged: Staged, stop: Callable[[], bool] | None = None) -> Pending:
        """Compute phase: start the stages; the returned Pending's wait() gives the result.

        stop: polled at each stage boundary; once true, the compute ends with ComputeStopped
        (the scheduler sets it when the proof's job was cancelled).
        """
        result = self.prove_core(staged.key, staged.witness, stop=stop)
        result.timings = {**staged.timings, **result.timings}
        return Pending(lambda: result)

    def prove_core(self, key: ResidentKey, witness: np.ndarray,
                   stop: Callable[[], bool] | None = None) -> CoreResult:
        """All heavy stages of one proof, run one after another (the reference pipeline)."""
        z = key.zkey
        curve = z.curve
        timings: dict[str, float] = {}
        stages = (
            ("evaluate", lambda: self.evaluate(key, witness)),
            ("quotient", lambda: self.quotient(curve, *out["evaluate"])),
            ("msm_h", lambda: self.msm_g1(curve, z.h, out["quotient"])),
            ("msm_a", lambda: self.msm_g1(curve, z.a, witness)),
            ("msm_b1", lambda: self.msm_g1(curve, z.b1, witness)),
            ("msm_b2", lambda: self.msm_g2(curve, z.b2, witness)),
            ("msm_c", lambda: self.msm_g1(curve, z.c, witness[z.n_public + 1 :])),
        )
        out: dict[str, Any] = {}
        for name, run in stages:
            if stop is not None and stop():
                raise ComputeStopped(f"{name}: the proof's job was cancelled")
            t = time.perf_counter()
            out[name] = run()
            timings[name] = time.perf_counter() - t
        return CoreResult(out["msm_a"], out["msm_b1"], out["msm_b2"], out["msm_c"], out["msm_h"], timings)

    def close(self) -> None:
        """Release the backend's resources (device contexts, pools)."""

    def close_for_exit(self) -> None:
        """close() for a process that ends right after (the CLI's direct proof, engine/exit_handoff.py):
        what must finish does (files written, the device's work done); what the process's end frees anyway
        may be left to it.  Backends with nothing to leave close as usual."""
        self.close()
