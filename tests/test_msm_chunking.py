"""The XYZZ pass's chunk argument (msm.chunking_arg, decoded by cuda_kernels/msm.cuh msm_chunk), on the host:
every layout's argument decodes to chunks that stay within the layout's partial slots for any entry count the
plan allows, spread a sparse vector's entries over the layout's threads, and leave a full vector's chunking as
it was."""
from __future__ import annotations

import pytest

from engine.backends.gpu import msm as gmsm


def msm_chunk(chunking: int, entries: int) -> int:
    """cuda_kernels/msm.cuh msm_chunk, in Python."""
    if not chunking >> 31:
        return chunking
    t, chunks, least = chunking & 0xFFFF, ((chunking >> 16) & 0x7FF) << 7, 1 << ((chunking >> 27) & 15)
    return min(t, max(least, -(-entries // chunks)))


@pytest.mark.parametrize("least", [1, 64, 128, 512, 1 << 15])
def test_the_least_chunk_travels_in_the_argument(monkeypatch, least):
    monkeypatch.setattr(gmsm, "MIN_CHUNK", least)
    layout = gmsm.AccumulateLayout(1 << 15 | 3, 135168, 1, 1)
    assert msm_chunk(gmsm.chunking_arg(layout), 0) == min(least, layout.chunk)


@pytest.mark.parametrize("bad", [0, 3, 100, 1 << 16])
def test_a_least_chunk_that_does_not_pack_is_refused(monkeypatch, bad):
    monkeypatch.setattr(gmsm, "MIN_CHUNK", bad)
    with pytest.raises(ValueError, match="MIN_CHUNK"):
        gmsm.chunking_arg(gmsm.AccumulateLayout(300, 135168, 1, 1))


@pytest.mark.parametrize("log_n", [1, 10, 16, 20, 22, 24, 26])
@pytest.mark.parametrize("sm_count", [1, 8, 132, 264])
@pytest.mark.parametrize("batch", [1, 10])
def test_chunks_stay_within_the_layout_for_every_entry_count(log_n, sm_count, batch):
    bits = 254
    for fold in ("full", 1):
        try:
            plan = gmsm.plan_msm(1 << log_n, bits, fold, batch=batch)
        except ValueError:  # a batch beyond the sort's range
            continue
        layout = gmsm.AccumulateLayout.for_plan(plan, sm_count)
        arg = gmsm.chunking_arg(layout)
        assert 0 <= arg < 1 << 32
        bound = layout.chunk * layout.chunks
        assert bound >= plan.xyzz_entries
        candidates = {0, 1, 127, 128, 129, bound // 7, bound // 2, bound - 1, bound, plan.xyzz_entries}
        for entries in sorted(e for e in candidates if e <= bound):  # the plan bounds a vector's entries
            t = msm_chunk(arg, entries)
            assert 1 <= t <= layout.chunk, (entries, t)
            assert -(-entries // t) <= layout.chunks, (entries, t)  # the chunks in use have their partial slots
            if arg >> 31 and entries >= layout.chunk * (layout.chunks >> 7 << 7):
                assert t == layout.chunk  # a full vector chunks as before


def test_a_sparse_vector_spreads_over_the_threads():
    """BLS12-381 G1 at 2^24 on 132 SMs: the plan's 1614 entries a thread; a witness of only 0 and 1 (6.9M
    entries, all of them ones of one bucket) took 4300 threads of 135k; it now takes the minimum chunk, and
    the bench circuit's share (86M entries) takes 637 a thread."""
    plan = gmsm.plan_msm(1 << 24, 255, "full", curve="bls12381")
    layout = gmsm.AccumulateLayout.for_plan(plan, 132)
    arg = gmsm.chunking_arg(layout)
    assert arg >> 31 and layout.chunk > gmsm.MIN_CHUNK
    assert msm_chunk(arg, 6_900_000) == gmsm.MIN_CHUNK
    assert msm_chunk(arg, 86_000_000) == -(-86_000_000 // (layout.chunks >> 7 << 7))
    assert msm_chunk(arg, plan.xyzz_entries) == layout.chunk


def test_layouts_that_do_not_pack_pass_their_chunk_alone():
    for chunk, chunks in ((5, 100), (1 << 16, 5000), (300, 1 << 18)):
        layout = gmsm.AccumulateLayout(chunk, chunks, 1, 1)
        assert gmsm.chunking_arg(layout) == chunk
