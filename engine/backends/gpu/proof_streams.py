"""Which parts of a resident proof run beside the others, on streams of their own: B2's MSM, the front,
pi_b, and the mid phase's products as MSMs.

launch.py and pipeline.py follow these rules and footprint.py counts the scratch they take, so the rules sit
apart from all three: each is a measured trade of the device's idle SMs against throughput or memory
(perf/RESULTS.md) that an environment variable switches for A/B runs.  Callers look them up through this
module (proof_streams.b2_beside), so that a test's replacement reaches every one of them.
"""
from __future__ import annotations

from engine.backends.gpu import msm as gmsm
from engine.env_setting import config_error, switch


def b2_beside(plan_w: gmsm.MsmPlan, granted: bool = False) -> bool:
    """Whether a resident proof under `plan_w` runs its B2 (G2) MSM on a stream of its own, beside the
    front and the G1 MSMs, with a sort and bucket scratch of its own: the small full-fold plans whose
    A, B1, C share one launch set.  Their MSMs are chains of dependent point operations on a few SMs
    (perf/RESULTS.md, "GPU MSM at proof sizes"), so the device has room for both.  Larger plans fill more
    of the device, but a lone proof still gained on this path (session 38: BN254 2^20 25.0-25.3 -> 24.0-24.2 ms,
    2^22 67.7-67.9 -> 64.9-66.0, BLS12-381 2^20 43.3-43.4 -> 38.3-38.6), so they take it where their footprint was
    `granted` the second scratch (KeyFootprint.b2_stream: it costs real memory there).  GROTH16_B2_BESIDE=0
    keeps every proof on the one path, =1 puts every resident proof on the small path (A/B measurements)."""
    forced = switch("GROTH16_B2_BESIDE", config_error)
    if forced is not None:
        return forced
    return granted or gmsm.fused_sets(plan_w) > 1


# The front goes beside the G1 MSMs from this domain up: measured on the H200 (perf/RESULTS.md, "Session
# 25") 0.2-0.4 ms faster at the 2^17 domain and no faster at 2^14 (the G1 MSMs slow beside it, the tail's
# side stream reaches its join later); the bound lies between the two measured domains.
FRONT_BESIDE_MIN_DOMAIN = 1 << 16


def front_beside(domain: int) -> bool:
    """Whether a small proof (b2_beside) of a key with this domain runs its front (evaluate, the NTTs, h) on
    the tail's side stream after the early phase, beside the A, B1, C MSMs, instead of on the compute stream
    between them and H: both need only the witness.  It needs no memory of its own (the front's buffers are
    its own already).  GROTH16_FRONT_BESIDE=1 / 0 forces it either way (A/B measurements)."""
    forced = switch("GROTH16_FRONT_BESIDE", config_error)
    if forced is not None:
        return forced
    return domain >= FRONT_BESIDE_MIN_DOMAIN


def pi_b_beside() -> bool:
    """Whether a small proof (b2_beside) makes pi_b (beta2 + B2 + s delta2, affine: one thread's G2 additions
    and inversion) on B2's stream right after B2, beside the H MSM and the mid phase, instead of at the start
    of its final phase, where the Miller loop's line maker waits for it.  GROTH16_PI_B_BESIDE=0 keeps it in
    the final phase (A/B measurements)."""
    return switch("GROTH16_PI_B_BESIDE", config_error) is not False


# A small proof's s·A and r·B1 come from MSMs beside the others up to this domain (products_beside).
PRODUCTS_MAX_DOMAIN = 1 << 15
PRODUCT_SCRATCH_COPIES = 3  # the s w and r w MSMs' and the front and H lane's sort and bucket scratch


def products_beside(plan_w: gmsm.MsmPlan, domain: int) -> bool:
    """Whether a small proof (b2_beside) makes the mid phase's s·A and r·B1 as two MSMs of their own, s·w over
    A and r·w over B1 (w the witness, each on a stream of its own from the upload on), with its front and H
    MSM on a fifth stream, instead of as scalar products of the A and B1 sums (a chain of ~1.2 ms after
    them).  Each of the three MSMs needs a sort and bucket scratch of its own, and s·w, r·w 2 n_wires scalars.
    GROTH16_PRODUCTS_BESIDE=1 / 0 forces it either way (A/B measurements)."""
    if not b2_beside(plan_w):
        return False
    forced = switch("GROTH16_PRODUCTS_BESIDE", config_error)
    if forced is not None:
        return forced
    return domain <= PRODUCTS_MAX_DOMAIN


def products_now(idle: bool) -> bool:
    """Whether a proof whose memory phase reserved the products' scratch (products_beside) runs them now: when
    it is alone on its backend, no other proof staged or in flight (`idle`: waiting.Flight.idle).  Beside other
    proofs the device is busy anyway, and the products' three MSMs and ~20 launches cost throughput: perf/sweep.py
    at the 2^14 domain made 595 proofs/s with them for every proof against 780 without, and 497 with this rule
    against 507 without (perf/RESULTS.md, "Session 27").  GROTH16_PRODUCTS_BESIDE=1 runs them always (A/B
    measurements)."""
    return idle or switch("GROTH16_PRODUCTS_BESIDE", config_error) is True
