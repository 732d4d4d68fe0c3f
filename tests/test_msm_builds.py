"""CPU checks of the MSM's kernel picks (engine/backends/gpu/msm_builds.py, msm.py): the builds of the base field's
product each group's XYZZ pass uses, the reduction's block size a group and the scratch sized for
both, and the sort's choice of placement and its scratch."""
from __future__ import annotations

import pytest

from engine.backends.gpu import msm as gmsm
from engine.backends.gpu import msm_builds
from engine.backends.gpu import msm_sort as gsort
from engine.config import ConfigError


def test_kernel_names_of_the_product_builds(monkeypatch):
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "mixed", "g2": "value"})
    assert [msm_builds.xyzz_kernel(k, "g1") for k in ("accumulate", "accumulate_sets", "fix", "reduce_segments")] == [
        "msm_accumulate_g1", "msm_accumulate_sets_g1", "msm_fix_g1v", "msm_reduce_segments_g1v"]
    assert [msm_builds.xyzz_kernel(k, "g2") for k in ("accumulate", "tree_sum", "combine")] == [
        "msm_accumulate_g2v", "msm_tree_sum_g2v", "msm_combine_g2v"]
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "ref", "g2": "mixed"})
    assert (msm_builds.xyzz_kernel("fix_heavy", "g1"), msm_builds.xyzz_kernel("accumulate", "g2"),
            msm_builds.xyzz_kernel("fix", "g2")) == ("msm_fix_heavy_g1", "msm_accumulate_g2", "msm_fix_g2v")
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "mixed_eo", "g2": "mixed_eo"})
    assert [msm_builds.xyzz_kernel(k, g) for g in ("g1", "g2") for k in ("accumulate_sets", "fix")] == [
        "msm_accumulate_sets_g1r", "msm_fix_g1e", "msm_accumulate_sets_g2e", "msm_fix_g2e"]
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "eo", "g2": "eo"})
    assert (msm_builds.xyzz_kernel("accumulate", "g1"), msm_builds.xyzz_kernel("combine", "g2")) == (
        "msm_accumulate_g1e", "msm_combine_g2e")
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "stack", "g2": "ref"})
    with pytest.raises(ValueError, match="'stack' for g1"):
        msm_builds.xyzz_kernel("accumulate", "g1")


@pytest.mark.parametrize("log_n", [12, 16, 20, 24])
def test_bucket_scratch_holds_the_segment_sums_of_either_block_size(log_n):
    """The segments' block size (REDUCE_THREADS, 128 for both groups, 256 in perf/msm.py's sweeps):
    the scratch's segment and tree space covers the levels of the sizes in use."""
    plan = gmsm.plan_msm(1 << log_n, 254, "full", accumulation="xyzz")
    layout = gmsm.AccumulateLayout.for_plan(plan, 132)
    _, _, segs, tree, *_ = gmsm.BucketScratch.sizes([(plan, layout)])
    assert gmsm.REDUCE_THREADS == {"g1": 128, "g2": 128}
    for threads in (128, 256):
        levels = layout.tree_levels(threads)
        assert levels[-1] == 1 and levels[0] == -(-layout.segs // threads)
        assert segs >= plan.sets * levels[0] and tree >= plan.sets * sum(levels[1:])
    assert layout.tree_levels() == layout.tree_levels(gmsm.REDUCE_THREADS["g1"])


def test_sort_placement_and_its_scratch(monkeypatch):
    small = gmsm.plan_msm(1 << 16, 254, "full", accumulation="xyzz")
    big = gmsm.plan_msm(1 << 24, 254, "full", accumulation="xyzz")
    wide = gmsm.MsmPlan(1000, 6, gmsm.windows_for(6, 254), gmsm.windows_for(6, 254), 254)  # 43 windows
    assert gsort.SORT == "auto" and not gsort.binned_sort(small) and gsort.binned_sort(big)
    assert gmsm.SortScratch.wants_bins([small, big]) and not gmsm.SortScratch.wants_bins([small])
    monkeypatch.setattr(gsort, "SORT", "direct")
    assert not any(gsort.binned_sort(p) for p in (small, big)) and not gmsm.SortScratch.wants_bins([big])
    monkeypatch.setattr(gsort, "SORT", "binned")
    assert gsort.binned_sort(small) and not gsort.binned_sort(wide)  # a block stages MSM_BINS x windows pairs
    entries = big.max_entries
    base = 12 * (big.keys + 1) + 4 * entries + 8 * (-(-big.keys // gsort.SCAN_BLOCK) + 1)
    # the bins are counted (and allocated) only when asked for, whatever SORT says
    # the binned and middle orders' keys and entries; counts, offsets and cursors of the bins and of the groups
    # of 2^m keys
    groups = ((big.keys - 1) >> gsort.regroup_shift(big.keys)) + 1
    assert gsort.regroup_shift(big.keys) == gsort.bin_shift(big.keys) // 2
    assert gmsm.SortScratch.nbytes([big], True) == base + 12 * entries + 12 * (gsort.MSM_BINS + 1) + 12 * (groups + 1)
    assert gmsm.SortScratch.nbytes([big]) == base
    monkeypatch.setattr(gsort, "SORT", "merge")
    with pytest.raises(ValueError, match="'merge'"):
        gsort.binned_sort(big)


def test_a_sort_without_bins_in_its_scratch_places_directly(monkeypatch):
    """sort_scalars takes the binned passes only where its scratch has the bins (a key's footprint grants
    them); a large plan over a scratch without them places directly (it raised before)."""
    from fake_cuda import fake_driver  # noqa: PLC0415

    from engine.backends.gpu import msm_sort  # noqa: PLC0415

    big = gmsm.plan_msm(1 << 24, 254, "full", accumulation="xyzz")
    names = []
    with fake_driver():
        from cuda_kernels.driver import Device  # noqa: PLC0415

        dev = Device(0)
        stream = dev.stream()
        real = msm_sort.launch
        monkeypatch.setattr(msm_sort, "launch", lambda mod, name, *a, **k: (names.append(name), None)[1])
        for binned in (False, True):
            names.clear()
            s = gmsm.SortScratch(dev, [big], stream, binned=binned)
            assert s.binned == binned and len(s.bin_bufs) == (9 if binned else 0)
            msm_sort.sort_scalars(type("M", (), {"allow_shared": lambda self, n, b: None})(), big, 0, s, stream)
            kernels = [n for n in names if n.startswith("msm_")]
            assert kernels == (["msm_bin_count", "msm_bin", "msm_regroup_count", "msm_regroup", "msm_regroup_count",
                                "msm_regroup"] if binned else ["msm_count", "msm_scatter"])
            s.free(stream)
        monkeypatch.setattr(msm_sort, "launch", real)


def test_sort_scratch_counts_what_it_allocates(monkeypatch):
    """SortScratch.nbytes (what the VRAM budget counts) is the sum of its allocations, with and without bins."""
    from fake_cuda import fake_driver  # noqa: PLC0415

    plans = [gmsm.plan_msm(1 << 20, 254, "full", accumulation="xyzz"), gmsm.plan_msm(1 << 18, 254, 1)]
    with fake_driver():
        from cuda_kernels.driver import Device  # noqa: PLC0415

        dev = Device(0)
        stream = dev.stream()
        sizes = []
        real = dev.alloc
        monkeypatch.setattr(dev, "alloc", lambda nbytes, st: (sizes.append(nbytes), real(nbytes, st))[1])
        for binned in (False, True):
            sizes.clear()
            gmsm.SortScratch(dev, plans, stream, binned=binned).free(stream)
            assert sum(sizes) == gmsm.SortScratch.nbytes(plans, binned)


@pytest.mark.parametrize("keys,shift", [(1, 0), (256, 0), (257, 1), (1 << 21, 13), ((1 << 24) - 5, 16)])
def test_bins_cover_every_key(keys, shift):
    assert gsort.bin_shift(keys) == shift
    assert (keys - 1) >> shift < gsort.MSM_BINS


def test_each_curve_takes_its_measured_build(monkeypatch):
    """No override: G1's accumulation runs the inlined split build on BN254 (session 41) under 4 blocks of 128 an SM
    (session 42) and the split one on BLS12-381 under 3 (session 44), its other kernels split on both, G2 the split one on BLS12-381 and the even/odd one on BN254
    (sessions 32-33's measurements), a curve without an entry the fallback; the fold tables
    take each curve's table build (the same choices); an override names one build for both groups."""
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", None)
    monkeypatch.setattr(msm_builds, "TABLE_ABI", None)
    monkeypatch.setattr(msm_builds, "ACCUMULATE_BOUNDS", None)
    assert [msm_builds.xyzz_kernel(k, g, "bn128") for g in ("g1", "g2") for k in ("accumulate", "fix")] == [
        "msm_accumulate_g1i_b4", "msm_fix_g1s", "msm_accumulate_g2e", "msm_fix_g2e"]
    assert msm_builds.affine_kernel("forward", "g1", "bn128") == "msm_affine_forward_g1i"
    assert msm_builds.affine_kernel("forward", "g1", "bls12381") == "msm_affine_forward_g1"
    assert [msm_builds.xyzz_kernel(k, g, "bls12381") for g in ("g1", "g2") for k in ("accumulate", "fix")] == [
        "msm_accumulate_g1s_b3", "msm_fix_g1s", "msm_accumulate_g2s", "msm_fix_g2s"]
    assert [msm_builds.precompute_kernel(g, c) for c in ("bn128", "bls12381", None) for g in ("g1", "g2")] == [
        "msm_precompute_g1s", "msm_precompute_g2e", "msm_precompute_g1s", "msm_precompute_g2s",
        "msm_precompute_g1", "msm_precompute_g2"]
    monkeypatch.setattr(msm_builds, "TABLE_ABI", "eo")
    assert msm_builds.precompute_kernel("g1", "bn128") == "msm_precompute_g1e"
    monkeypatch.setattr(msm_builds, "TABLE_ABI", "plain")
    assert msm_builds.precompute_kernel("g2", "bls12381") == "msm_precompute_g2"
    monkeypatch.setattr(msm_builds, "TABLE_ABI", "split")
    assert [msm_builds.precompute_kernel(g, "bn128") for g in ("g1", "g2")] == [
        "msm_precompute_g1s", "msm_precompute_g2s"]
    monkeypatch.setattr(msm_builds, "TABLE_ABI", "fast")
    with pytest.raises(ValueError, match="'fast'"):
        msm_builds.precompute_kernel("g1", "bn128")
    assert msm_builds.xyzz_kernel("accumulate", "g1", None) == "msm_accumulate_g1"
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "ref", "g2": "ref"})  # an override wins for every curve
    assert msm_builds.xyzz_kernel("fix", "g1", "bn128") == "msm_fix_g1"
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "split", "g2": "split"})  # G2's Fq2 over the split form
    assert msm_builds.xyzz_kernel("accumulate", "g2", "bn128") == "msm_accumulate_g2s"
    # G1's accumulation only
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "split_inline", "g2": "split_inline"})
    g2s = ["msm_accumulate_g2s", "msm_accumulate_sets_g2s", "msm_fix_g2s"]  # the bound is BN254's inlined build's
    assert [msm_builds.xyzz_kernel(k, g, c) for c in ("bn128", "bls12381") for g in ("g1", "g2")
            for k in ("accumulate", "accumulate_sets", "fix")] == [
        "msm_accumulate_g1i_b4", "msm_accumulate_sets_g1i_b4", "msm_fix_g1s", *g2s,
        "msm_accumulate_g1i", "msm_accumulate_sets_g1i", "msm_fix_g1s", *g2s]
    monkeypatch.setattr(msm_builds, "ACCUMULATE_BOUNDS", {})  # none for any build (perf/msm.py --combos ...:0)
    assert msm_builds.xyzz_kernel("accumulate", "g1", "bn128") == "msm_accumulate_g1i"
    assert [msm_builds.affine_kernel(k, g, "bn128") for g in ("g1", "g2") for k in ("forward", "backward")] == [
        "msm_affine_forward_g1i", "msm_affine_backward_g1i", "msm_affine_forward_g2", "msm_affine_backward_g2"]
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "split", "g2": "split"})
    assert msm_builds.affine_kernel("invert", "g1", "bls12381") == "msm_affine_invert_g1"
    monkeypatch.setattr(msm_builds, "ACCUMULATE_BOUNDS", {"g1": 3})  # BLS12-381's split G1 under 3 blocks (built)
    assert msm_builds.xyzz_kernel("accumulate_sets", "g1", "bls12381") == "msm_accumulate_sets_g1s_b3"


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_proof_runs_its_curves_build(curve):
    """The loaded module carries its curve, so a proof's MSMs (fake driver: kernels do nothing) look
    up that curve's build: before, every curve ran one module-wide choice."""
    import numpy as np

    from conftest import FIXTURES  # noqa: PLC0415
    from engine.backends.gpu import GpuBackend  # noqa: PLC0415
    from engine.formats import read_wtns, read_zkey  # noqa: PLC0415
    from fake_cuda import fake_driver  # noqa: PLC0415

    tiny = FIXTURES / "tiny" / curve
    zkey, witness = read_zkey(tiny / "tiny.zkey"), np.asarray(read_wtns(tiny / "tiny.wtns").values)
    with fake_driver() as fake:
        backend = GpuBackend(0)
        backend.ctx.prepare = lambda c: b"fake cubin"
        key = backend.load_key(zkey)
        backend.compute(backend.stage(key, witness)).wait()
        backend.unload_key(key)
        backend.close()
    fixes = [f for f in fake.functions if f.startswith("msm_fix_g")]
    assert fixes and all(f == msm_builds.xyzz_kernel("fix", f[8:10], curve) for f in fixes), fixes


def test_bls12381_extra_accumulations(monkeypatch):
    """BLS12-381's build has G2's accumulation by reference with the even/odd product (mixed_eo
    there) and register-bounded accumulations (msm_builds.ACCUMULATE_BOUNDS); BN254's has neither, and
    a bound without its kernel is refused rather than launched."""
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "mixed_eo", "g2": "mixed_eo"})
    assert [msm_builds.xyzz_kernel("accumulate", g, "bls12381") for g in ("g1", "g2")] == [
        "msm_accumulate_g1r", "msm_accumulate_g2r"]
    assert msm_builds.xyzz_kernel("accumulate", "g2", "bn128") == "msm_accumulate_g2e"
    assert msm_builds.xyzz_kernel("fix", "g2", "bls12381") == "msm_fix_g2e"
    monkeypatch.setattr(msm_builds, "ACCUMULATE_BOUNDS", {"g1": 5, "g2": 3})
    assert [msm_builds.xyzz_kernel(k, "g1", "bls12381") for k in ("accumulate", "accumulate_sets", "fix")] == [
        "msm_accumulate_g1r_b5", "msm_accumulate_sets_g1r_b5", "msm_fix_g1e"]
    assert msm_builds.xyzz_kernel("accumulate_sets", "g2", "bls12381") == "msm_accumulate_sets_g2r_b3"
    with pytest.raises(ValueError, match="bounded to 5 blocks for bn128"):
        msm_builds.xyzz_kernel("accumulate", "g1", "bn128")
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "split_inline", "g2": "eo"})
    monkeypatch.setattr(msm_builds, "ACCUMULATE_BOUNDS", {"g1": 4})  # BN254's inlined G1 under 4 blocks
    assert [msm_builds.xyzz_kernel(k, "g1", "bn128") for k in ("accumulate", "accumulate_sets", "fix")] == [
        "msm_accumulate_g1i_b4", "msm_accumulate_sets_g1i_b4", "msm_fix_g1s"]
    with pytest.raises(ValueError, match="g1i bounded to 4 blocks for bls12381"):
        msm_builds.xyzz_kernel("accumulate", "g1", "bls12381")
    monkeypatch.setattr(msm_builds, "ACCUMULATE_BOUNDS", {"g1": 5, "g2": 3})
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "eo", "g2": "eo"})
    with pytest.raises(ValueError, match="g1e bounded to 5"):
        msm_builds.xyzz_kernel("accumulate", "g1", "bls12381")


def test_bounded_kernels_are_the_ones_kernels_cu_defines():
    """BOUNDED_KERNELS lists exactly the MSM_ACCUMULATE_BOUNDED instances of kernels.cu."""
    import re
    from pathlib import Path

    src = (Path(__file__).resolve().parent.parent / "cuda_kernels" / "kernels.cu").read_text()
    variants = src.index("#ifdef MSM_BOUNDED_VARIANTS")
    other = src.index("#else", variants)
    end = src.index("#endif", other)
    found: dict = {}
    for curve, part in (("bls12381", src[variants:other]), ("bn128", src[other:end])):
        for build, _, blocks in re.findall(r"^MSM_ACCUMULATE_BOUNDED\((\w+), (\w+), (\d+)\)", part, re.M):
            found.setdefault(curve, {}).setdefault(build, []).append(int(blocks))
    assert len(re.findall(r"^MSM_ACCUMULATE_BOUNDED\(", src, re.M)) == sum(map(len, found.values()))
    assert {c: {k: tuple(v) for k, v in b.items()} for c, b in found.items()} == msm_builds.BOUNDED_KERNELS


def test_only_twelve_limb_base_fields_build_the_extra_accumulations():
    """params.py defines MSM_BOUNDED_VARIANTS for BLS12-381 alone, so BN254's header, and with it
    its build, stay what they were (its CUBIN was byte-identical to main's, perf/RESULTS.md b13bls)."""
    from engine.algebra.curves import BLS12_381, BN254
    from engine.backends.gpu.params import params_header

    assert "MSM_BOUNDED_VARIANTS" not in params_header(BN254)
    assert "#define MSM_BOUNDED_VARIANTS 1\n" in params_header(BLS12_381)
    assert msm_builds.EXTRA_ACCUMULATIONS == {"bls12381"}


def test_an_environment_choice_of_builds_for_ab_runs(monkeypatch):
    """GROTH16_MSM_PRODUCTS picks the builds for every curve (a whole proof's A/B); PRODUCT_ABI still
    wins; a malformed value is refused with the setting named."""
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", None)
    monkeypatch.setenv("GROTH16_MSM_PRODUCTS", "g1=eo,g2=eo")
    assert [msm_builds.xyzz_kernel("accumulate", g, "bls12381") for g in ("g1", "g2")] == [
        "msm_accumulate_g1e", "msm_accumulate_g2e"]
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", {"g1": "split", "g2": "split"})
    assert msm_builds.xyzz_kernel("fix", "g1", "bn128") == "msm_fix_g1s"
    monkeypatch.setattr(msm_builds, "PRODUCT_ABI", None)
    for bad in ("g1=fast", "g3=eo", "eo"):
        monkeypatch.setenv("GROTH16_MSM_PRODUCTS", bad)
        with pytest.raises(ConfigError, match="GROTH16_MSM_PRODUCTS"):  # an EngineError: one line, no traceback
            msm_builds.product_abi("g1", "bn128")
