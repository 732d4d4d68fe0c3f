"""The params.cuh text for one curve: the field constants the kernel templates take.

cuda_kernels/ knows no curve; this module turns an engine `Curve` into the two
constant structs (FR_P for the scalar field, FQ_P for the base field) that
kernels.cu is compiled against.
"""
from __future__ import annotations

from engine.algebra import glv
from engine.algebra.curves import Curve
from engine.env_setting import choice, config_error, integer, switch

# Which Montgomery product the kernels use (cuda_kernels/field.cuh): "auto" takes the
# 64-bit-product form for 8-limb fields and the carry-chain form for 12-limb ones, the
# faster of each on the H200 (perf/field_mul.py, perf/msm.py; perf/RESULTS.md).
# GROTH16_FIELD_MUL=ptx|wide|auto|eo overrides, for experiments ("eo": the even/odd chains
# of gen_mont_eo.py for 8-limb fields, which the NTT uses whatever this says).
FIELD_MUL_VARIANTS = {"ptx": 0, "wide": 1, "auto": 2, "eo": 3}
DEFAULT_FIELD_MUL = "auto"
# Blocks per SM the NTT passes are built for (__launch_bounds__ minimum), measured per product
# (perf/ntt_ab.py, perf/RESULTS.md): the Shoup twiddle products (both scalar fields since session
# 33; BN254 measured) run best at 3 blocks of 256 threads, 80 registers (at 4, 64 registers, they
# spill); the Montgomery ones (BLS12-381 until then) at 4.  GROTH16_NTT_MIN_BLOCKS overrides.
NTT_MIN_BLOCKS_SHOUP = 3
NTT_MIN_BLOCKS_MONTGOMERY = 4
# The override's range: a count of 256-thread blocks an SM holds at once, 1 to 8 (2048 threads an SM on the GPUs
# the kernels are built for); 0 and a number of 30 digits went into __launch_bounds__ unchecked.
NTT_MIN_BLOCKS_MOST = 8


def ntt_min_blocks(curve: Curve, shoup: bool = True) -> int:
    """For the passes on Shoup twiddles (shoup) or on Montgomery ones (the `_m` kernels)."""
    forced = integer("GROTH16_NTT_MIN_BLOCKS", None, config_error, least=1, most=NTT_MIN_BLOCKS_MOST,
                     what="blocks of 256 threads an SM")
    if forced is not None:
        return forced
    return NTT_MIN_BLOCKS_SHOUP if shoup and allows_shoup(curve.r, curve.n8r) else NTT_MIN_BLOCKS_MONTGOMERY


def _limbs32(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & 0xFFFFFFFF for i in range(n)]


def allows_shoup(p: int, n_bytes: int) -> bool:
    """Shoup products by table constants (the NTT's twiddles) leave results below 2p, which
    must fit the field's words (cuda_kernels/gen_mont_eo.py mul_shoup_eo): true for both
    scalar fields (BLS12-381's r is 0.45 * 2^256)."""
    return 2 * p < 1 << (8 * n_bytes)


def fq_mul_out_of_line() -> bool:
    """The base field's Montgomery product is one out-of-line function, not inlined at every
    use: a mixed point addition inlines ten products, which overflowed the instruction cache
    in the MSM's accumulation loop (perf/RESULTS.md).  The scalar field's stays inline (the
    NTT's few call sites).  GROTH16_FQ_MUL_INLINE=1 inlines it again, for experiments."""
    return switch("GROTH16_FQ_MUL_INLINE", config_error) is not True


def _arr(vals: list[int]) -> str:
    return "{" + ", ".join(f"0x{v:08x}u" for v in vals) + "}"


def endo_struct(curve: Curve) -> str:
    """G1's endomorphism constant for the tail's GLV products (engine/algebra/glv.py), in
    Montgomery form."""
    n = curve.n8q // 4
    beta = glv.endomorphism(curve)[0] * (1 << (32 * n)) % curve.q
    return (
        "struct G1_ENDO_P {  // beta R mod q: phi(x, y) = (beta x, y) = [lambda](x, y) on G1\n"
        f"    static constexpr uint32_t BETA[{n}] = {_arr(_limbs32(beta, n))};\n"
        "};\n"
    )


def field_struct(name: str, p: int, n_bytes: int, mul_out_of_line: bool = False) -> str:
    n = n_bytes // 4
    r = (1 << (32 * n)) % p
    r2 = r * r % p
    inv = (-pow(p, -1, 1 << 32)) % (1 << 32)
    negpinv = (-pow(p, -1, 1 << (32 * n))) % (1 << (32 * n))
    assert p < 1 << (32 * n - 1), "the Montgomery kernels need one spare bit"

    return (
        f"struct {name} {{\n"
        f"    static constexpr int N = {n};\n"
        f"    static constexpr int BITS = {p.bit_length()};\n"
        f"    static constexpr uint32_t MOD[{n}] = {_arr(_limbs32(p, n))};\n"
        f"    static constexpr uint32_t INV = 0x{inv:08x}u;\n"
        f"    static constexpr uint32_t ONE[{n}] = {_arr(_limbs32(r, n))};\n"
        f"    static constexpr uint32_t R2[{n}] = {_arr(_limbs32(r2, n))};\n"
        f"    static constexpr uint32_t MODM2[{n}] = {_arr(_limbs32(p - 2, n))};\n"
        f"    static constexpr bool SHOUP = {'true' if allows_shoup(p, n_bytes) else 'false'};\n"
        f"    static constexpr bool MUL_OUT_OF_LINE = {'true' if mul_out_of_line else 'false'};\n"
        f"    static constexpr uint32_t NEGPINV[{n}] = {_arr(_limbs32(negpinv, n))};  // -p^-1 mod 2^(32N)\n"
        f"    static constexpr uint32_t MOD2[{2 * n}] = {_arr(_limbs32(p * p, 2 * n))};  // p^2 (lazy reductions)\n"
        f"    static constexpr uint32_t MOD2X2[{2 * n}] = {_arr(_limbs32(2 * p * p, 2 * n))};  // 2 p^2 (Fq2's c1)\n"
        "};\n"
    )


def params_header(curve: Curve, field_mul: str | None = None) -> str:
    variant = field_mul or choice("GROTH16_FIELD_MUL", DEFAULT_FIELD_MUL, tuple(FIELD_MUL_VARIANTS), config_error)
    if variant not in FIELD_MUL_VARIANTS:
        raise ValueError(f"GROTH16_FIELD_MUL: {variant!r} is not one of {sorted(FIELD_MUL_VARIANTS)}")
    return (
        f"// field constants for {curve.name} (generated by engine/backends/gpu/params.py)\n"
        "#pragma once\n"
        f"#define FIELD_MUL_VARIANT {FIELD_MUL_VARIANTS[variant]}\n"
        f"#define NTT_MIN_BLOCKS {ntt_min_blocks(curve)}\n"
        f"#define NTT_MIN_BLOCKS_M {ntt_min_blocks(curve, shoup=False)}\n"
        # 12-limb base fields: kernels.cu's extra MSM accumulation builds (BN254's header unchanged)
        + ("#define MSM_BOUNDED_VARIANTS 1\n" if curve.n8q == 48 else "")
        + "#ifndef GROTH16_STDINT\n#define GROTH16_STDINT\n"
        "typedef unsigned int uint32_t;\ntypedef unsigned long long uint64_t;\ntypedef int int32_t;\n#endif\n"
        + field_struct("FR_P", curve.r, curve.n8r)
        + field_struct("FQ_P", curve.q, curve.n8q, mul_out_of_line=fq_mul_out_of_line())
        + endo_struct(curve)
    )
