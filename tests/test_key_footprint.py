"""The key footprint follows the VRAM budget; key loads go through the budgets; budgets explain themselves.

No GPU needed: footprint.plan_key is pure arithmetic over a key's shape, and the
Engine's key path runs here on a simulated device that plans its keys the way
the GPU backend does (`plan_key`, `load_key(zkey, footprint)`).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import anyio
import pytest

from conftest import FIXTURES, REPO
from engine.algebra.curves import BLS12_381, BN254
from engine.api import Engine
from engine.backends.gpu import footprint as fpm
from engine.backends.gpu import proof_streams
from engine.backends.gpu.footprint import KeyShape, plan_key
from engine.config import EngineConfig
from engine.errors import BudgetError
from scheduler.budget import KEY
from scheduler.simulated import SimKey, SimParams, SimulatedDevice, SimulatedKit

GiB = 1 << 30
MiB = 1 << 20


def bench_shape(curve, log_constraints: int) -> KeyShape:
    """The shape of a bench circuit's key: about 1 wire per constraint, 4 coefficients per row of A and B."""
    n = (1 << log_constraints) + 8
    return KeyShape(curve, n, 1 << (log_constraints + 1), 4 * n, 4 * n)


def total(fp, proofs=None) -> int:
    return fp.device_bytes + (fp.proofs_in_flight if proofs is None else proofs) * fp.working_set_bytes


# ------------------------------------------------------------------ the choice

@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
@pytest.mark.parametrize("log_n", [16, 20, 22, 24])
def test_every_budget_gets_a_footprint_that_fits_it_or_one_clear_error(curve, log_n):
    shape = bench_shape(curve, log_n)
    previous = None
    for budget in [b * GiB for b in (139, 64, 32, 16, 12, 8, 4, 2, 1)] + [GiB // 4, 0, -5 * GiB]:
        try:
            fp = plan_key(shape, budget, proofs=2)
        except BudgetError as exc:
            text = str(exc)
            assert "too small for this key plus one proof" in text and "working set" in text
            assert not re.search(r"-\d", text)  # never a negative number of bytes
            previous = "error"
            continue
        assert previous != "error", "a larger budget failed where a smaller one fits"
        assert total(fp) <= budget and fp.proofs_in_flight in (1, 2)
        if fp.tier == "resident" and previous is not None:
            assert fp.fold <= previous.fold or previous.tier == "host"  # less memory never folds more
        if fp.tier == "host":
            assert fp.host_bytes == shape.bases_bytes() and fp.streamed_bytes == fp.host_bytes
            assert fp.plan_w.fold == 1 and fp.chunk_w >= 1
        previous = fp


def test_a_large_budget_folds_every_window_and_a_small_one_trades_fold_for_room():
    shape = bench_shape(BN254, 22)
    big = plan_key(shape, 139 * GiB, proofs=2)
    assert big.tier == "resident" and big.fold == big.plan_w.windows and big.proofs_in_flight == 2
    assert big.msm_cost == big.full_fold_cost
    small = plan_key(shape, 12 * GiB, proofs=2)
    assert small.tier == "resident" and small.fold < big.fold and small.proofs_in_flight == 2
    assert small.msm_cost > big.msm_cost  # the cost the smaller fold implies is reported
    assert small.device_bytes < big.device_bytes


def test_the_2e24_key_of_the_issue_fits_16_gib_with_room_for_proofs():
    """Issue 18: a 2^24 BN254 key took ~33 GiB (fold chosen against a third of the device)."""
    fp = plan_key(bench_shape(BN254, 24), 16 * GiB, proofs=2)
    assert total(fp) <= 16 * GiB and fp.proofs_in_flight >= 1
    assert "16.0 GiB budget" in fp.describe()


# (budget, tier forced, chunk forced, GPU ms per proof measured) on the H200, 2^20 bench keys (RESULTS.md)
H200_PROOFS = {
    "bn128": [(139 * GiB, "resident", None, 40.9), (2 * GiB, "host", 1 << 19, 81.2), (GiB, "host", 1 << 15, 342.7)],
    "bls12381": [(139 * GiB, "resident", None, 86.0), (GiB, "host", 1 << 14, 1300.2), (GiB, "host", 1 << 17, 291.1),
                 (GiB, "host", 1 << 18, 221.6)],
}
NTT_AND_EVALUATE_MS = 5  # the rest of a 2^20 proof's GPU time (perf/RESULTS.md, whole proofs)


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_the_time_model_matches_the_h200_proofs_it_was_fitted_on(curve):
    shape = KeyShape(curve, 1064962, 1 << 21, 2_400_000, 1_900_000)  # the 2^20 bench circuit's key
    for budget, tier, chunk, measured_ms in H200_PROOFS[curve.name]:
        fp = plan_key(shape, budget, proofs=1, tier=tier, chunk=chunk, fold="full" if tier == "resident" else "auto")
        predicted_ms = 1e3 * fp.msm_cost + NTT_AND_EVALUATE_MS
        assert abs(predicted_ms - measured_ms) <= 0.2 * measured_ms, (tier, chunk, predicted_ms, measured_ms)


def test_a_tight_budget_streams_few_large_chunks_not_many_small_ones():
    """The first choice (two proofs in flight first) took 130 chunks of 16384 wires at 1 GiB: 1.3 s per
    BLS12-381 2^20 proof on the H200 where 9 chunks take 0.22 s; the time model picks the latter."""
    shape = KeyShape(BLS12_381, 1064962, 1 << 21, 2_400_000, 1_900_000)
    fp = plan_key(shape, GiB, proofs=2)
    assert fp.tier == "host" and fp.chunks <= 17
    tiny = plan_key(shape, GiB, proofs=2, tier="host", chunk=1 << 14)
    assert fp.msm_cost < tiny.msm_cost / 4


def test_more_proofs_in_flight_only_when_nearly_as_fast():
    shape = bench_shape(BN254, 22)
    for budget in (8 * GiB, 12 * GiB, 24 * GiB, 64 * GiB):
        fp = plan_key(shape, budget, proofs=2)
        if fp.proofs_in_flight == 1:  # a two-proof footprint that fits is more than SLACK slower
            for f in fpm.FOLDS:
                two = fpm.resident_footprint(shape, f, budget, 2, fpm.DEFAULT_SM_COUNT)
                if total(two, 2) <= budget:
                    assert two.msm_cost > fp.msm_cost * (1 + fpm.SLACK)


def test_fewer_proofs_in_flight_before_the_host_tier(monkeypatch):
    from engine.backends.gpu import msm_sort as gsort  # noqa: PLC0415

    shape = bench_shape(BLS12_381, 22)
    monkeypatch.setattr(gsort, "SORT", "direct")  # a proof's working set without the sort's bins
    monkeypatch.setenv("GROTH16_B2_BESIDE", "0")  # nor B2's own scratch
    two = plan_key(shape, 139 * GiB, proofs=2, fold=1)
    monkeypatch.setattr(gsort, "SORT", "auto")
    monkeypatch.delenv("GROTH16_B2_BESIDE")
    budget = two.device_bytes + two.working_set_bytes + GiB // 8  # room for one proof only
    fp = plan_key(shape, budget, proofs=2)
    assert fp.tier == "resident" and fp.proofs_in_flight == 1


def test_host_tier_when_the_points_do_not_fit_and_its_chunks_cover_every_base(monkeypatch):
    shape = bench_shape(BN254, 20)
    monkeypatch.setenv("GROTH16_B2_BESIDE", "0")  # one proof's working set without B2's own scratch
    resident = plan_key(shape, 139 * GiB, fold=1)
    monkeypatch.delenv("GROTH16_B2_BESIDE")
    budget = shape.fixed_device_bytes() + resident.working_set_bytes  # below points + one proof
    fp = plan_key(shape, budget, proofs=1)
    assert fp.tier == "host" and fp.device_bytes == shape.fixed_device_bytes()
    ranges_w = fpm.chunk_ranges(shape.n_wires, fp.chunk_w)
    ranges_h = fpm.chunk_ranges(shape.domain, fp.chunk_h)
    assert ranges_w[0][0] == 0 and ranges_w[-1][1] == shape.n_wires and ranges_h[-1][1] == shape.domain
    assert fp.chunks == len(ranges_w) + len(ranges_h)
    assert "host tier" in fp.describe() and "streamed" in fp.describe()


def test_forced_choices_and_the_tail_chunk_plan():
    shape = bench_shape(BN254, 16)
    fp = plan_key(shape, 139 * GiB, tier="host", chunk=1000)
    assert fp.tier == "host" and fp.chunk_w == 1000 and fp.chunk_h == 2000
    tail = fpm.tail_plan(fp.plan_w, shape.n_wires % 1000)
    assert (tail.c, tail.windows, tail.groups, tail.keys) == (fp.plan_w.c, fp.plan_w.windows, fp.plan_w.groups,
                                                               fp.plan_w.keys)
    assert tail.max_entries <= fp.plan_w.max_entries
    with pytest.raises(BudgetError, match="too small"):
        plan_key(shape, 1 << 20, tier="resident")
    with pytest.raises(ValueError):
        plan_key(shape, GiB, tier="cloud")


@pytest.mark.parametrize("curve,g1_ms,g2_ms,c,fold", [(BN254, 45.4, 138.3, 20, 13), (BLS12_381, 106.8, 306.2, 16, 16)],
                         ids=["bn128", "bls12381"])
def test_the_table_model_matches_the_h200_builds_it_was_fitted_on(curve, g1_ms, g2_ms, c, fold):
    """perf/tables.py on the H200 (session 32, call 5; BLS12-381's G2 split tables session 33): 2^20 points'
    fold tables with each curve's table builds (G1 split, G2 even/odd on BN254 and split on BLS12-381)."""
    from engine.backends.gpu.footprint import G2_WEIGHT, T_TABLE_DOUBLING

    doublings = (1 << 20) * c * (fold - 1)
    assert abs(doublings * T_TABLE_DOUBLING[curve.name] * 1e3 - g1_ms) <= 0.1 * g1_ms
    assert abs(G2_WEIGHT * doublings * T_TABLE_DOUBLING[curve.name] * 1e3 - g2_ms) <= 0.15 * g2_ms


def test_a_keys_table_time_is_reported():
    """perf/keyload.py's 2^20 BN254 key shape (1,058,579 wires, domain 2^21): its tables' time is in the
    footprint's dict and description."""
    fp = plan_key(KeyShape(BN254, 1058579, 1 << 21, 3 << 20, 3 << 20), 139 * GiB, fold="full")
    assert fp.fold == fp.plan_w.windows > 1 and fp.table_seconds > 0
    assert fp.as_dict()["table_seconds"] == round(fp.table_seconds, 4)
    assert "tables built at load in about" in fp.describe()


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
@pytest.mark.parametrize("log_n", [12, 14, 16, 20, 22, 24])
def test_a_key_loaded_for_one_proof_builds_no_fold_tables(curve, log_n):
    """Tables cost about (fold - 1) * c doublings a point, seconds at 2^22, to save milliseconds of one
    proof's MSMs: a load for one proof (the CLI's) takes fold 1; a resident key (no count given, or many
    proofs) keeps the fold the budget allows."""
    shape = bench_shape(curve, log_n)
    many = plan_key(shape, 139 * GiB)
    one = plan_key(shape, 139 * GiB, proofs_per_load=1)
    assert many.tier == one.tier == "resident"
    assert many.fold > 1 and many.table_seconds > 0
    assert one.msm_cost + one.table_seconds <= many.msm_cost + many.table_seconds
    if log_n >= 16:  # below, a few ms of tables save the fold-1 plan's serial combines (the model's choice)
        assert (one.fold, one.plan_h.fold, one.table_seconds) == (1, 1, 0.0)
        assert one.msm_cost + one.table_seconds < many.msm_cost + many.table_seconds
    served = plan_key(shape, 139 * GiB, proofs_per_load=10**6)
    assert (served.fold, served.plan_w.c) == (many.fold, many.plan_w.c)
    if one.fold == 1:
        assert "tables built" not in one.describe()


def test_the_binned_sort_is_granted_on_the_curves_where_it_measured_faster(monkeypatch):
    from engine.backends.gpu import msm_sort

    assert msm_sort.BINNED_CURVES == {"bn128", "bls12381"}
    assert plan_key(bench_shape(BLS12_381, 24), 139 * GiB, proofs=2).sort_bins
    monkeypatch.setattr(msm_sort, "BINNED_CURVES", frozenset({"bn128"}))  # a curve left out gets none
    assert not plan_key(bench_shape(BLS12_381, 24), 139 * GiB, proofs=2).sort_bins


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_the_binned_sort_is_granted_only_where_it_costs_no_fold(curve, monkeypatch):
    """A key whose sorts are large enough for the binned placement (msm_sort.SORT_BINNED_ENTRIES entries)
    gets its bins (12 bytes an entry, in the working set) where they fit beside its proofs in flight; where
    they do not, the same tier, fold and proofs as without them, and no bins; small keys never."""
    from engine.backends.gpu import msm as gmsm

    monkeypatch.setenv("GROTH16_B2_BESIDE", "0")  # the bins alone (B2's own scratch: the test below)

    shape = bench_shape(curve, 24)
    whole = plan_key(shape, 139 * GiB, proofs=2)
    plans, _ = fpm.scratch_shapes(whole.all_plans(), fpm.DEFAULT_SM_COUNT)
    assert whole.tier == "resident" and whole.sort_bins and gmsm.SortScratch.wants_bins(plans)
    bins = gmsm.SortScratch.nbytes(plans, True) - gmsm.SortScratch.nbytes(plans)
    assert bins >= 8 * (1 << 27)
    plain = fpm.proof_working_set(curve, shape.n_wires, shape.domain, whole.plan_w, whole.plan_h,
                                  fpm.DEFAULT_SM_COUNT, early=(whole.early_w, whole.early_h) if whole.early_w else None)
    assert whole.working_set_bytes == plain + bins and total(whole) <= 139 * GiB
    assert whole.as_dict()["sort_bins"] and "binned bucket sort" in whole.describe()
    # a budget with room for the key and its proofs but not for their bins: the choice is kept, no bins
    tight = whole.device_bytes + whole.proofs_in_flight * plain + bins // 2
    fp = plan_key(shape, tight, proofs=2)
    assert not fp.sort_bins and total(fp) <= tight
    assert (fp.tier, fp.fold, fp.proofs_in_flight, fp.working_set_bytes) == ("resident", whole.fold, 2, plain)
    assert not plan_key(shape, 16 * GiB, proofs=2).sort_bins  # the host tier's chunks are small
    assert plan_key(bench_shape(curve, 20), 139 * GiB, proofs=2).sort_bins  # 2^20: above the threshold
    assert not plan_key(bench_shape(curve, 16), 139 * GiB, proofs=2).sort_bins  # 2^16: below it


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_a_large_plans_b2_stream_is_granted_only_where_its_scratch_costs_nothing(curve):
    """Larger plans get B2 on a stream of its own with a second sort and bucket scratch (proof_streams.b2_beside:
    a lone proof measured faster) where that scratch fits beside the proofs in flight with the same tier,
    fold, bins and proofs; small plans run that path anyway, the host tier never."""
    shape = bench_shape(curve, 22)
    whole = plan_key(shape, 139 * GiB, proofs=2)
    early = (whole.early_w, whole.early_h) if whole.early_w else None
    one, two = (fpm.proof_working_set(curve, shape.n_wires, shape.domain, whole.plan_w, whole.plan_h,
                                      fpm.DEFAULT_SM_COUNT, early=early, bins=whole.sort_bins, b2_stream=b2)
                for b2 in (False, True))
    assert whole.b2_stream and whole.working_set_bytes == two > one and total(whole) <= 139 * GiB
    assert proof_streams.b2_beside(whole.plan_w, whole.b2_stream) and not proof_streams.b2_beside(whole.plan_w)
    assert whole.as_dict()["b2_stream"] and "B2 on its own stream" in whole.describe()
    tight = whole.device_bytes + whole.proofs_in_flight * one + (two - one) // 2
    fp = plan_key(shape, tight, proofs=2)
    assert not fp.b2_stream and total(fp) <= tight
    assert (fp.tier, fp.fold, fp.proofs_in_flight, fp.sort_bins, fp.working_set_bytes) == (
        "resident", whole.fold, 2, whole.sort_bins, one)
    small = plan_key(bench_shape(curve, 14), 139 * GiB, proofs=2)
    assert not small.b2_stream and proof_streams.b2_beside(small.plan_w)  # the small path by its plan, counted already
    assert not plan_key(bench_shape(curve, 24), 16 * GiB, proofs=2).b2_stream  # the host tier


def test_the_error_names_the_footprint_the_working_set_and_the_budget():
    with pytest.raises(BudgetError) as info:
        plan_key(bench_shape(BN254, 24), 4 * GiB, proofs=2, label="big.zkey on device 0")
    text = str(info.value)
    assert text.startswith("big.zkey on device 0: the VRAM budget (4.0 GiB)")
    assert "on the device" in text and "one proof's working set is" in text and "raise vram_budget to at least" in text
    with pytest.raises(BudgetError, match=r"less than nothing"):
        plan_key(bench_shape(BN254, 16), -17 * GiB)


# ------------------------------------------------------------------ the engine's key path

class PlanningDevice(SimulatedDevice):
    """A simulated device that plans keys like the GPU backend: footprint.plan_key on a fixed shape."""

    def __init__(self, shape: KeyShape, **plan_options):
        super().__init__(0, SimParams(vram_bytes=1 << 50, working_set_bytes=0, upload_ms=1, gpu_ms=2,
                                      stage_host_ms=0))
        self.shape, self.plan_options, self.loaded, self.hints = shape, plan_options, [], []

    def plan_key(self, zkey, budget_bytes, proofs=2, label=None, **hint):
        self.hints.append(hint)
        return plan_key(self.shape, budget_bytes, proofs=proofs, label=label or "key", **self.plan_options, **hint)

    def load_key(self, key, footprint=None):
        self.loaded.append(footprint)
        resident = super().load_key(key)
        resident.footprint = footprint
        return resident

    def resident_bytes(self, key) -> int:
        return key.footprint.device_bytes

    def host_resident_bytes(self, key) -> int:
        return key.footprint.host_bytes

    def working_set_bytes(self, key) -> int:
        return key.footprint.working_set_bytes


def engine_with(device, **config) -> Engine:
    base = dict(synthesis_workers=1, idle_trim_s=None, verify=False)
    base.update(config)
    return Engine(EngineConfig(**base), backends=[device], kit=SimulatedKit(witness_rows=64, synth_ms=1,
                                                                             epilogue_ms=0, verify_ms=0))


async def test_load_key_plans_against_the_budget_and_reports_the_footprint():
    shape = bench_shape(BN254, 22)
    device = PlanningDevice(shape)
    async with engine_with(device, vram_budget=12 * GiB) as eng:
        key = await eng.load_key(SimKey("k", witness_rows=64))
        fp = device.loaded[0]
        assert fp is not None and fp.budget_bytes == 12 * GiB and fp.proofs_in_flight == 2  # split, one slot
        assert (key.tier, key.fold, key.msm_cost, key.proofs_in_flight) == ("resident", fp.fold, fp.msm_cost, 2)
        assert key.key_device_bytes == fp.device_bytes and key.working_set_bytes == fp.working_set_bytes
        assert eng.vram.capacity(0) == 12 * GiB - fp.device_bytes >= 2 * fp.working_set_bytes
        assert (await eng.prove(key, {})).key == "k"
        await eng.unload_key(key)
        assert eng.vram.capacity(0) == 12 * GiB and eng.at_rest()


async def test_a_load_for_known_proofs_passes_their_count_to_the_plan():
    shape = bench_shape(BN254, 20)
    device = PlanningDevice(shape)
    async with engine_with(device, vram_budget=139 * GiB) as eng:
        one = await eng.load_key(SimKey("one", witness_rows=64), expected_proofs=1)
        resident = await eng.load_key(SimKey("resident", witness_rows=64))
        # compute_slots "auto": each load plans for two proofs in flight, then for three (compute_share.py)
        assert device.hints == [{"proofs_per_load": 1}] * 2 + [{}] * 2
        assert (one.fold, resident.fold) == (1, device.loaded[1].fold) and resident.fold > 1
        await eng.unload_key(one)
        await eng.unload_key(resident)


async def test_single_lock_mode_plans_for_one_proof_and_slots_add_proofs():
    shape = bench_shape(BN254, 20)
    for config, want in ((dict(lock_mode="single"), 1), (dict(lock_mode="split", compute_slots=2), 3)):
        device = PlanningDevice(shape)
        async with engine_with(device, vram_budget=139 * GiB, **config) as eng:
            await eng.load_key(SimKey("k", witness_rows=64))
            assert device.loaded[0].proofs_in_flight == want


async def test_a_budget_too_small_is_one_error_at_load_before_any_device_work():
    device = PlanningDevice(bench_shape(BN254, 24))
    async with engine_with(device, vram_budget=4 * GiB) as eng:
        with pytest.raises(BudgetError, match=r"k on device 0: the VRAM budget \(4\.0 GiB\) is too small"):
            await eng.load_key(SimKey("k", witness_rows=64))
        assert device.loaded == [] and not any(call == "load_key" for call, _ in device.calls)
        assert eng.vram.capacity(0) == 4 * GiB and eng.at_rest()


async def test_key_load_waits_for_its_bytes_through_the_budget():
    """Issue 14 item 12: key memory is reserved from the VRAM budget, not taken beside it."""
    shape = bench_shape(BN254, 20)
    device = PlanningDevice(shape)
    async with engine_with(device, vram_budget=8 * GiB) as eng:
        fp = plan_key(shape, 8 * GiB, proofs=2)
        held = await eng.vram.reserve(8 * GiB - fp.device_bytes + 1, label="proofs in flight")
        async with anyio.create_task_group() as tg:
            done = anyio.Event()

            async def load():
                await eng.load_key(SimKey("k", witness_rows=64))
                done.set()

            tg.start_soon(load)
            await anyio.sleep(0.2)
            assert not done.is_set() and device.loaded == []  # waiting for room: nothing uploaded yet
            assert eng.vram.waiting() == 1
            held.release()
            with anyio.fail_after(5):
                await done.wait()
        assert eng.vram.capacity(0) == 8 * GiB - fp.device_bytes and eng.vram.held(0) == 0


async def test_host_tier_bases_come_out_of_the_host_budget():
    shape = bench_shape(BN254, 20)
    device = PlanningDevice(shape, tier="host")
    async with engine_with(device, vram_budget=8 * GiB, host_budget=4 * GiB) as eng:
        key = await eng.load_key(SimKey("k", witness_rows=64))
        assert key.tier == "host" and key.key_host_bytes == shape.bases_bytes()
        assert eng.host.capacity(0) == 4 * GiB - shape.bases_bytes()
        await eng.unload_key(key)
        assert eng.host.capacity(0) == 4 * GiB
    device = PlanningDevice(shape, tier="host")
    async with engine_with(device, vram_budget=8 * GiB, host_budget=64 << 20) as eng:
        with pytest.raises(BudgetError, match=r"pinned host memory.*host budget is 64\.0 MiB"):
            await eng.load_key(SimKey("k", witness_rows=64))
        assert device.loaded == [] and eng.host.capacity(0) == 64 << 20


async def test_two_devices_pinned_copies_are_counted_together_not_waited_for_forever():
    shape = bench_shape(BN254, 16)
    devices = [PlanningDevice(shape, tier="host"), PlanningDevice(shape, tier="host")]
    one_copy = shape.bases_bytes()
    config = dict(synthesis_workers=1, idle_trim_s=None, verify=False, vram_budget=8 * GiB,
                  host_budget=one_copy + 64 * 32 + 1024)  # one device's bases and one witness, not two
    kit = SimulatedKit(witness_rows=64, synth_ms=1, epilogue_ms=0, verify_ms=0)
    async with Engine(EngineConfig(**config), backends=devices, kit=kit) as eng:
        with anyio.fail_after(5):
            with pytest.raises(BudgetError, match="other devices' copies"):
                await eng.load_key(SimKey("k", witness_rows=64))
        assert eng.host.capacity(0) == config["host_budget"] and eng.at_rest()


def test_key_reservations_are_not_proof_reservations():
    assert KEY not in ("proof", "maintenance")


# ------------------------------------------------------------------ the tools

def test_sweep_prints_a_budget_error_as_one_line_not_a_traceback():
    """perf/sweep.py printed "the VRAM budget of a device is -17.1 GiB" as a traceback (issue 18)."""
    cmd = [sys.executable, str(REPO / "perf" / "sweep.py"), "--simulate", "--proofs", "2", "--concurrency", "1",
           "--slots", "1", "--modes", "split", "--sim-vram", "16GiB", "--sim-working-set", "6700MiB",
           "--vram-budget", "4GiB", "--out", os.devnull + "-unused"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("sweep.py: ") and "4.0 GiB" in lines[0]
    assert not re.search(r"-\d", lines[0])


def test_info_reports_the_key_footprint_under_a_budget():
    zkey = FIXTURES / "tiny" / "bn128" / "tiny.zkey"
    out = subprocess.run([sys.executable, "-m", "engine", "info", str(zkey), "--json", "--vram-budget", "1GiB"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    fp = json.loads(out.stdout)["footprint"]
    assert fp["tier"] == "resident" and fp["budget_bytes"] == GiB and fp["fold"] >= 1
    assert fp["device_bytes"] + fp["proofs_in_flight"] * fp["working_set_bytes"] <= GiB
    assert fp["proofs_computing"] == 1 and fp["proofs_in_flight"] == 2  # a tiny key's proofs compute alone
    text = subprocess.run([sys.executable, "-m", "engine", "info", str(zkey), "--vram-budget", "1GiB"],
                          capture_output=True, text=True, cwd=REPO, timeout=120).stdout
    assert "footprint:" in text and "MSM cost" in text and "compute one at a time" in text
    fixed = subprocess.run([sys.executable, "-m", "engine", "info", str(zkey), "--json", "--vram-budget", "1GiB",
                            "--proofs", "3"], capture_output=True, text=True, cwd=REPO, timeout=120)
    fp = json.loads(fixed.stdout)["footprint"]
    assert fp["proofs_in_flight"] == 3 and "proofs_computing" not in fp
    bad = subprocess.run([sys.executable, "-m", "engine", "info", str(zkey), "--proofs", "many"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert bad.returncode != 0 and "--proofs: 'many' is neither a number nor auto" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_info_plans_a_large_key_as_the_engine_does_two_proofs_at_once(monkeypatch, tmp_path):
    """`info` without --proofs plans like the engine's default compute slots: a key whose budget holds a
    third working set at no cost gets it, and two of its proofs compute at once."""
    from engine.commands.info import _footprint
    from engine.formats import zkey as zkey_module

    monkeypatch.setattr(zkey_module, "read_zkey", lambda path: None)
    monkeypatch.setattr(fpm.KeyShape, "of", classmethod(lambda cls, zkey: bench_shape(BN254, 20)))
    fp = _footprint(tmp_path / "k.zkey", "125GiB", "auto")
    assert fp["proofs_computing"] == 2 and fp["proofs_in_flight"] == 3
    assert fp["summary"].endswith("; 2 of its proofs compute at once")


def test_the_csr_is_built_on_the_device_only_where_the_budget_holds_its_build():
    """A first load's device CSR build holds the raw records and its scratch beside the key until its
    kernels ran (device_csr.build_bytes, about 48 bytes a record: 2.4 GB at 2^24): the footprint keeps
    it (and the engine reserves it for the load) only when the budget holds it beside the key; else
    the host builds the CSR.  Before, the build's bytes were in no budget."""
    n = 5_000_000  # many records beside small point sections: the build outweighs a proof's working set
    shape = KeyShape(BN254, 1 << 10, 1 << 10, n, n, 2, csr_build_bytes=48 * 2 * n)
    roomy = plan_key(shape, 64 << 30, fold=1, tier="resident")
    assert roomy.csr_build_bytes == shape.csr_build_bytes
    tight = plan_key(shape, roomy.device_bytes + roomy.working_set_bytes + 1, fold=1, tier="resident")
    assert tight.device_bytes == roomy.device_bytes and tight.csr_build_bytes == 0
    assert plan_key(KeyShape(BN254, 1 << 10, 1 << 10, n, n, 2), 64 << 30).csr_build_bytes == 0  # rows out of order


def test_a_keys_shape_counts_the_builds_bytes_from_its_coeffs():
    from engine.backends.gpu import device_csr
    from engine.formats import read_zkey
    from engine.formats.coeffs_scan import scan_of

    z = read_zkey(FIXTURES / "tiny" / "bn128" / "tiny.zkey")
    scan = scan_of(z)
    records = scan.n_a + scan.n_b
    assert KeyShape.of(z).csr_build_bytes == device_csr.build_bytes(scan) == (
        records * 44 + device_csr.scratch_bytes(scan))


@pytest.mark.parametrize("curve, log_constraints", [(BN254, 14), (BN254, 20), (BN254, 24), (BLS12_381, 22)],
                         ids=lambda v: getattr(v, "name", str(v)))
def test_candidates_made_ahead_choose_as_plan_key_does_without_planning_again(curve, log_constraints,
                                                                              monkeypatch):
    """The CLI makes a key's candidates while the device's context starts (key_candidates: shape and SM count,
    no budget); plan_key given them chooses exactly what it chooses alone, under every budget (resident at
    each fold, the host tier, a BudgetError), and asks msm.plan_msm for nothing more.  Candidates made for
    another SM count, fold, tier or chunk are not used."""
    import dataclasses  # noqa: PLC0415

    from engine.backends.gpu import msm as gmsm  # noqa: PLC0415

    shape = bench_shape(curve, log_constraints)
    ahead = fpm.key_candidates(shape, sm_count=132)
    asked = []
    real = gmsm.plan_msm

    def counted(*args, **kwargs):
        asked.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(gmsm, "plan_msm", counted)
    for budget in (139 * GiB, 24 * GiB, 16 * GiB, 4 * GiB, 1 * GiB, 64 * MiB, 1 * MiB):
        for proofs, per_load in ((2, None), (1, 1)):
            try:
                alone = plan_key(shape, budget, proofs=proofs, sm_count=132, proofs_per_load=per_load)
            except BudgetError as exc:
                with pytest.raises(BudgetError) as given:
                    asked.clear()
                    plan_key(shape, budget, proofs=proofs, sm_count=132, proofs_per_load=per_load,
                             candidates=ahead)
                assert str(given.value) == str(exc) and asked == []
                continue
            asked.clear()
            with_them = plan_key(shape, budget, proofs=proofs, sm_count=132, proofs_per_load=per_load,
                                 candidates=ahead)
            assert asked == [], "plan_key planned again although given the candidates"
            assert dataclasses.asdict(with_them) == dataclasses.asdict(alone), (budget, proofs)
            assert with_them.budget_bytes == budget
    for other in (dict(sm_count=114), dict(fold=1), dict(tier="host"), dict(chunk=1 << 12)):
        args = dict(sm_count=132, fold="auto", tier="auto", chunk=None) | other
        alone = plan_key(shape, 139 * GiB, **args)
        asked.clear()
        assert dataclasses.asdict(plan_key(shape, 139 * GiB, candidates=ahead, **args)) == dataclasses.asdict(alone)
        assert asked, f"candidates made for another device or choice were used ({other})"


@pytest.mark.parametrize("curve, log_constraints, budget", [
    (BN254, 14, 139 * GiB), (BN254, 20, 16 * GiB), (BN254, 24, 16 * GiB), (BLS12_381, 22, 24 * GiB),
], ids=lambda v: getattr(v, "name", str(v)))
def test_plan_key_makes_each_msm_plan_once_and_chooses_as_before(curve, log_constraints, budget, monkeypatch):
    """A key load's plan (58 of a 62 ms load from the cache at the 2^14 domain) asked msm.plan_msm for the same
    plans again and again: every fold's early plans and full-fold cost, every host candidate's.  Now each once,
    and the footprint is the one the planner chose making them all."""
    import dataclasses  # noqa: PLC0415

    from engine.backends.gpu import footprint  # noqa: PLC0415
    from engine.backends.gpu import msm as gmsm  # noqa: PLC0415

    shape = bench_shape(curve, log_constraints)
    asked = []
    real = gmsm.plan_msm

    def counted(*args, **kwargs):
        asked.append((args, tuple(sorted(kwargs.items()))))
        return real(*args, **kwargs)

    monkeypatch.setattr(gmsm, "plan_msm", counted)
    chosen = plan_key(shape, budget, proofs=2, proofs_per_load=1)
    assert len(asked) == len(set(asked)), "an MSM plan was made twice"
    # without the memo (the planner's body called directly): the same choice, the same plans asked for repeatedly
    once = len(asked)
    asked.clear()
    sms = footprint.DEFAULT_SM_COUNT
    again = footprint._plan_key(footprint._candidates(shape, sm_count=sms, fold="auto", tier="auto", chunk=None),
                                budget, proofs=2, label="the key", proofs_per_load=1)
    assert dataclasses.asdict(again) == dataclasses.asdict(chosen)
    assert len(set(asked)) == once < len(asked)


def test_a_plan_asked_for_more_proofs_than_fit_keeps_as_many_as_fit():
    """plan_key tried `proofs` working sets or one: asked for three where two fit (compute_slots 2 in split mode
    asks three), it kept one, fewer than compute_slots 1 (asking two) got; `info --proofs 3` showed "x 1"."""
    from conftest import EXAMPLES, run_engine

    from engine.formats.zkey import read_zkey

    shape = KeyShape.of(read_zkey(EXAMPLES / "bn128" / "sudoku.zkey"))
    budget = 20 << 20
    two = plan_key(shape, budget, proofs=2)
    assert two.proofs_in_flight == 2 and plan_key(shape, budget, proofs=1).proofs_in_flight == 1
    for asked in (3, 4, 9):
        fp = plan_key(shape, budget, proofs=asked)
        assert (fp.proofs_in_flight, fp.tier, fp.fold) == (2, two.tier, two.fold), asked
    out = run_engine("info", EXAMPLES / "bn128" / "sudoku.zkey", "--vram-budget", "20MiB", "--proofs", "4").stdout
    assert "per proof x 2 in a 20.0 MiB budget" in out and "room for 2 of the 4 proofs asked for" in out, out
