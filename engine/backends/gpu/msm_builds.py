"""Which compiled build of each MSM kernel a curve takes, apart from msm.py's planning and launching: it is a
table of measurements (perf/RESULTS.md) that changes whenever a build is measured, not when the planner does.

cuda_kernels/kernels.cu compiles the same kernels several times over (the base field's product by reference,
by value, even/odd, split, inlined; register bounds), and which of them runs fastest differs by curve and group.
The overrides PRODUCT_ABI, ACCUMULATE_BOUNDS and TABLE_ABI live here, and tests and perf scripts set them here:
msm.py only calls the pickers (xyzz_kernel, affine_kernel, precompute_kernel), so a setting is read at each
launch.  This module imports nothing of the engine, so msm.py importing it makes no circle.
"""
from __future__ import annotations


# How the XYZZ pass's kernels call the base field's out-of-line product, per group: two builds of
# the same kernels (cuda_kernels/kernels.cu; field.cuh by_value):
#   ref    msm_*_g1, msm_*_g2    operands by reference: stored to the thread's stack frame and
#                                loaded back by the product (BN254 G1's accumulation: 512 bytes, 94 registers)
#   value  msm_*_g1v, msm_*_g2v  by value, in registers (no frame; 130 registers; Fq2's products stay by reference)
#   mixed  the accumulation by reference, the fix-up, segment, tree and combine kernels by value
#   eo     msm_*_g1e, msm_*_g2e  by value with the even/odd product (field.cuh by_value_eo; BN254's
#                                Fq: 124 registers against 130; BLS12-381's 12-limb Fq: 182 against 181)
#   mixed_eo  G1's accumulation with the even/odd product by reference (msm_accumulate*_g1r: 88
#             registers, 5 blocks), everything else as eo.  Not measured on a device yet
#             (perf/h15acc_final.sh does): the even/odd product is 121 wide products and ~63 other
#             instructions against ~385 others (perf/RESULTS.md, h15ntt).
# Measured on the H200 (perf/RESULTS.md, h15acc): the throughput-bound accumulation runs fastest by
# reference (5 resident blocks of 128 against 3 by value: BN254 G1 2^24 59.6 against 62.0 ms), the
# latency-bound kernels after it by value (segments 2.81 -> 2.43 ms at 2^24, 0.54 -> 0.44 at 2^16);
# BN254 G2 by value throughout (2^24 208.4 against 216.0 ms, 2^14-2^16 12-23% faster).
#   split     msm_*_g1s   by value, the even/odd product with squarings and differences of products split
#             msm_*_g2s   (field.cuh by_value_split, gen_mont_split.py): 36 + 64 wide products a squaring
#                         against 128, one reduction for Y3's two products; G2's Fq2 product as three
#                         double-width products and two reductions (3 x 64 + 2 x 64 against 3 x 128).
#   split_inline  G1's accumulation msm_accumulate*_g1i: the split form with every product inlined
#             (field.cuh split_inline: no call, so none of the ~220 IMAD.MOV a mixed addition's calls
#             cost on the multiplier pipe; 132 registers on BN254, 172 on BLS12-381); everything else
#             as split; the batch-affine rounds (accumulation "affine") take the same products
#             (msm_affine_*_g1i).  BN254's G1 default since session 41.
PRODUCT_ABIS = ("ref", "value", "mixed", "eo", "mixed_eo", "split", "split_inline")
# The default build per curve (perf/RESULTS.md, the evening session's closing call, CUDA events, every
# build's result equal): BN254's G1 and G2 with the even/odd product (G1 2^24 77.6 -> 60.2 ms, G2 2^24
# 208.1 -> 162.6).  BLS12-381 since its 12-limb even/odd product (b13bls, H200): G1's accumulation by
# reference ("mixed_eo": 2^20 13.17 -> 9.34 ms, 2^21 22.89 -> 16.20, 2^24 153.3 -> 109.4), G2 by value
# ("eo": 2^20 40.53 -> 28.90); its 2^20 proof 89.2 -> 68.3 ms in the same call (against 68.8 with G1's
# eo and 68.4 with G2's mixed_eo).  A curve not listed takes FALLBACK_ABI.
# Since session 32 (perf/RESULTS.md, the split form measured in one call against each curve's former
# default over the same points, tables and scalars): G1 "split" on both curves (BN254 2^16/2^20/2^24
# 0.958/0.951/0.953x the even/odd build; BLS12-381 0.913/0.958/0.966x mixed_eo).  Session 33, G2 split
# against eo: BLS12-381 0.935/0.952/0.961x (taken), BN254 0.961/1.035/1.052x (G2 stays eo: the Fq2
# split product holds 2 blocks of 128 an SM there, eo 3).
# Session 41 (perf/RESULTS.md; perf/s41a_h200.sh, two rounds over the same points and scalars, every result equal):
# G1 "split_inline" against "split": BN254 2^16/2^20/2^24 0.955/0.942-0.949/0.931x (2^24 50.6 -> 47.1 ms; its 2^20
# proof 28.5 -> 28.2 ms), taken; BLS12-381 0.983-0.993/1.125-1.134/1.126x (its 12-limb inlined accumulation is
# 7376 instructions), so it keeps "split".
PRODUCT_ABI_BY_CURVE = {"bn128": {"g1": "split_inline", "g2": "eo"}, "bls12381": {"g1": "split", "g2": "split"}}
FALLBACK_ABI = {"g1": "mixed", "g2": "value"}
PRODUCT_ABI: dict[str, str] | None = None  # one choice for every curve (tests, perf/msm.py --product)


def _env_abi() -> dict[str, str] | None:
    """GROTH16_MSM_PRODUCTS="g1=eo,g2=eo": one choice for every curve, for A/B runs of whole proofs
    (perf/s32c_final.sh); unset or empty: None.  Spaces around the parts are allowed ("g1=eo, g2=eo" was
    refused), a group given twice is said, and a long value is cut in the message (env_setting.table)."""
    from engine.env_setting import config_error, table  # noqa: PLC0415 - this module imports nothing of the engine

    return table("GROTH16_MSM_PRODUCTS", ("g1", "g2"), PRODUCT_ABIS, config_error)


def product_abi(group: str, curve: str | None) -> str:
    """The build of `group`'s XYZZ pass for `curve` (a module's `curve` name): PRODUCT_ABI when set,
    then GROTH16_MSM_PRODUCTS, then the curve's measured default."""
    table = PRODUCT_ABI if PRODUCT_ABI is not None else _env_abi()
    if table is None:
        table = PRODUCT_ABI_BY_CURVE.get(curve or "", FALLBACK_ABI)
    return table.get(group, "ref")


# BLS12-381's build (12-limb base field; cuda_kernels/kernels.cu MSM_BOUNDED_VARIANTS) has more
# accumulation kernels: G2's with the even/odd product by reference (msm_accumulate*_g2r, what
# "mixed_eo" runs for G2 on these curves; elsewhere G2's mixed_eo is its eo build), and the
# accumulation under a register bound of B blocks of 128 an SM (msm_accumulate*_<build>_bB, for
# the builds and B kernels.cu lists: BOUNDED_KERNELS).  ACCUMULATE_BOUNDS_BY_CURVE: the bound an
# accumulation build takes per curve (none: the unbounded kernel); ACCUMULATE_BOUNDS, by group, overrides
# it for every curve and build (tests, perf/msm.py --combos ABI:SORT:BOUND, 0 for none).
EXTRA_ACCUMULATIONS = frozenset({"bls12381"})
# The bounded accumulations each curve's build has, by build: BLS12-381's within MSM_BOUNDED_VARIANTS, BN254's
# (its inlined G1 accumulation under 4 blocks) in the #else branch of kernels.cu.
BOUNDED_KERNELS = {"bls12381": {"g1e": (3,), "g1r": (5,), "g1": (5,), "g2e": (3,), "g2r": (3,), "g1s": (3,)},
                   "bn128": {"g1i": (4,)}}
# Session 42 (perf/RESULTS.md; perf/s42c_h200.sh, the same points and scalars, every result equal): BN254's inlined
# G1 accumulation (132 registers, 3 blocks of 128 an SM, latency-bound under Nsight: 65% of cycles without an
# eligible warp) bounded to 4 blocks (126 registers, no spill): 2^20 / 2^24 / 2^26 0.938 / 0.948 / 0.965x, 2^14-2^18
# 0.95-0.98x.  BLS12-381's split G1 (184 registers, 2 blocks) under 3 (168 and 104 bytes of stack): 2^20 / 2^24
# 0.959 / 0.952x (perf/s42e_h200.sh, results equal); session 44 (perf/s44a_h200.sh, an H100: 0.958 / 0.953x,
# results equal, its GPU tests passed) made it BLS12-381's default.  BN254's even/odd G2 under 4 blocks spilled and
# ran 1.8-1.9x slower: not built.
ACCUMULATE_BOUNDS_BY_CURVE: dict[str, dict[str, int]] = {"bn128": {"g1i": 4}, "bls12381": {"g1s": 3}}
ACCUMULATE_BOUNDS: dict[str, int] | None = None


def accumulate_bound(group: str, curve: str | None, build: str) -> int | None:
    """The register bound (blocks of 128 an SM) of `group`'s accumulation in `build` for `curve`, or None."""
    if ACCUMULATE_BOUNDS is not None:
        return ACCUMULATE_BOUNDS.get(group)
    return ACCUMULATE_BOUNDS_BY_CURVE.get(curve or "", {}).get(build)


def xyzz_kernel(name: str, group: str, curve: str | None = None) -> str:
    """The XYZZ pass's kernel `name` ("accumulate", "fix", ...) for `group` in the build of
    the product product_abi picks for it and `curve`."""
    abi = product_abi(group, curve)
    if abi not in PRODUCT_ABIS:
        raise ValueError(f"msm product ABI {abi!r} for {group} is not one of {PRODUCT_ABIS}")
    accumulation = name.startswith("accumulate")
    if abi == "split_inline" and accumulation and group == "g1":
        build = "g1i"
    elif abi in ("split", "split_inline"):
        build = f"{group}s"
    elif abi in ("eo", "mixed_eo"):
        reference = abi == "mixed_eo" and accumulation and (group == "g1" or curve in EXTRA_ACCUMULATIONS)
        build = f"{group}{'r' if reference else 'e'}"
    else:
        by_reference = abi == "ref" or (abi == "mixed" and accumulation)
        build = f"{group}{'' if by_reference else 'v'}"
    bound = accumulate_bound(group, curve, build) if accumulation else None
    if bound is None:
        return f"msm_{name}_{build}"
    if bound not in BOUNDED_KERNELS.get(curve or "", {}).get(build, ()):
        raise ValueError(f"no accumulation kernel of build {build} bounded to {bound} blocks for {curve}")
    return f"msm_{name}_{build}_b{bound}"


def affine_kernel(name: str, group: str, curve: str | None = None) -> str:
    """The batch-affine round's kernel `name` (forward, invert, backward; round: all three in one): over G1's inlined split products
    where "split_inline" is G1's build, else over the base field's plain out-of-line product (msm_affine_*_<G>:
    ~384 IMAD-pipe slots a product, its operands through the stack, against ~273 and none inlined)."""
    inlined = group == "g1" and product_abi(group, curve) == "split_inline"
    return f"msm_affine_{name}_{'g1i' if inlined else group}"


# The fold tables' build per curve and group: "eo" (msm_precompute_<G>e, the even/odd product), "split"
# (msm_precompute_<G>s) or "plain" (msm_precompute_<G>); TABLE_ABI overrides
# for every curve and group (tests, perf/tables.py), a curve without an entry takes the plain build.
# Measured (perf/tables.py, 2^20, session 32): G1 split 1.67x the plain build on BN254 (45.5 against
# 75.9 ms), 1.86x on BLS12-381; G2 eo 1.47x / 1.48x; the even/odd build on G1 in between (1.46x on
# BN254).  "plain": the plain build whatever the curve's default.
# Session 33 (2^20): G2 split against eo, BLS12-381 306.2 against 325.7 ms (taken), BN254 137.2 against
# 135.2 (eo stays).
TABLE_ABI_BY_CURVE: dict[str, dict[str, str]] = {"bn128": {"g1": "split", "g2": "eo"},
                                                  "bls12381": {"g1": "split", "g2": "split"}}
TABLE_ABI: str | None = None
TABLE_ABIS = (None, "plain", "eo", "split")
_TABLE_SUFFIX = {None: "", "plain": "", "eo": "e", "split": "s"}


def precompute_kernel(group: str, curve: str | None) -> str:
    """The kernel that builds `group`'s fold tables for `curve` (a module's `curve` name)."""
    abi = TABLE_ABI if TABLE_ABI is not None else TABLE_ABI_BY_CURVE.get(curve or "", {}).get(group)
    if abi not in TABLE_ABIS:
        raise ValueError(f"table build {abi!r} is not one of {TABLE_ABIS}")
    return f"msm_precompute_{group}{_TABLE_SUFFIX[abi]}"
