"""CPU checks of the XYZZ pass's run layout (engine/backends/gpu/msm.py run_layout): chunks in
whole waves of the accumulation kernel's resident blocks, never more than the scratch's partial
slots, covering every entry; and the kernel names of the two builds of the base field's product."""
from __future__ import annotations

import pytest

from engine.backends.gpu import msm as gmsm


class Occupancy:
    """A module that answers the occupancy query with a fixed count (None: a driver that answers nothing)."""

    def __init__(self, per_sm):
        self.per_sm = per_sm
        self.asked = []

    def resident_blocks(self, name, threads, shared=0):
        self.asked.append((name, threads))
        return self.per_sm


def plan_of(log_n: int, c: int | None = None) -> gmsm.MsmPlan:
    plan = gmsm.plan_msm(1 << log_n, 254, "full", accumulation="xyzz")
    if c is not None:
        w = gmsm.windows_for(c, 254)
        plan = gmsm.MsmPlan(plan.n, c, w, w, 254)
    return plan


@pytest.mark.parametrize("log_n,per_sm,sm", [(24, 5, 132), (24, 3, 132), (20, 5, 132), (20, 1, 132), (18, 4, 132),
                                             (24, 2, 114), (22, 7, 66)])
def test_whole_waves_within_the_partial_slots(log_n, per_sm, sm, monkeypatch):
    monkeypatch.setattr(gmsm, "WHOLE_WAVES", True)
    plan = plan_of(log_n)
    layout = gmsm.AccumulateLayout.for_plan(plan, sm)
    entries = plan.xyzz_entries
    run = gmsm.run_layout(Occupancy(per_sm), "msm_accumulate_g1v", layout, entries)
    wave = per_sm * gmsm.ACCUMULATE_THREADS * sm
    assert run.chunks <= layout.chunks  # the partial slots the scratch has
    assert run.chunk * run.chunks >= entries > run.chunk * (run.chunks - 1)  # every entry, no empty chunk
    cost = -(-run.chunks // wave) * run.chunk  # waves x entries a thread
    assert cost <= -(-layout.chunks // wave) * layout.chunk
    for k in range(1, layout.chunks // wave + 1):  # no whole number of waves does better
        t = -(-entries // (k * wave))
        assert cost <= -(-(-(-entries // t)) // wave) * t
    assert (run.seg_len, run.segs, run.sm_count) == (layout.seg_len, layout.segs, layout.sm_count)


def test_bn254_2_24_runs_one_full_wave_instead_of_1_6():
    """The case measured on the H200: 2^24 points, 22-bit windows, ~135000 chunks of the layout
    against 660 resident blocks of 128 threads (94 registers, 5 an SM): 1.6 waves, run as 2."""
    plan = plan_of(24)
    layout = gmsm.AccumulateLayout.for_plan(plan, 132)
    assert plan.c == 22 and 135000 < layout.chunks <= 135168
    run = gmsm.run_layout(Occupancy(5), "msm_accumulate_g1", layout, plan.xyzz_entries)
    assert run.chunk == -(-plan.xyzz_entries // 84480) and run.chunks <= 84480  # one wave, 2383 entries a thread
    assert 2 * layout.chunk > run.chunk


@pytest.mark.parametrize("per_sm", [None, 0])
def test_no_occupancy_keeps_the_layout(per_sm, monkeypatch):
    monkeypatch.setattr(gmsm, "WHOLE_WAVES", True)
    layout = gmsm.AccumulateLayout.for_plan(plan_of(20), 132)
    assert gmsm.run_layout(Occupancy(per_sm), "k", layout, plan_of(20).xyzz_entries) == layout


def test_short_chunks_and_switch_off_keep_the_layout(monkeypatch):
    """2^12 points in 9-bit windows: 118784 one-entry chunks, 1.4 waves; one wave of two-entry
    chunks costs as much, so the layout stays.  WHOLE_WAVES off: not even asked."""
    small = plan_of(12, c=9)
    layout = gmsm.AccumulateLayout.for_plan(small, 132)
    assert (layout.chunk, layout.chunks) == (1, 118784)
    assert gmsm.run_layout(Occupancy(5), "k", layout, small.xyzz_entries) == layout
    monkeypatch.setattr(gmsm, "WHOLE_WAVES", False)
    big = gmsm.AccumulateLayout.for_plan(plan_of(24), 132)
    module = Occupancy(5)
    assert gmsm.run_layout(module, "k", big, plan_of(24).xyzz_entries) == big and module.asked == []


def test_kernel_names_of_the_two_product_builds(monkeypatch):
    monkeypatch.setattr(gmsm, "PRODUCT_ABI", {"g1": "value", "g2": "ref"})
    assert gmsm.xyzz_kernel("accumulate", "g1") == "msm_accumulate_g1v"
    assert gmsm.xyzz_kernel("fix_heavy", "g2") == "msm_fix_heavy_g2"
    monkeypatch.setattr(gmsm, "PRODUCT_ABI", {"g1": "value4", "g2": "value4"})
    assert [gmsm.xyzz_kernel(k, "g1") for k in ("accumulate", "accumulate_sets", "fix")] == [
        "msm_accumulate_g1v4", "msm_accumulate_sets_g1v4", "msm_fix_g1v"]
    assert gmsm.xyzz_kernel("accumulate", "g2") == "msm_accumulate_g2v"
    monkeypatch.setattr(gmsm, "PRODUCT_ABI", {"g1": "chains", "g2": "chains"})
    assert (gmsm.xyzz_kernel("tree_sum", "g1"), gmsm.xyzz_kernel("combine", "g2")) == ("msm_tree_sum_g1m",
                                                                                       "msm_combine_g2v")
    monkeypatch.setattr(gmsm, "PRODUCT_ABI", {"g1": "base", "g2": "base"})
    assert (gmsm.xyzz_kernel("fix", "g1"), gmsm.xyzz_kernel("fix", "g2")) == ("msm_fix_g1v", "msm_fix_g2q")
    monkeypatch.setattr(gmsm, "PRODUCT_ABI", {"g1": "stack", "g2": "ref"})
    with pytest.raises(ValueError, match="'stack' for g1"):
        gmsm.xyzz_kernel("accumulate", "g1")
