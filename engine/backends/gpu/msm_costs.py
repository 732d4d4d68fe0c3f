"""The MSM planner's cost terms per curve and group (msm.plan_msm picks the window c with them).

The planner weighs, for each candidate window, the bucket phase's entries (one mixed addition
each) against the buckets it reduces, the serial chain after the bucket sums and the Horner
doublings between bucket sets.  How those weigh against each other is a property of the
field: BN254's terms were fitted on the H200 and its windows measured right at every size
(perf/RESULTS.md, h15small and before), but BLS12-381's 12-limb field moves the optimum.  The
measured sweep (perf/RESULTS.md, b13bls "Window c": G1 2^20 c = 16 8.86 ms against the
BN254-calibrated plan's c = 20 9.37; G2 2^20 c = 16 26.8 against 28.9; G1 2^24 c = 20 107.4
against c = 22 109.4) fits an effective bucket cost of about 11 entries instead of 3 (what a
bucket adds whatever its entries: its share of the reduction's XYZZ additions, the partial sums
and fix-ups where chunks cut it; fitted, not counted) and a heavy penalty on windows whose top
window holds only a few scalar bits (c = 17, 18, 19, 21, 23 for its 255-bit r: that window's n
entries fall into 2^t buckets, a long fix-up chain; c = 17 leaves t = 0, half the scalars' carry
in bucket 1).  Those terms were measured to hold from 2^20 points on full folds only (at 2^16
they picked a window 44% slower), so each group's terms say where they apply (min_n,
full_fold_only) and the curve keeps the default terms elsewhere.

Terms are in entries of the group (one mixed addition of that group); `weight` is a group's
entry against its curve's G1 entry, used where one plan serves MSMs of both groups (a proof's
witness MSMs share one sort: A, B1, C in G1 and B2 in G2).  A curve without an entry here takes
DEFAULT_COSTS (BN254's calibration, with which its plans stay exactly what they were).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# The planner's latency term.  One dependent point operation on one thread costs about as
# long as the whole device takes for LATENCY_ENTRIES mixed additions (BN254 G1 on the H200:
# ~6 us an XYZZ operation, perf/pairing_latency.py, against ~2.7e9 additions/s at 2^24), so
# at small sizes the serial chain of the reduction, not the additions, decides the window.
LATENCY_ENTRIES = 16000
PLAN_SM_COUNT = 132  # the planner's device (an H200) for the latency estimate
# relative cost of an entry in the bucket phase (field products: 6 batch-affine, 10 mixed XYZZ)
ENTRY_COST = {"affine": 0.65, "xyzz": 1.0}
GROUPS = ("g1", "g2")
WITNESS_GROUPS = ("g1", "g1", "g1", "g2")  # a proof's A, B1, C and B2: one sorted scalar vector


@dataclass(frozen=True)
class PlanCosts:
    """One group's cost terms, in entries of that group (see the module's docstring)."""

    bucket: float = 3.0  # reducing one bucket (about 3 additions)
    latency: float = LATENCY_ENTRIES  # a step of the serial chain (msm.critical_depth)
    doubling: float = 40.0  # a doubling between bucket sets (partial folds), besides its latency
    skew: float = 0.0  # latency steps per extra fix-up step of the top window's buckets (msm.top_window_depth)
    weight: float = 1.0  # an entry against the curve's G1 entry
    # where the terms were measured to hold: MSMs of at least min_n points, and when full_fold_only, only
    # full-fold plans or partial folds of at least PARTIAL_MIN_FOLD tables over at least partial_min_n
    # points; elsewhere the group takes DEFAULT_COSTS (the plans it had before per-curve terms)
    min_n: int = 0
    full_fold_only: bool = False
    partial_min_n: int | None = None

    def applies(self, n: int, fold: str | int) -> bool:
        if n < self.min_n:
            return False
        if fold == "full" or not self.full_fold_only:
            return True
        return self.partial_min_n is not None and n >= self.partial_min_n and int(fold) >= PARTIAL_MIN_FOLD

    def terms(self) -> "PlanCosts":
        """The terms without the weight: groups with equal terms are costed once, weights summed."""
        return dataclasses.replace(self, weight=1.0)


DEFAULT_COSTS = {"g1": PlanCosts(), "g2": PlanCosts(weight=3.0)}
# BLS12-381 (fitted to the b13bls sweep, 21 timings of G1 2^20, 2^21, 2^24 and G2 2^20 at c = 16..23:
# the plans of every measured row are the measured best).  G2's entries cost ~3.1x G1's (2^20 c = 20:
# 28.9 against 9.37 ms) and its sweep fits the same terms.  latency: a dependent 12-limb step ~2x
# BN254's (13.3 against 6.3 us a serial doubling, footprint.T_SERIAL_DOUBLING) over ~0.48 ns an entry.
# Measured on the H200 (perf/RESULTS.md, b15win): from 2^20 they hold (G1 2^20 c = 16 8.88 against
# 9.41 ms, 2^24 c = 20 107.6 against 109.7; G2 2^20 26.9 against 29.0; the 2^20 proof 69.1 -> 60.4 ms),
# but not at 2^16, where their c = 10 took 2.23 ms against c = 16's 1.55 (G2 5.51 against 3.98): so
# min_n = 2^20, and full folds only (the fit's; partial folds' doubling chains were not re-measured).
# Partial folds from 2^23 points (partial_min_n): measured at 2^24 under fold 8 (the C2 key's on the whole H200;
# perf/RESULTS.md "Session 37", perf/msm.py --fold 8 --window), where BN254's terms picked c = 22 and these pick
# c = 20: G1 random 110.4 -> 102.2 ms, the bench circuit's witness 53.8 -> 45.9; G2 332.4 -> 322.5 and 159.0 ->
# 140.6 (c = 16 and 21 slower than 20 in all four).  Folds below PARTIAL_MIN_FOLD (many bucket sets, long
# doubling chains between them) and smaller MSMs keep BN254's terms: not measured.
PARTIAL_MIN_FOLD = 4
BLS12_381_COSTS = PlanCosts(bucket=11.0, latency=24000.0, skew=2.0, min_n=1 << 20, full_fold_only=True,
                            partial_min_n=1 << 23)
PLAN_COSTS_BY_CURVE: dict[str, dict[str, PlanCosts]] = {
    "bls12381": {"g1": BLS12_381_COSTS, "g2": dataclasses.replace(BLS12_381_COSTS, weight=3.0)},
}


# A measured replacement for the terms' window on full folds: where they pick c = 9 (2^12 .. 2^14 points), c = 8
# ran 20-30% faster on the H200 for random scalars, both groups, both curves, and the same on a 0/1 witness
# (perf/RESULTS.md, "Session 27", perf/msm.py --window: BN254 G1 2^13 0.43 against 0.58 ms, G2 1.13 against 1.60;
# 2^14 G1 0.59 against 0.75, G2 1.40 against 1.70; BLS12-381 G1 2^13 0.76 against 1.01, G2 2.10 against 2.86;
# c = 6, 7, 10 and 16 no faster than 8 there), while from 2^15 the terms' c = 16 was the fastest measured.  The
# terms do not see it (their entries and serial chain favour 9): a table, not a term (XYZZ accumulation only: the
# batch-affine rounds' plans were not re-measured).
FULL_FOLD_WINDOW = {9: 8}


def costs_for(curve: str | None, group: str, n: int | None = None, fold: str | int = "full") -> PlanCosts:
    """`group`'s terms on `curve` (a module's `curve` name; None or unlisted: DEFAULT_COSTS) for an MSM
    of n points under `fold` (n None: the curve's terms wherever they apply)."""
    if group not in GROUPS:
        raise ValueError(f"msm group {group!r} is not one of {GROUPS}")
    k = PLAN_COSTS_BY_CURVE.get(curve or "", DEFAULT_COSTS).get(group, DEFAULT_COSTS[group])
    return k if n is None or k.applies(n, fold) else DEFAULT_COSTS[group]


def cost_mix(curve: str | None, groups: tuple[str, ...], n: int | None = None,
             fold: str | int = "full") -> list[tuple[PlanCosts, float]]:
    """The distinct terms (where they apply aside) of the MSMs one plan serves, each with its
    summed weight, first seen first."""
    if not groups:
        raise ValueError("a plan serves at least one MSM")
    mix: dict[PlanCosts, float] = {}
    for group in groups:
        k = costs_for(curve, group, n, fold)
        key = dataclasses.replace(k.terms(), min_n=0, full_fold_only=False, partial_min_n=None)
        mix[key] = mix.get(key, 0.0) + k.weight
    return list(mix.items())


def top_window_bits(c: int, windows: int, scalar_bits: int) -> int:
    """Scalar bits in the top window (its digit is those bits plus the carry from below)."""
    return max(0, scalar_bits - c * (windows - 1))
