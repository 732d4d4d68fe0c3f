"""The MSM planner's per-curve terms (msm_costs.py): BN254's plans exactly as they were (but for the measured
full-fold window, msm_costs.FULL_FOLD_WINDOW), BLS12-381's the measured-better windows, and every caller that makes a
key's plans passing the curve and groups."""
from __future__ import annotations

import hashlib

import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.backends.gpu import footprint as fpm
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_costs
from engine.backends.gpu.footprint import KeyShape

GiB = 1 << 30

# BN254's plans before the per-curve terms (main at 61a07e7, curve-blind plan_msm), but for the measured full-fold
# window of session 27 (msm_costs.FULL_FOLD_WINDOW: c = 9 -> 8 at 2^12 .. 2^14, XYZZ): the c of the default plan per
# log2 n for folds full, 8, 4, 2, 1 ...
BN254_C = {10: (8, 16, 13, 10, 10), 11: (8, 16, 13, 10, 10), 12: (8, 16, 13, 13, 10), 13: (8, 16, 13, 13, 10),
           14: (8, 16, 16, 13, 10), 15: (16, 16, 16, 13, 13), 16: (16, 16, 16, 13, 13), 17: (17, 16, 16, 16, 13),
           18: (17, 16, 16, 16, 15), 19: (17, 17, 16, 16, 15), 20: (20, 17, 17, 17, 16), 21: (20, 20, 17, 17, 17),
           22: (20, 20, 20, 19, 17), 23: (22, 20, 20, 20, 19), 24: (22, 22, 22, 20, 20), 25: (22, 22, 22, 22, 20),
           26: (22, 22, 22, 22, 20)}
FOLDS = ("full", 8, 4, 2, 1)
# ... and the digest of every field of every plan over log2 n 10..26, the folds, both accumulations,
# batches 1 and 4 and window bounds 22, 16, 13 (repr of each MsmPlan, "none" where none fits; 7457453... before
# the measured full-fold window)
BN254_GRID_SHA256 = "b19d43f5af36f193b234884ea615f9c4b8e3952e1b98d5f4f9b0f3db0767061c"

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
    """Below 2^20 (2^16 measured: the terms' c = 10 44% slower than c = 16), for folds below 4 and for partial
    folds under 2^23 points (not measured) BLS12-381 keeps the curve-blind plans; from 2^23 points on folds of
    4 and more it takes its own terms (2^24 under fold 8 measured: c = 20 against the curve-blind 22)."""
    for log_n in range(10, 27):
        for fold in (8, 4, 2, 1) if log_n >= 20 else ("full", 8, 4, 2, 1):
            for groups in (("g1",), ("g2",), gmsm.WITNESS_GROUPS):
                own = gmsm.plan_msm(1 << log_n, 255, fold, curve="bls12381", groups=groups)
                if log_n >= 23 and fold >= msm_costs.PARTIAL_MIN_FOLD:
                    assert msm_costs.costs_for("bls12381", groups[0], 1 << log_n, fold).bucket == 11.0
                else:
                    assert own == gmsm.plan_msm(1 << log_n, 255, fold), (log_n, fold, groups)
    assert msm_costs.costs_for("bls12381", "g1", (1 << 20) - 1) == msm_costs.DEFAULT_COSTS["g1"]
    assert msm_costs.costs_for("bls12381", "g1", 1 << 20, 1) == msm_costs.DEFAULT_COSTS["g1"]
    assert msm_costs.costs_for("bls12381", "g1", 1 << 20, 8) == msm_costs.DEFAULT_COSTS["g1"]
    assert msm_costs.costs_for("bls12381", "g1", 1 << 23, 2) == msm_costs.DEFAULT_COSTS["g1"]
    assert msm_costs.costs_for("bls12381", "g1", 1 << 20) == msm_costs.BLS12_381_COSTS
    assert msm_costs.costs_for("bls12381", "g1", 1 << 23, 4) == msm_costs.BLS12_381_COSTS
    for groups in (("g1",), ("g2",), gmsm.WITNESS_GROUPS):  # the C2 key's plans on the whole H200
        assert gmsm.plan_msm(1 << 24, 255, 8, groups=groups).c == 22
        assert gmsm.plan_msm(1 << 24, 255, 8, curve="bls12381", groups=groups).c == 20
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
    # 2^14: the witness plan's measured full-fold window (c = 8, 32 tables; c = 9 and 185672192 key bytes before)
    (14, 139): ("resident", ((8, 32, 32), (16, 16, 16), (10, 26, 1), (13, 20, 1)), 201408512, 231480668, 2),
    (14, 16): ("resident", ((8, 32, 32), (16, 16, 16), (10, 26, 1), (13, 20, 1)), 201408512, 231480668, 2),
    (20, 139): ("resident", ((20, 13, 13), (20, 13, 13), (16, 16, 1), (17, 15, 1)), 6106939904, 470283004, 2),
    (20, 16): ("resident", ((20, 13, 13), (20, 13, 13), (16, 16, 1), (17, 15, 1)), 6106939904, 470283004, 2),
    (22, 139): ("resident", ((20, 13, 13), (22, 12, 12), (17, 15, 1), (19, 14, 1)), 23890788864, 1566648572, 2),
    (22, 16): ("resident", ((20, 13, 4), (20, 13, 4), (17, 15, 1), (19, 14, 1)), 7516203008, 1566648572, 2),
    (24, 139): ("resident", ((22, 12, 12), (22, 12, 12), (20, 13, 1), (20, 13, 1)), 90194343936, 3722543100, 2),
    # 2^24 under 16 GiB: one proof in flight at 2^22-wire chunks with (17, 15, 1), (19, 14, 1) and 1566648572 bytes
    # of MSM scratch then; since a proof's staging buffers lie over its a and b where they fit (session 39:
    # footprint.staging_over_front) two fit at 2^21-wire chunks
    (24, 16): ("host", ((17, 15, 1), (17, 15, 1)), 0, 596111868, 2),
}


@pytest.mark.parametrize("log_c, budget", list(BN254_FOOTPRINTS))
def test_bn254_key_footprints_are_unchanged(log_c, budget):
    """BN254 keys keep the plans, and so the key's bytes and the MSM scratch, the curve-blind planner gave them (with
    the measured full-fold window at 2^14)."""
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


# The full-fold window sweep of session 27 (perf/RESULTS.md, "Session 27", perf/s27e_h200.sh: perf/msm.py --window,
# random scalars, ms): where the terms pick c = 9, c = 8 was the fastest measured, both groups and both curves
WINDOW_SWEEP = {
    ("bn128", "g1", 12): {6: 0.444, 7: 0.398, 8: 0.400, 9: 0.520, 10: 0.590, 16: 0.583},
    ("bn128", "g1", 13): {6: 0.569, 7: 0.520, 8: 0.426, 9: 0.577, 10: 0.607, 16: 0.595},
    ("bn128", "g1", 14): {6: 0.701, 7: 0.717, 8: 0.592, 9: 0.756, 10: 0.726, 16: 0.656},
    ("bn128", "g2", 12): {6: 1.206, 7: 1.071, 8: 1.025, 9: 1.316, 10: 1.496, 16: 1.382},
    ("bn128", "g2", 13): {6: 1.469, 7: 1.274, 8: 1.129, 9: 1.603, 10: 1.566, 16: 1.545},
    ("bn128", "g2", 14): {6: 1.787, 7: 1.675, 8: 1.401, 9: 1.714, 10: 1.770, 16: 1.578},
    ("bn128", "g1", 15): {6: 0.960, 7: 1.033, 8: 0.840, 9: 1.058, 10: 0.930, 16: 0.658},
    ("bn128", "g2", 16): {6: 3.631, 7: 3.520, 8: 2.956, 9: 3.525, 10: 3.030, 16: 2.042},
    ("bls12381", "g1", 13): {7: 0.849, 8: 0.761, 9: 1.010, 10: 1.100, 16: 1.186},
    ("bls12381", "g1", 14): {7: 1.120, 8: 0.961, 9: 1.222, 10: 1.255, 16: 1.188},
    ("bls12381", "g2", 13): {7: 2.273, 8: 2.100, 9: 2.729, 10: 2.952, 16: 3.024},
    ("bls12381", "g2", 14): {7: 2.931, 8: 2.582, 9: 3.356, 10: 3.371, 16: 2.968},
    ("bls12381", "g1", 15): {7: 1.590, 8: 1.348, 9: 1.634, 10: 1.595, 16: 1.269},
}


@pytest.mark.parametrize("curve, group, log_n", list(WINDOW_SWEEP))
def test_full_fold_plans_take_the_measured_window(curve, group, log_n, monkeypatch):
    """Each measured row's plan is its fastest window but for 2^12 G1 (c = 7, 0.398 ms, and 8, 0.400: equal within
    the repeats); the witness plans (A, B1, C, B2 on one sorted vector) take it too; without the table the terms
    would take 9 there."""
    bits = 255 if curve == "bls12381" else 254
    times = WINDOW_SWEEP[(curve, group, log_n)]
    plan = gmsm.plan_msm(1 << log_n, bits, curve=curve, groups=(group,))
    assert times[plan.c] <= 1.01 * min(times.values()), (curve, group, log_n, plan.c)
    assert plan.fold == plan.windows
    if log_n <= 14:
        assert plan.c == 8 and gmsm.plan_msm(1 << log_n, bits, curve=curve, groups=gmsm.WITNESS_GROUPS).c == 8
        monkeypatch.setattr(msm_costs, "FULL_FOLD_WINDOW", {})
        assert gmsm.plan_msm(1 << log_n, bits, curve=curve, groups=(group,)).c == 9
