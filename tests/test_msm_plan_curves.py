"""The MSM planner's per-curve terms (msm_costs.py): BN254's plans exactly as they were, BLS12-381's the
measured-better windows, and every caller that makes a key's plans passing the curve and groups."""
from __future__ import annotations

import hashlib

import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.backends.gpu import footprint as fpm
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_costs
from engine.backends.gpu.footprint import KeyShape

GiB = 1 << 30

# BN254's plans before the per-curve terms (main at 61a07e7, curve-blind plan_msm): the c of the default
# plan per log2 n for folds full, 8, 4, 2, 1 ...
BN254_C = {10: (8, 16, 13, 10, 10), 11: (8, 16, 13, 10, 10), 12: (9, 16, 13, 13, 10), 13: (9, 16, 13, 13, 10),
           14: (9, 16, 16, 13, 10), 15: (16, 16, 16, 13, 13), 16: (16, 16, 16, 13, 13), 17: (17, 16, 16, 16, 13),
           18: (17, 16, 16, 16, 15), 19: (17, 17, 16, 16, 15), 20: (20, 17, 17, 17, 16), 21: (20, 20, 17, 17, 17),
           22: (20, 20, 20, 19, 17), 23: (22, 20, 20, 20, 19), 24: (22, 22, 22, 20, 20), 25: (22, 22, 22, 22, 20),
           26: (22, 22, 22, 22, 20)}
FOLDS = ("full", 8, 4, 2, 1)
# ... and the digest of every field of every plan over log2 n 10..26, the folds, both accumulations,
# batches 1 and 4 and window bounds 22, 16, 13 (repr of each MsmPlan, "none" where none fits)
BN254_GRID_SHA256 = "7457453221366ead3f390a7ba1cc156cb547ac7d7620701b10b647fee822fc41"

# The b13bls window sweep on the H200 (perf/RESULTS.md, "Window c", full fold, ms; G1 mixed_eo, G2 eo),
# the data BLS12-381's terms were fitted to, and b15win's call (2^16: the terms' c = 10 against c = 16)
BLS_SWEEP = {
    ("g1", 16): {10: 2.232, 16: 1.551},
    ("g2", 16): {10: 5.508, 16: 3.977},
    ("g1", 20): {16: 8.862, 17: 9.315, 18: 9.432, 19: 10.116, 20: 9.366, 21: 11.048},
    ("g1", 21): {16: 16.690, 17: 17.012, 18: 16.623, 19: 17.377, 20: 16.199, 21: 18.341},
    ("g1", 24): {20: 107.393, 21: 111.546, 22: 109.424, 23: 120.780},
    ("g2", 20): {16: 26.778, 18: 29.438, 19: 30.697, 20: 28.916, 21: 33.824},
}


def bn254_grid(curve, groups) -> str:
    rows = []
    for log_n in range(10, 27):
        for fold in FOLDS:
            for acc in ("xyzz", "affine"):
                for batch in (1, 4):
                    for max_c in (22, 16, 13):
                        try:
                            plan = gmsm.plan_msm(1 << log_n, 254, fold, max_c, batch=batch, accumulation=acc,
                                                 curve=curve, groups=groups)
                        except ValueError:
                            plan = "none"
                        rows.append(f"{log_n} {fold} {acc} {batch} {max_c}: {plan!r}")
    return "\n".join(rows)


@pytest.mark.parametrize("curve, groups", [(None, ("g1",)), ("bn128", ("g1",)), ("bn128", ("g2",)),
                                           ("bn128", gmsm.WITNESS_GROUPS)])
def test_bn254_plans_are_byte_identical_to_the_curve_blind_planner(curve, groups):
    assert hashlib.sha256(bn254_grid(curve, groups).encode()).hexdigest() == BN254_GRID_SHA256
    for log_n, cs in BN254_C.items():
        assert tuple(gmsm.plan_msm(1 << log_n, 254, f, curve=curve, groups=groups).c for f in FOLDS) == cs


@pytest.mark.parametrize("group, log_n, c", [("g1", 20, 16), ("g2", 20, 16), ("g1", 24, 20), ("g1", 21, 20)])
def test_bls12381_takes_the_measured_better_window(group, log_n, c):
    """The curve-blind planner took c = 20 at 2^20 (G1 9.37 ms against c = 16's 8.86, G2 28.9 against
    26.8) and c = 22 at 2^24 (109.4 against c = 20's 107.4)."""
    plan = gmsm.plan_msm(1 << log_n, 255, curve="bls12381", groups=(group,))
    assert plan.c == c and plan.fold == plan.windows
    assert gmsm.plan_msm(1 << log_n, 255, groups=(group,)).c == (22 if log_n == 24 else 20)  # the old plan


def test_every_measured_bls12381_row_plans_its_fastest_window():
    for (group, log_n), times in BLS_SWEEP.items():
        plan = gmsm.plan_msm(1 << log_n, 255, curve="bls12381", groups=(group,))
        assert plan.c == min(times, key=times.get), (group, log_n, plan.c)


def test_bls12381_terms_only_where_measured():
    """Below 2^20 (2^16 measured: the terms' c = 10 44% slower than c = 16) and for partial folds (not
    re-measured) BLS12-381 keeps the curve-blind plans."""
    for log_n in range(10, 27):
        for fold in (8, 4, 2, 1) if log_n >= 20 else ("full", 8, 4, 2, 1):
            for groups in (("g1",), ("g2",), gmsm.WITNESS_GROUPS):
                assert gmsm.plan_msm(1 << log_n, 255, fold, curve="bls12381", groups=groups) == \
                    gmsm.plan_msm(1 << log_n, 255, fold), (log_n, fold, groups)
    assert msm_costs.costs_for("bls12381", "g1", (1 << 20) - 1) == msm_costs.DEFAULT_COSTS["g1"]
    assert msm_costs.costs_for("bls12381", "g1", 1 << 20, 1) == msm_costs.DEFAULT_COSTS["g1"]
    assert msm_costs.costs_for("bls12381", "g1", 1 << 20) == msm_costs.BLS12_381_COSTS
    assert [gmsm.plan_msm(1 << k, 255, curve="bls12381", groups=gmsm.WITNESS_GROUPS).c for k in (20, 22, 23, 24)] \
        == [16, 20, 20, 20]


def test_the_witness_plan_weighs_three_g1_msms_and_one_g2():
    mix = msm_costs.cost_mix("bn128", gmsm.WITNESS_GROUPS)
    assert mix == [(msm_costs.PlanCosts(), 6.0)]  # BN254: one set of terms, G2 three G1 entries
    bls = msm_costs.cost_mix("bls12381", gmsm.WITNESS_GROUPS)
    assert [w for _, w in bls] == [6.0] and bls[0][0].bucket > msm_costs.DEFAULT_COSTS["g1"].bucket
    assert msm_costs.costs_for("bls12381", "g2").weight == 3.0
    assert msm_costs.costs_for("no_such_curve", "g1") == msm_costs.DEFAULT_COSTS["g1"]
    with pytest.raises(ValueError):
        msm_costs.costs_for("bn128", "g3")
    with pytest.raises(ValueError):
        gmsm.plan_msm(1 << 10, 254, groups=())


def test_the_top_window_of_a_255_bit_scalar():
    """c = 17 over BLS12-381's 255 bits: 16 windows, the top one only the carry (half the scalars' n/2
    entries in bucket 1): a long fix-up the full windows (c = 16, 20) do not have."""
    assert msm_costs.top_window_bits(17, gmsm.windows_for(17, 255), 255) == 0
    assert msm_costs.top_window_bits(16, gmsm.windows_for(16, 255), 255) == 15
    assert msm_costs.top_window_bits(20, gmsm.windows_for(20, 254), 254) == 14

    def plan(c, n=1 << 20):
        w = gmsm.windows_for(c, 255)
        return gmsm.MsmPlan(n, c, w, w, 255)

    assert gmsm.top_window_depth(plan(16), 132) == 0 and gmsm.top_window_depth(plan(20), 132) == 0
    assert gmsm.top_window_depth(plan(17), 132) > 10 and gmsm.top_window_depth(plan(19), 132) > 10
    # a batch has a bucket set a vector: the depth does not grow with it
    assert gmsm.top_window_depth(gmsm.plan_for_batch(plan(17), 4), 132) <= gmsm.top_window_depth(plan(17), 132) + 1


def bench_shape(curve, log_constraints: int) -> KeyShape:
    n = (1 << log_constraints) + 8
    return KeyShape(curve, n, 1 << (log_constraints + 1), 4 * n, 4 * n)


def test_a_bls12381_key_plans_with_its_curve_terms_and_counts_the_tables_they_take():
    """The 2^20 bench key: witness MSMs at c = 16 (16 fold tables of A, B1, C, B2, was 13 at c = 20); the
    footprint's bytes are those tables, and every plan a proof may take uses the curve's terms."""
    shape = bench_shape(BLS12_381, 20)
    fp = fpm.plan_key(shape, 139 * GiB, proofs=2)
    want_w = gmsm.plan_msm(shape.n_wires, 255, "full", curve="bls12381", groups=gmsm.WITNESS_GROUPS)
    assert fp.tier == "resident" and fp.plan_w == want_w and fp.plan_w.c == 16 and fp.fold == 16
    assert fp.plan_h == gmsm.plan_msm(shape.domain, 255, "full", curve="bls12381", groups=("g1",))
    assert fp.early_w == gmsm.plan_msm(shape.n_wires, 255, 1, curve="bls12381", groups=gmsm.WITNESS_GROUPS)
    points = (3 * fpm._alloc(16 * shape.n_wires * fpm.g1_bytes(BLS12_381))
              + fpm._alloc(16 * shape.n_wires * fpm.g2_bytes(BLS12_381))
              + fpm._alloc(fp.plan_h.fold * shape.domain * fpm.g1_bytes(BLS12_381)))
    assert fp.device_bytes == shape.fixed_device_bytes() + points + shape.epilogue_device_bytes()
    assert fp.device_bytes + fp.proofs_in_flight * fp.working_set_bytes <= fp.budget_bytes
    host = fpm.plan_key(shape, GiB, proofs=2, tier="host", chunk=1 << 17)
    assert host.plan_w == gmsm.plan_msm(1 << 17, 255, 1, curve="bls12381", groups=gmsm.WITNESS_GROUPS)


def msm_bytes(fp, curve) -> int:
    """The MSMs' share of a proof's working set: the sort's and buckets' scratch for every plan it may take."""
    plans, shapes = fpm.scratch_shapes(fp.all_plans(), fpm.DEFAULT_SM_COUNT)
    return gmsm.SortScratch.nbytes(plans) + gmsm.BucketScratch.nbytes(shapes, fpm.acc_bytes(curve, True))


def summary(fp, shape):
    """(tier, (c, windows, fold) of every plan a proof may take, the key's MSM points' bytes, msm_bytes,
    proofs in flight): what the window decides in a footprint."""
    plans = tuple((p.c, p.windows, p.fold) for pair in fp.all_plans() for p in pair)
    epilogue = shape.epilogue_device_bytes() if fp.tier == "resident" else 0
    return fp.tier, plans, fp.device_bytes - shape.fixed_device_bytes() - epilogue, msm_bytes(fp, shape.curve), \
        fp.proofs_in_flight


# BN254 bench keys' footprints before the per-curve terms (main at 61a07e7): (log2 constraints, budget GiB) ->
# summary(); the plans are (witness, H) and, with fold tables, the fold-1 pair a proof takes while they build.
# The MSM scratch from 2^20 up is 65-67 KB smaller than then: half as many reduction segments (longer ones,
# msm.SEGMENT_THREADS_PER_SM), so half the segment sums; the plans are the same.
BN254_FOOTPRINTS = {
    (14, 139): ("resident", ((9, 29, 29), (16, 16, 16), (10, 26, 1), (13, 20, 1)), 185672192, 231382364, 2),
    (14, 16): ("resident", ((9, 29, 29), (16, 16, 16), (10, 26, 1), (13, 20, 1)), 185672192, 231382364, 2),
    (20, 139): ("resident", ((20, 13, 13), (20, 13, 13), (16, 16, 1), (17, 15, 1)), 6106939904, 470283004, 2),
    (20, 16): ("resident", ((20, 13, 13), (20, 13, 13), (16, 16, 1), (17, 15, 1)), 6106939904, 470283004, 2),
    (22, 139): ("resident", ((20, 13, 13), (22, 12, 12), (17, 15, 1), (19, 14, 1)), 23890788864, 1566648572, 2),
    (22, 16): ("resident", ((20, 13, 4), (20, 13, 4), (17, 15, 1), (19, 14, 1)), 7516203008, 1566648572, 2),
    (24, 139): ("resident", ((22, 12, 12), (22, 12, 12), (20, 13, 1), (20, 13, 1)), 90194343936, 3722543100, 2),
    (24, 16): ("host", ((17, 15, 1), (19, 14, 1)), 0, 1566648572, 1),
}


@pytest.mark.parametrize("log_c, budget", list(BN254_FOOTPRINTS))
def test_bn254_key_footprints_are_unchanged(log_c, budget):
    """BN254 keys keep the plans, and so the key's bytes and the MSM scratch, the curve-blind planner gave them."""
    shape = bench_shape(BN254, log_c)
    fp = fpm.plan_key(shape, budget * GiB, proofs=2)
    assert summary(fp, shape) == BN254_FOOTPRINTS[(log_c, budget)]


def test_the_reduction_aims_at_256_segments_an_sm_where_buckets_are_many():
    """msm_reduce_segments' segment length (measured on the H200, perf/RESULTS.md "Session 25"): 2^19
    buckets on 132 SMs -> 16 buckets a thread, 2^21 -> 63 (64 was measured), a small set -> MIN_SEGMENT; the segments cover
    every bucket."""
    for log_n, want in ((20, 16), (24, 63), (14, gmsm.MIN_SEGMENT)):
        plan = gmsm.plan_msm(1 << log_n, 254, "full", curve="bn128", groups=("g1",))
        lay = gmsm.AccumulateLayout.for_plan(plan, 132)
        assert lay.seg_len == want, (log_n, plan.c, lay.seg_len)
        assert lay.segs * lay.seg_len >= plan.buckets_per_group > (lay.segs - 1) * lay.seg_len
