"""Edges of the GPU planners (no device): the key footprint at the largest domains and at tiny keys,
the budget refusal's numbers, and the MSM batch's limits."""
from __future__ import annotations

import re
import time

import pytest

from engine.algebra.curves import BLS12_381, BN254
from engine.backends.gpu import msm as gmsm
from engine.backends.gpu.footprint import KeyShape, plan_key
from engine.config import parse_size
from engine.errors import BudgetError

GiB = 1 << 30


@pytest.mark.parametrize("curve", [BN254, BLS12_381])
def test_a_2_28_domain_key_is_planned_at_the_folds_that_have_plans(curve):
    """At the 2^28 domain (BN254's largest) the full fold and fold 8 of H have no MSM plan (n * fold reaches
    2^31): the planner takes a fold that has one instead of failing with ValueError("no MSM plan")."""
    shape = KeyShape(curve, 1 << 27, 1 << 28, 4 << 27, 4 << 27, 1)
    fp = plan_key(shape, 139 * GiB)
    assert fp.tier == "host" or fp.plan_h.fold <= 4
    assert fp.full_fold_cost > 0 and fp.msm_cost > 0


def test_a_forced_fold_without_a_plan_and_a_key_past_the_sorts_range_are_one_budget_error():
    shape = KeyShape(BN254, 1 << 27, 1 << 28, 4 << 27, 4 << 27, 1)
    with pytest.raises(BudgetError, match=r"big.zkey: .*268,435,456-row domain at fold full on the resident"):
        plan_key(shape, 139 * GiB, fold="full", tier="resident", label="big.zkey")
    assert plan_key(shape, 139 * GiB, fold="full").tier == "host"  # the fold forces the resident tier's only
    huge = KeyShape(BLS12_381, 1 << 29, 1 << 30, 4 << 29, 4 << 29, 1)  # no window keeps n * windows < 2^32
    with pytest.raises(BudgetError, match=r"huge.zkey: .*1,073,741,824-row domain at fold auto"):
        plan_key(huge, 1 << 50, tier="resident", label="huge.zkey")


@pytest.mark.parametrize("curve", [BN254, BLS12_381])
@pytest.mark.parametrize("log", [1, 4, 9, 14, 17])
@pytest.mark.parametrize("wires", ["one", "domain"])
def test_the_budget_the_refusal_names_is_enough(curve, log, wires):
    """The refusal's "raise vram_budget to at least X" must be a budget that is accepted: it was rounded to
    0.1 of a unit, down as often as up (1,153,434 bytes named as "1.1 MiB", which was refused again)."""
    n = 1 if wires == "one" else 1 << log
    shape = KeyShape(curve, n, 1 << log, 2 * n, 2 * n, 1)
    with pytest.raises(BudgetError) as refused:
        plan_key(shape, 1)
    text = str(refused.value)
    named = parse_size(re.search(r"at least ([0-9.]+ ?[KMGT]?i?B)", text).group(1).replace(" ", ""))
    exact = int(re.search(r"\(([0-9,]+) bytes\)", text).group(1).replace(",", ""))
    assert plan_key(shape, named) and plan_key(shape, exact)
    with pytest.raises(BudgetError):
        plan_key(shape, exact - 1)  # the exact figure is the minimum


def test_a_key_with_fewer_wires_than_a_chunk_streams_h_in_whole_chunks():
    """The host tier's H chunk followed the witness chunk after it was cut to the key's wires: a 1-wire key
    with a 2^24 domain planned H in 2-row chunks (2^23 of them, 18 s of planning, a result slot each)."""
    shape = KeyShape(BN254, 1, 1 << 24, 1, 1, 0)
    t = time.perf_counter()
    fp = plan_key(shape, 1 << 36, tier="host")
    assert time.perf_counter() - t < 5
    assert fp.chunk_h >= 1 << 10 and fp.chunks <= (1 << 24) // (1 << 10) + 1


def test_an_msm_batch_below_one_is_refused():
    plan = gmsm.plan_msm(1, 254, "full")
    for batch in (0, -1):
        with pytest.raises(ValueError, match="batch"):
            gmsm.plan_for_batch(plan, batch)
    assert gmsm.plan_for_batch(plan, gmsm.max_batch(plan)).batch == gmsm.max_batch(plan)
    with pytest.raises(ValueError, match="sort's range"):
        gmsm.plan_for_batch(plan, gmsm.max_batch(plan) + 1)
