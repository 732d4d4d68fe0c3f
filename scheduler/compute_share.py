"""How many of a device's compute slots one proof of a key takes when the engine chooses
(`compute_slots = "auto"`, the default).

A GPU then has `AUTO_SLOTS` compute slots, and a key's proofs compute two at once: each proof's
serial stretches (a bucket reduction's last passes, the sort's scans, the tail, the gaps between
launches) leave SMs idle that the other proof's kernels fill, so the device is busier although a
proof computing alone already kept some kernel running 95-98% of the time.  Jobs of 10 partitions,
2 in flight, 1 -> 2 slots (perf/RESULTS.md, session 38, s/job): BN254 2^18 0.105 -> 0.075-0.079,
BN254 2^20 0.29-0.30 -> 0.23-0.24, BLS12-381 2^20 0.45-0.46 -> 0.35, BN254 2^22 0.93 -> 0.74-0.77,
BLS12-381 2^22 1.37-1.38 -> 1.18, the C2 job (BLS12-381 2^24) 4.16-4.24 -> 3.90-4.00.  Small
proofs measured level within their noise (BN254 2^16: 0.024-0.026 -> 0.024-0.030 s/job; the 2^14
domain 683-706 proofs/s either way, session 16's sweeps), so a key whose proofs' MSMs are
modelled below `MIN_SHARED_MSM_S` (BN254 2^16: 2.7 ms, BLS12-381 2^16: 6.1; BN254 2^18: 9.9) keeps
computing alone.  A lone proof is not slowed: it computes alone whatever the slot count.

Sharing needs the memory: a third working set (two computing, one staging) is planned only where
it costs the key nothing, the same tier, fold and (on the host tier) streamed chunks as with two;
otherwise a proof takes every slot and computes alone, as with one slot.  Two host-tier proofs
computing at once stream their bases side by side, each through its own staging buffers and copy
stream (engine/backends/gpu/host_tier.py); the C2 job under 16 GiB, the host tier at 2^21-wire chunks
with their staging buffers partly over a and b: 6.45-6.51 -> 5.37-5.51 s/job (session 39).
"""
from __future__ import annotations

from typing import Any, Callable

AUTO_SLOTS = 2
# The time model's MSM seconds a proof (the GPU footprint's msm_cost) from which a key's proofs share
# the device: between BN254 2^16 (level) and 2^18 (1.36x), both measured; BLS12-381 2^16 stays alone.
MIN_SHARED_MSM_S = 0.007


def auto_slot_count(backend: Any) -> int:
    """Compute slots a device gets under "auto": AUTO_SLOTS where the backend plans its keys'
    footprints (the GPU's), else one (a CPU or simulated device computes one proof at a time)."""
    return AUTO_SLOTS if getattr(backend, "plan_key", None) is not None else 1


def plan_with_share(plan: Callable[[int], Any], slots: int) -> tuple[Any, int]:
    """(footprint, slots one proof takes) for a split-mode device with `slots` compute slots under
    "auto"; `plan(proofs)` plans the key with room for that many working sets."""
    alone = plan(2)  # one computing, one staging
    if slots < 2 or alone.msm_cost < MIN_SHARED_MSM_S:
        return alone, slots
    shared = plan(slots + 1)
    if shared.proofs_in_flight == slots + 1 and _choice(shared) == _choice(alone):
        return shared, 1
    return alone, slots


def _choice(fp: Any) -> tuple:
    return fp.tier, fp.fold, fp.chunk_w, fp.chunk_h
