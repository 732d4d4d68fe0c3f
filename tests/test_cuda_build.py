"""CI checks of the CUDA side that need no GPU: every kernel compiles with NVRTC for
Hopper on both curves and the generated PTX header is current.  (Rule 1 of
design.md §5 is enforced by the driver wrapper: tests/test_device_guard.py.)"""
from __future__ import annotations

from pathlib import Path

import pytest

from cuda_kernels import build, gen_mont_ptx
from engine.algebra.curves import BLS12_381, BN254
from engine.backends.gpu.params import params_header

ROOT = Path(__file__).resolve().parent.parent

KERNELS = [
    "fr_mul_test", "fq_mul_test", "fr_to_mont", "fr_from_mont", "evaluate_ab", "quotient_h", "ntt_dif_pass",
    "ntt_dit_pass", "fr_twiddles", "fr_twiddle_test", "fr_powers", "fr_bit_reverse", "fr_scale", "msm_count", "msm_scatter", "scan_blocks",
    "scan_add", "fixed_base_g1", "fixed_base_g2", "perf_imad", "perf_fr_mul_ptx", "perf_fr_mul_c64", "perf_fr_mul_wide", "perf_fr_mul_shoup",
    "fr_mul_eo_test", "fr_scale_pair",
] + [f"msm_{k}_{g}" for g in ("g1", "g2") for k in (
    "accumulate", "fix", "fix_heavy", "reduce_segments", "tree_sum", "combine", "precompute")]


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_every_kernel_compiles_with_nvrtc_for_sm90(curve):
    # with the default field product ("auto") BN254 builds the 64-bit-product form for both
    # fields and BLS12-381 the carry-chain form for its 12-limb Fq: both forms compile here
    cubin, _log = build.compile_cubin(params_header(curve), arch="sm_90")
    assert cubin[:4] == b"\x7fELF"
    for name in KERNELS:  # each entry point is in the image under its C name
        assert name.encode() in cubin, name


def test_a_clean_compile_leaves_the_interpreters_one_byte_bytes_alone():
    """NVRTC writes into the caller's buffers.  Its log buffer was made as b" " * size, which for an empty
    log (size 1) is the interpreter's shared b" " itself: after a clean compile every b" " of the process
    read b"\\x00" (a CI run's key-cache headers, padded with b" ", came out NUL-padded and unreadable)."""
    space = bytes([32])  # the shared one-byte object, built at run time (b" " * 3 would be folded)
    cubin, log = build.compile_source(b'extern "C" __global__ void k(int* a) { a[0] = 1; }', "k.cu", {},
                                      "sm_90", [])
    assert cubin[:4] == b"\x7fELF" and log == ""
    assert space * 3 == bytes([32, 32, 32]) and bytes([32]) == b"\x20"


def test_compile_error_carries_the_compiler_log():
    with pytest.raises(build.CompileFailed) as info:
        build.compile_cubin("this is not C++;", arch="sm_90", use_cache=False)
    assert "params.cuh" in info.value.log or "error" in info.value.log


def test_generated_montgomery_header_is_current():
    committed = (ROOT / "cuda_kernels" / "mont_ptx.cuh").read_text()
    assert committed == gen_mont_ptx.generate(), "run python cuda_kernels/gen_mont_ptx.py"


def test_cache_key_changes_with_sources_options_and_params():
    base = build.cache_key("A", "sm_90", ("-std=c++17",))
    assert build.cache_key("B", "sm_90", ("-std=c++17",)) != base
    assert build.cache_key("A", "sm_80", ("-std=c++17",)) != base
    assert build.cache_key("A", "sm_90", ("-std=c++17", "-G")) != base
