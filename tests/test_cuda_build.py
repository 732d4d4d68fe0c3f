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
    "ntt_dit_pass", "ntt_dif_pass_m", "ntt_dit_pass_m", "ntt_dif_narrow", "ntt_dit_narrow", "ntt_dif_narrow_m",
    "ntt_dit_narrow_m", "fr_twiddles", "fr_twiddles_m", "fr_twiddle_test", "fr_powers", "fr_bit_reverse", "fr_scale", "msm_count", "msm_scatter", "scan_blocks",
    "scan_add", "fixed_base_g1", "fixed_base_g2", "perf_imad", "perf_fr_mul_ptx", "perf_fr_mul_c64", "perf_fr_mul_wide", "perf_fr_mul_shoup",
    "fr_mul_eo_test", "fr_scale_pair", "fq_split_test", "perf_fq_sqr_eo", "perf_fq_sqr_split", "perf_fq_mulsub_eo",
    "perf_fq_mulsub_split", "msm_precompute_g1e", "msm_precompute_g2e", "msm_precompute_g1s", "msm_precompute_g2s", "fq2_split_test",
] + [f"msm_{k}_{g}" for g in ("g1", "g2") for k in (
    "accumulate", "fix", "fix_heavy", "fix_join", "reduce_segments", "tree_sum", "combine", "precompute")] + [
    f"msm_{k}_{g}s" for g in ("g1", "g2") for k in ("accumulate", "accumulate_sets", "fix", "fix_heavy", "fix_join",
                                                     "reduce_segments")]


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


def _counting_nvrtc(monkeypatch, tmp_path, version=(13, 5)):
    """NVRTC's version call counted, its library a file here: what the memo is made of."""
    library = tmp_path / "libnvrtc.so.13"
    library.write_bytes(b"one")
    calls = []

    def nvrtc_version():
        calls.append(1)
        return version

    monkeypatch.setenv("GROTH16_KERNEL_CACHE", str(tmp_path / "kernels"))
    monkeypatch.setattr(build, "nvrtc_version", nvrtc_version)
    monkeypatch.setattr(build, "_nvrtc_library_path", lambda: str(library))
    return calls, library


def test_nvrtc_is_asked_its_version_once_while_its_library_and_search_stay_the_same(monkeypatch, tmp_path):
    import os  # noqa: PLC0415

    calls, library = _counting_nvrtc(monkeypatch, tmp_path)
    assert build.known_nvrtc_version() == (13, 5) and len(calls) == 1
    assert build.known_nvrtc_version() == (13, 5) and len(calls) == 1  # the memo
    key = build.cache_key("A", "sm_90", ("-std=c++17",))
    assert len(calls) == 1
    library.write_bytes(b"an upgrade in place")  # another size and time: NVRTC is asked again
    assert build.known_nvrtc_version() == (13, 5) and len(calls) == 2
    stat = os.stat(library)
    os.utime(library, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the same size, a new file
    build.known_nvrtc_version()
    assert len(calls) == 3
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "another-toolkit"))  # the search may find another NVRTC
    build.known_nvrtc_version()
    assert len(calls) == 4
    (tmp_path / "kernels" / build.NVRTC_MEMO).write_text("{not json")
    build.known_nvrtc_version()
    assert len(calls) == 5
    assert build.cache_key("A", "sm_90", ("-std=c++17",)) == key == build.cache_key("A", "sm_90", ("-std=c++17",),
                                                                                   (13, 5))
    assert build.cache_key("A", "sm_90", ("-std=c++17",), (13, 6)) != key  # the version is in the key


def test_no_memo_where_the_library_is_unknown(monkeypatch, tmp_path):
    calls, _ = _counting_nvrtc(monkeypatch, tmp_path)
    monkeypatch.setattr(build, "_nvrtc_library_path", lambda: None)
    build.known_nvrtc_version()
    build.known_nvrtc_version()
    assert len(calls) == 2 and not (tmp_path / "kernels" / build.NVRTC_MEMO).exists()


def test_a_compile_keys_its_build_by_the_version_nvrtc_gives_not_a_stale_memo(monkeypatch, tmp_path):
    calls, _ = _counting_nvrtc(monkeypatch, tmp_path, version=(12, 9))
    build.known_nvrtc_version()  # remembered: 12.9
    monkeypatch.setattr(build, "nvrtc_version", lambda: (13, 5))  # replaced under the same file and search
    monkeypatch.setattr(build, "_nvrtc_compile", lambda params, arch, options: (b"\x7fELF new", ""))
    cubin, _ = build.compile_cubin("P", "sm_90", ("-std=c++17",))
    assert cubin == b"\x7fELF new"
    assert (tmp_path / "kernels" / f"{build.cache_key('P', 'sm_90', ('-std=c++17',), (13, 5))}.cubin").exists()
    assert build.remembered_nvrtc_version() == (13, 5)


def test_a_cache_lookup_never_compiles(monkeypatch, tmp_path):
    """build.cached_cubin (the CLI's look beside the context's start): the cache's CUBIN, or None on a miss, and
    NVRTC's compiler is never run; compile_cubin then finds the same entry."""
    _counting_nvrtc(monkeypatch, tmp_path)
    monkeypatch.setattr(build, "_nvrtc_compile", lambda *a: pytest.fail("a lookup compiled"))
    assert build.cached_cubin("P", "sm_90", ("-std=c++17",)) is None
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "kernels" / f"{build.cache_key('P', 'sm_90', ('-std=c++17',))}.cubin").write_bytes(b"\x7fELF")
    assert build.cached_cubin("P", "sm_90", ("-std=c++17",)) == b"\x7fELF"
    assert build.cached_cubin("P", "sm_80", ("-std=c++17",)) is None  # another architecture's build
    assert build.compile_cubin("P", "sm_90", ("-std=c++17",)) == (b"\x7fELF", "")


def test_the_clis_lookup_leaves_every_trouble_to_prepare(monkeypatch):
    """runtime.cached_curve_cubin is work done ahead: whatever fails there (NVRTC missing for the key, an
    unreadable cache) is None, and GpuContext.prepare meets it again and names it where it always has."""
    from engine.backends.gpu import runtime  # noqa: PLC0415

    def broken(*args, **kwargs):
        raise OSError("the cache cannot be read")

    monkeypatch.setattr(build, "cached_cubin", broken)
    assert runtime.cached_curve_cubin(BN254, "sm_90") is None


def test_a_cached_build_is_found_without_loading_nvrtc(tmp_path):
    """The cold CLI's kernel module: a build in the cache and a memo that holds, and NVRTC (its bindings, its
    library) is never loaded."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    env = {**os.environ, "GROTH16_KERNEL_CACHE": str(tmp_path)}

    def fresh_python(code: str) -> str:
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    remembered = fresh_python(
        "from cuda_kernels import build; key = build.cache_key('P', 'sm_90', ('-std=c++17',));"
        " (build.cache_dir() / (key + '.cubin')).write_bytes(b'cubin'); print(build.remembered_nvrtc_version())")
    assert remembered.strip() != "None", "the NVRTC the bindings loaded was not remembered"
    second = fresh_python("import sys; from cuda_kernels import build;"
                          " cubin, _ = build.compile_cubin('P', 'sm_90', ('-std=c++17',));"
                          " print(cubin == b'cubin', 'cuda.bindings.nvrtc' in sys.modules)")
    assert second.split() == ["True", "False"]
