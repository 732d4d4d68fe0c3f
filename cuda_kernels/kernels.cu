// Entry point compiled by NVRTC once per curve.  The build prepends "params.cuh", which
// defines the field-constants structs FR_P and FQ_P for the curve; everything below is
// curve-independent.  Kernels are extern "C" so the runtime finds them by name.
#include "params.cuh"
#include "field.cuh"
#include "curve.cuh"
#include "ntt.cuh"
#include "msm.cuh"
#include "evaluate.cuh"
#include "fixed_base.cuh"
#include "mont_c64.cuh"
#include "tower.cuh"
#include "pairing.cuh"
#include "epilogue.cuh"
#include "groth16_check.cuh"
#include "csr.cuh"  // the CSR of A and B built from the raw coeffs (key loads; curve-independent)

typedef fp<FR_P> fr_t;
typedef fp<FQ_P> fq_t;
typedef fp2<fq_t> fq2_t;
typedef affine<fq_t> g1_aff;
typedef xyzz<fq_t> g1_acc;
typedef affine<fq2_t> g2_aff;
typedef xyzz<fq2_t> g2_acc;
typedef ntt_kernels<fr_t> NTT;
typedef eval_kernels<fr_t> EVAL;
typedef msm_kernels<g1_aff, g1_acc> MSM1;
typedef msm_kernels<g2_aff, g2_acc> MSM2;
typedef msm_affine_kernels<g1_aff> AFF1;
typedef msm_affine_kernels<g2_aff> AFF2;

// ---- field tests and conversions
extern "C" __global__ void fr_mul_test(const uint32_t* a, const uint32_t* b, uint32_t n, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t x = fr_t::load(a + 8ull * i), y = fr_t::load(b + 8ull * i);
    (x * y).store(out + 32ull * i);
    (x + y).store(out + 32ull * i + 8);
    (x - y).store(out + 32ull * i + 16);
    x.inverse().store(out + 32ull * i + 24);
}
extern "C" __global__ void fq_mul_test(const uint32_t* a, const uint32_t* b, uint32_t n, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint32_t W = fq_t::N;
    fq_t x = fq_t::load(a + (uint64_t)W * i), y = fq_t::load(b + (uint64_t)W * i);
    (x * y).store(out + 4ull * W * i);
    (x + y).store(out + 4ull * W * i + W);
    (x - y).store(out + 4ull * W * i + 2 * W);
    x.inverse().store(out + 4ull * W * i + 3 * W);
}
extern "C" __global__ void fr_to_mont(uint32_t* x, uint32_t n) { EVAL::convert(x, n, true); }
extern "C" __global__ void fr_from_mont(uint32_t* x, uint32_t n) { EVAL::convert(x, n, false); }

// ---- evaluate / quotient
extern "C" __global__ void __launch_bounds__(256) evaluate_ab(
    const uint32_t* rp_a, const uint32_t* wire_a, const uint32_t* coef_a, const uint32_t* rp_b,
    const uint32_t* wire_b, const uint32_t* coef_b, const uint32_t* w, uint32_t n, uint32_t* a, uint32_t* b,
    uint32_t* c) {
    EVAL::evaluate(rp_a, wire_a, coef_a, rp_b, wire_b, coef_b, w, n, a, b, c);
}
extern "C" __global__ void __launch_bounds__(256) quotient_h(const uint32_t* a, const uint32_t* b,
                                                              const uint32_t* c, uint32_t n, uint32_t* h) {
    EVAL::quotient(a, b, c, n, h);
}
// A small proof's s w and r w (launch.py's products beside the MSMs): out[y n + i] = w_i k_y mod r, plain.  w and
// k_y are plain; k_y goes to Montgomery form first, so that the Montgomery product of the two is plain.
extern "C" __global__ void __launch_bounds__(256) fr_scale_pair(const uint32_t* w, uint32_t n, const uint32_t* k0,
                                                                const uint32_t* k1, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t k = fr_t::load(blockIdx.y ? k1 : k0).to_mont();
    (fr_t::load(w + 8ull * i) * k).store(out + 8ull * ((uint64_t)blockIdx.y * n + i));
}
extern "C" __global__ void __launch_bounds__(256) witness_range_check(const uint32_t* w, uint32_t n, uint32_t* found) {
    first_unreduced<FR_P>(w, n, found);
}

// ---- NTT
#include "ntt_entry.cuh"
#include "front_batch.cuh"
extern "C" __global__ void fr_twiddle_test(const uint32_t* x, const uint32_t* w, uint32_t n, uint32_t* out) {
    NTT::twiddle_test(x, w, n, out);
}
extern "C" __global__ void fr_bit_reverse(const uint32_t* in, uint32_t* out, uint32_t k) { NTT::bit_reverse(in, out, k); }
extern "C" __global__ void fr_scale(uint32_t* data, const uint32_t* table, uint32_t k) { NTT::scale(data, table, k); }

// ---- MSM: scalar side (shared by G1 and G2)
extern "C" __global__ void __launch_bounds__(256) msm_count(const uint32_t* scalars, uint32_t n, uint32_t c,
                                                             uint32_t windows, uint32_t fold, uint32_t batch_keys,
                                                             uint32_t* counts) {
    msm_digits<false>(scalars, n, c, windows, fold, batch_keys, counts, nullptr);
}
extern "C" __global__ void __launch_bounds__(256) msm_scatter(const uint32_t* scalars, uint32_t n, uint32_t c,
                                                               uint32_t windows, uint32_t fold, uint32_t batch_keys,
                                                               uint32_t* cursor, uint32_t* sorted) {
    msm_digits<true>(scalars, n, c, windows, fold, batch_keys, cursor, sorted);
}
// the binned sort (msm.cuh, msm_regroup.cuh): blocks of MSM_BINS threads for the bins (dynamic shared
// memory for the stage), of RG_THREADS for the regrouping (static shared memory, 41 KB)
extern "C" __global__ void __launch_bounds__(MSM_BINS) msm_bin_count(const uint32_t* scalars, uint32_t n, uint32_t c,
                                                                     uint32_t windows, uint32_t fold,
                                                                     uint32_t batch_keys, uint32_t shift,
                                                                     uint32_t* bin_counts) {
    __shared__ uint32_t hist[MSM_BINS];
    msm_bin_count_pass(scalars, n, c, windows, fold, batch_keys, shift, bin_counts, hist);
}
extern "C" __global__ void __launch_bounds__(MSM_BINS) msm_bin(const uint32_t* scalars, uint32_t n, uint32_t c,
                                                               uint32_t windows, uint32_t fold, uint32_t batch_keys,
                                                               uint32_t shift, uint32_t* bin_cursor,
                                                               uint32_t* bin_keys, uint32_t* bin_entries) {
    extern __shared__ uint32_t shm[];
    msm_bin_pass(scalars, n, c, windows, fold, batch_keys, shift, bin_cursor, bin_keys, bin_entries, shm);
}
extern "C" __global__ void __launch_bounds__(RG_THREADS) msm_regroup_count(const uint32_t* in_keys, uint32_t in_shift,
                                                                           uint32_t out_shift, uint32_t local_max,
                                                                           const uint32_t* total, uint32_t* counts) {
    __shared__ uint32_t count[RG_LOCAL];
    msm_regroup_count_pass(in_keys, in_shift, out_shift, local_max, total, counts, count);
}
extern "C" __global__ void __launch_bounds__(RG_THREADS) msm_regroup(const uint32_t* in_keys, const uint32_t* in_entries,
                                                                     uint32_t in_shift, uint32_t out_shift,
                                                                     uint32_t local_max, const uint32_t* total,
                                                                     uint32_t* cursor, uint32_t* out_keys,
                                                                     uint32_t* out_entries) {
    __shared__ __align__(16) uint32_t shm[2 * RG_LOCAL + 32 + 2 * RG_SLICE];
    msm_regroup_pass(in_keys, in_entries, in_shift, out_shift, local_max, total, cursor, out_keys, out_entries, shm);
}
extern "C" __global__ void __launch_bounds__(256) msm_halve(const uint32_t* in_off, uint32_t K, uint32_t* counts) {
    msm_halve_counts(in_off, K, counts);
}
// scan: 1024 threads x 4 entries a block
extern "C" __global__ void __launch_bounds__(1024) scan_blocks(const uint32_t* in, uint32_t count, uint32_t* out,
                                                                uint32_t* block_sums) {
    __shared__ uint32_t shm[32];
    const uint32_t base = blockIdx.x * 4096 + threadIdx.x * 4;
    uint32_t v[4], s = 0;
    for (int j = 0; j < 4; j++) {
        v[j] = base + j < count ? in[base + j] : 0;
        s += v[j];
    }
    uint32_t total;
    uint32_t prefix = block_exclusive_scan(s, shm, total);
    for (int j = 0; j < 4; j++) {
        if (base + j < count) out[base + j] = prefix;
        prefix += v[j];
    }
    if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}
extern "C" __global__ void __launch_bounds__(1024) scan_add(uint32_t* out, uint32_t* cursor, uint32_t count,
                                                             const uint32_t* block_sums, uint32_t nblocks) {
    // block_sums were scanned in place (exclusive) by scan_blocks with one block; the
    // grand total sits at block_sums[nblocks]... computed here: out[count] = total.
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        const uint32_t v = out[i] + block_sums[i / 4096];
        out[i] = v;
        cursor[i] = v;
    }
}

// The XYZZ pass's kernels of a group G (names msm_*_G); the MSM planner picks the build of the
// base field's product for each (engine/backends/gpu/msm.py PRODUCT_ABI): G = g1/g2 by reference,
// g1v/g2v by value (field.cuh by_value), g1e/g2e by value with the even/odd product (by_value_eo).
// msm_accumulate's explicit minimum of one block lets NVRTC give it more registers (BN254 G1:
// 94 against 80 with the bare bound): 75.7 against 80.2 ms at 2^24 (perf/RESULTS.md).
#define MSM_ACCUMULATE_KERNELS(G, MSM)                                                                              \
    extern "C" __global__ void __launch_bounds__(256, 1) msm_accumulate_##G(                                        \
        const uint32_t* sorted, const uint32_t* offsets, uint32_t K, const uint32_t* bases, uint32_t T,             \
        uint32_t* buckets, uint32_t* partials) {                                                                    \
        MSM::template accumulate<false>(sorted, offsets, K, bases, T, buckets, partials, 0);                        \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256, 1) msm_accumulate_sets_##G(                                   \
        const uint32_t* sorted, const uint32_t* offsets, uint32_t K, const uint32_t* b0, const uint32_t* b1,        \
        const uint32_t* b2, uint32_t T, uint32_t* buckets, uint32_t* partials, uint32_t partial_words) {            \
        MSM::template accumulate<true>(sorted, offsets, K, msm_pick(blockIdx.y, b0, b1, b2), T, buckets, partials,  \
                                       partial_words);                                                              \
    }

#define MSM_XYZZ_KERNELS(G, MSM)                                                                                    \
    MSM_ACCUMULATE_KERNELS(G, MSM)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256) msm_fix_##G(const uint32_t* offsets, uint32_t K, uint32_t T,  \
                                                                  const uint32_t* partials, uint32_t* buckets,      \
                                                                  uint32_t* heavy, uint32_t* heavy_count,           \
                                                                  uint32_t serial_max, uint32_t warp_max,           \
                                                                  uint32_t partial_words) {                         \
        MSM::fix(offsets, K, T, partials, buckets, heavy, heavy_count, serial_max, warp_max, partial_words);        \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) msm_fix_heavy_##G(                                            \
        const uint32_t* heavy, const uint32_t* heavy_count, uint32_t K, const uint32_t* offsets, uint32_t T,        \
        uint32_t* partials, uint32_t* buckets, uint32_t partial_words, uint32_t lanes) {                            \
        extern __shared__ uint32_t shm[];                                                                           \
        MSM::fix_heavy(heavy, heavy_count, K, offsets, T, partials, buckets, partial_words, lanes, shm);            \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) msm_fix_join_##G(                                             \
        const uint32_t* heavy, const uint32_t* heavy_count, uint32_t K, const uint32_t* offsets, uint32_t T,        \
        const uint32_t* partials, uint32_t* buckets, uint32_t partial_words, uint32_t slices) {                     \
        extern __shared__ uint32_t shm[];                                                                           \
        MSM::fix_join(heavy, heavy_count, K, offsets, T, partials, buckets, partial_words, slices, shm);            \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) msm_reduce_segments_##G(const uint32_t* buckets, uint32_t B, \
                                                                              uint32_t L, uint32_t* seg_out) {      \
        extern __shared__ uint32_t shm[];                                                                           \
        MSM::reduce_segments(buckets, B, L, seg_out, shm);                                                          \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) msm_tree_sum_##G(const uint32_t* in, uint32_t count,         \
                                                                       uint32_t per_thread, uint32_t* out) {        \
        extern __shared__ uint32_t shm[];                                                                           \
        MSM::tree_sum(in, count, per_thread, out, shm);                                                             \
    }                                                                                                               \
    extern "C" __global__ void msm_combine_##G(const uint32_t* group_out, uint32_t groups, uint32_t shift,          \
                                               uint32_t* r0, uint32_t* r1, uint32_t* r2, uint32_t batch,            \
                                               uint32_t stride) {                                                   \
        MSM::combine(group_out, groups, shift, r0, r1, r2, batch, stride);                                          \
    }

#define MSM_AFFINE_KERNELS(G, AFF)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256) msm_affine_forward_##G(                                       \
        const uint32_t* sorted, const uint32_t* in, const uint32_t* in_off, const uint32_t* out_off, uint32_t K,    \
        uint32_t m, uint32_t* prefix, uint32_t* leaves, uint32_t* totals) {                                         \
        extern __shared__ uint32_t shm[];                                                                           \
        AFF::forward(sorted, in, in_off, out_off, K, m, prefix, leaves, totals, shm);                               \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) msm_affine_invert_##G(uint32_t* totals, uint32_t count) {     \
        AFF::invert(totals, count);                                                                                 \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) msm_affine_backward_##G(                                      \
        const uint32_t* sorted, const uint32_t* in, const uint32_t* in_off, const uint32_t* out_off, uint32_t K,    \
        uint32_t m, const uint32_t* prefix, const uint32_t* leaves, const uint32_t* totals, uint32_t* out) {        \
        extern __shared__ uint32_t shm[];                                                                           \
        AFF::backward(sorted, in, in_off, out_off, K, m, prefix, leaves, totals, out, shm);                         \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) msm_affine_round_##G(                                         \
        const uint32_t* sorted, const uint32_t* in, const uint32_t* in_off, const uint32_t* out_off, uint32_t K,    \
        uint32_t m, uint32_t* out) {                                                                                \
        extern __shared__ uint32_t shm[];                                                                           \
        AFF::fused(sorted, in, in_off, out_off, K, m, out, shm);                                                    \
    }

#define MSM_GROUP_KERNELS(G, MSM, AFF)                                                                              \
    MSM_XYZZ_KERNELS(G, MSM)                                                                                        \
    MSM_AFFINE_KERNELS(G, AFF)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256) msm_precompute_##G(uint32_t* bases, uint32_t n, uint32_t c,   \
                                                                         uint32_t fold) {                           \
        MSM::precompute(bases, n, c, fold);                                                                         \
    }

MSM_GROUP_KERNELS(g1, MSM1, AFF1)
MSM_GROUP_KERNELS(g2, MSM2, AFF2)
typedef fp<by_value<FQ_P>> fqv_t;
typedef msm_kernels<affine<fqv_t>, xyzz<fqv_t>> MSM1V;
typedef msm_kernels<affine<fp2<fqv_t>>, xyzz<fp2<fqv_t>>> MSM2V;
MSM_XYZZ_KERNELS(g1v, MSM1V)
MSM_XYZZ_KERNELS(g2v, MSM2V)
typedef fp<by_value_eo<FQ_P>> fqe_t;
typedef fp<by_value_split<FQ_P>> fqs_t;
typedef msm_kernels<affine<fqe_t>, xyzz<fqe_t>> MSM1E;
typedef msm_kernels<affine<fp2<fqe_t>>, xyzz<fp2<fqe_t>>> MSM2E;
MSM_XYZZ_KERNELS(g1e, MSM1E)
MSM_XYZZ_KERNELS(g2e, MSM2E)
// The split form (fqs_t): G1's squarings split, its Y3 with one reduction; G2's Fq2 products as three
// double-width products and two reductions (msm.py "split").
typedef msm_kernels<affine<fqs_t>, xyzz<fqs_t>> MSM1S;
typedef msm_kernels<affine<fp2<fqs_t>>, xyzz<fp2<fqs_t>>> MSM2S;
MSM_XYZZ_KERNELS(g1s, MSM1S)
MSM_XYZZ_KERNELS(g2s, MSM2S)
// G1's accumulation with the split form's products inlined (field.cuh split_inline; msm.py "split_inline":
// the fix-up, segment, tree and combine kernels stay g1s).
typedef fp<split_inline<FQ_P>> fqsi_t;
typedef msm_kernels<affine<fqsi_t>, xyzz<fqsi_t>> MSM1I;
MSM_ACCUMULATE_KERNELS(g1i, MSM1I)
typedef msm_affine_kernels<affine<fqsi_t>> AFF1I;  // batch-affine rounds over the same products (msm.py affine_rounds)
MSM_AFFINE_KERNELS(g1i, AFF1I)
// The fold tables' build with the even/odd product (e) and the split one (s: a doubling's squarings
// split, G1's Y3 with one reduction, G2's Fq2 products with two): msm.precompute_kernel picks them over
// the plain build's msm_precompute_<G>.
extern "C" __global__ void __launch_bounds__(256) msm_precompute_g1e(uint32_t* bases, uint32_t n, uint32_t c,
                                                                      uint32_t fold) {
    MSM1E::precompute(bases, n, c, fold);
}
extern "C" __global__ void __launch_bounds__(256) msm_precompute_g2e(uint32_t* bases, uint32_t n, uint32_t c,
                                                                      uint32_t fold) {
    MSM2E::precompute(bases, n, c, fold);
}
extern "C" __global__ void __launch_bounds__(256) msm_precompute_g1s(uint32_t* bases, uint32_t n, uint32_t c,
                                                                      uint32_t fold) {
    MSM1S::precompute(bases, n, c, fold);
}
extern "C" __global__ void __launch_bounds__(256) msm_precompute_g2s(uint32_t* bases, uint32_t n, uint32_t c,
                                                                      uint32_t fold) {
    MSM2S::precompute(bases, n, c, fold);
}
// G1's accumulation with the even/odd product by reference (88 registers, 5 blocks of 128 an SM,
// against 124 and 4 by value): msm.PRODUCT_ABI "mixed_eo".
typedef fp<by_reference_eo<FQ_P>> fqr_t;
typedef msm_kernels<affine<fqr_t>, xyzz<fqr_t>> MSM1R;
extern "C" __global__ void __launch_bounds__(256, 1) msm_accumulate_g1r(
    const uint32_t* sorted, const uint32_t* offsets, uint32_t K, const uint32_t* bases, uint32_t T,
    uint32_t* buckets, uint32_t* partials) {
    MSM1R::template accumulate<false>(sorted, offsets, K, bases, T, buckets, partials, 0);
}
extern "C" __global__ void __launch_bounds__(256, 1) msm_accumulate_sets_g1r(
    const uint32_t* sorted, const uint32_t* offsets, uint32_t K, const uint32_t* b0, const uint32_t* b1,
    const uint32_t* b2, uint32_t T, uint32_t* buckets, uint32_t* partials, uint32_t partial_words) {
    MSM1R::template accumulate<true>(sorted, offsets, K, msm_pick(blockIdx.y, b0, b1, b2), T, buckets, partials,
                                     partial_words);
}

// BLS12-381's base field (12 limbs; params.py defines MSM_BOUNDED_VARIANTS for it only, so BN254's
// build is unchanged): the accumulation under other register bounds, and G2's accumulation with the
// even/odd product by reference.  By value G1 takes 181 registers (2 blocks of 128 an SM), by
// reference 114 (4 blocks) and G2 210 (2 blocks): msm.py's ABI suffix _bN (e.g. "eo_b3") picks
// msm_accumulate*_<G>_bN, launched in blocks of ACCUMULATE_THREADS = 128.  perf/msm.py measures them.
#define MSM_ACCUMULATE_BOUNDED(G, MSM, BLOCKS)                                                                    \
    extern "C" __global__ void __launch_bounds__(128, BLOCKS) msm_accumulate_##G##_b##BLOCKS(                      \
        const uint32_t* sorted, const uint32_t* offsets, uint32_t K, const uint32_t* bases, uint32_t T,             \
        uint32_t* buckets, uint32_t* partials) {                                                                    \
        MSM::template accumulate<false>(sorted, offsets, K, bases, T, buckets, partials, 0);                        \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(128, BLOCKS) msm_accumulate_sets_##G##_b##BLOCKS(                 \
        const uint32_t* sorted, const uint32_t* offsets, uint32_t K, const uint32_t* b0, const uint32_t* b1,        \
        const uint32_t* b2, uint32_t T, uint32_t* buckets, uint32_t* partials, uint32_t partial_words) {            \
        MSM::template accumulate<true>(sorted, offsets, K, msm_pick(blockIdx.y, b0, b1, b2), T, buckets, partials,  \
                                       partial_words);                                                              \
    }
#ifdef MSM_BOUNDED_VARIANTS
typedef msm_kernels<affine<fp2<fqr_t>>, xyzz<fp2<fqr_t>>> MSM2R;
extern "C" __global__ void __launch_bounds__(256, 1) msm_accumulate_g2r(
    const uint32_t* sorted, const uint32_t* offsets, uint32_t K, const uint32_t* bases, uint32_t T,
    uint32_t* buckets, uint32_t* partials) {
    MSM2R::template accumulate<false>(sorted, offsets, K, bases, T, buckets, partials, 0);
}
extern "C" __global__ void __launch_bounds__(256, 1) msm_accumulate_sets_g2r(
    const uint32_t* sorted, const uint32_t* offsets, uint32_t K, const uint32_t* b0, const uint32_t* b1,
    const uint32_t* b2, uint32_t T, uint32_t* buckets, uint32_t* partials, uint32_t partial_words) {
    MSM2R::template accumulate<true>(sorted, offsets, K, msm_pick(blockIdx.y, b0, b1, b2), T, buckets, partials,
                                     partial_words);
}
MSM_ACCUMULATE_BOUNDED(g1e, MSM1E, 3)
MSM_ACCUMULATE_BOUNDED(g1r, MSM1R, 5)
MSM_ACCUMULATE_BOUNDED(g1, MSM1, 5)
MSM_ACCUMULATE_BOUNDED(g2e, MSM2E, 3)
MSM_ACCUMULATE_BOUNDED(g2r, MSM2R, 3)
// The split G1 accumulation (184 registers: 2 blocks) under 3 blocks: 168 registers and 104 bytes of stack (session 42;
// not a default until the GPU tests have run it: msm_builds ACCUMULATE_BOUNDS {"g1": 3} selects it).
MSM_ACCUMULATE_BOUNDED(g1s, MSM1S, 3)
#else
// BN254's inlined G1 accumulation (msm.py "split_inline", 132 registers: 3 blocks of 128 an SM) bounded to 128
// registers, 4 blocks: more warps to hide its products' dependent chains (msm_builds ACCUMULATE_BOUNDS_BY_CURVE).
MSM_ACCUMULATE_BOUNDED(g1i, MSM1I, 4)
#endif

// ---- development setup: k_i * G for a table of the generator's byte multiples
extern "C" __global__ void __launch_bounds__(128) fixed_base_g1(const uint32_t* table, const uint32_t* scalars,
                                                                 uint32_t n, uint32_t* out) {
    fixed_base<g1_aff, g1_acc>(table, scalars, n, out);
}
extern "C" __global__ void __launch_bounds__(128) fixed_base_g2(const uint32_t* table, const uint32_t* scalars,
                                                                 uint32_t n, uint32_t* out) {
    fixed_base<g2_aff, g2_acc>(table, scalars, n, out);
}

// ---- the integer-rate ceiling for perf/ (design.md §9): independent 32-bit multiply-adds
extern "C" __global__ void perf_imad(uint32_t* out, uint32_t iters, uint32_t seed) {
    uint32_t a0 = seed + threadIdx.x, a1 = a0 ^ 0x9e3779b9u, a2 = a0 * 3u, a3 = a0 + 17u;
    uint32_t a4 = a0 * 5u, a5 = a0 ^ 0x85ebca6bu, a6 = a0 + 99u, a7 = a0 * 7u;
    const uint32_t m = seed | 1u, c = seed >> 3;
#pragma unroll 1
    for (uint32_t i = 0; i < iters; i++) {
#pragma unroll
        for (int j = 0; j < 16; j++) {
            a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;
            a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
}

// ---- field multiplication throughput, per implementation (perf/field_mul.py).  The second
// operand comes from memory (a twiddle-like constant per thread), so the compiler cannot
// specialise the product for known limbs.  variant 3: the Shoup product by a table constant
// (the NTT's twiddle product on SHOUP fields), its pair built from the loaded value; 4: x = x^2 and
// 5: x = x y - x w (one reduction where F's form has it), F's own forms (perf/field_fq.py).
template <class F, int variant>
__device__ __forceinline__ void perf_mul_chain(uint32_t* out, uint32_t iters, const uint32_t* ys) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    F x[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        x[k] = F::one();
        x[k].v[0] ^= i * 2654435761u + k;  // distinct, still < p (low word only)
    }
    const F y = F::load(ys + (uint64_t)(i & 1023) * F::N), y5 = F::load(ys + (uint64_t)((i + 5) & 1023) * F::N);
    F w = y, ws = y;
    if constexpr (variant == 3) y.shoup_pair(w, ws);
#pragma unroll 1
    for (uint32_t it = 0; it < iters; it++) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if constexpr (variant == 0) mont_ptx<8>::template mul<FR_P>(x[k].v, x[k].v, y.v);
            else if constexpr (variant == 1) mont_mul_c64<FR_P>(x[k].v, x[k].v, y.v);
            else if constexpr (variant == 2) mont_ptx<8>::template mul_wide<FR_P>(x[k].v, x[k].v, y.v);
            else if constexpr (variant == 3) x[k] = x[k].mul_shoup(w, ws);
            else if constexpr (variant == 4) x[k] = x[k].sqr();
            else x[k] = mul_sub(x[k], y, x[k], y5);  // curve.cuh: one reduction where F has it
        }
    }
    uint32_t acc = 0;
#pragma unroll
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < F::N; j++) acc ^= x[k].v[j];
    out[i] = acc;
}
extern "C" __global__ void perf_fr_mul_ptx(uint32_t* out, uint32_t iters, const uint32_t* ys) {
    perf_mul_chain<fr_t, 0>(out, iters, ys);
}
extern "C" __global__ void perf_fr_mul_c64(uint32_t* out, uint32_t iters, const uint32_t* ys) {
    perf_mul_chain<fr_t, 1>(out, iters, ys);
}
extern "C" __global__ void perf_fr_mul_wide(uint32_t* out, uint32_t iters, const uint32_t* ys) {
    perf_mul_chain<fr_t, 2>(out, iters, ys);
}
template <class F>
__device__ __forceinline__ void perf_shoup_chain(uint32_t* out, uint32_t iters, const uint32_t* ys) {
    if constexpr (F::SHOUP) perf_mul_chain<F, 3>(out, iters, ys);  // no Shoup products elsewhere
}
extern "C" __global__ void perf_fr_mul_shoup(uint32_t* out, uint32_t iters, const uint32_t* ys) {
    perf_shoup_chain<fr_t>(out, iters, ys);
}
extern "C" __global__ void fr_mul_c64_test(const uint32_t* a, const uint32_t* b, uint32_t n, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t x = fr_t::load(a + 8ull * i), y = fr_t::load(b + 8ull * i), z;
    mont_mul_c64<FR_P>(z.v, x.v, y.v);
    z.store(out + 8ull * i);
}

// The base field's split form (field.cuh by_value_split: a squaring split into a^2 and REDC, a b - c d
// with one reduction) against the even/odd product: a test kernel, and throughput chains as
// perf_mul_chain's (4 a thread), perf/field_fq.py.
extern "C" __global__ void fq_split_test(const uint32_t* a, const uint32_t* b, uint32_t n, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint32_t W = fqs_t::N;
    const fqs_t x = fqs_t::load(a + (uint64_t)W * i), y = fqs_t::load(b + (uint64_t)W * i);
    const fqs_t z = fqs_t::load(a + (uint64_t)W * ((i + 1) % n)), w = fqs_t::load(b + (uint64_t)W * ((i + 7) % n));
    uint32_t* o = out + 3ull * W * i;
    (x * y).store(o);                         // a b / R
    x.sqr().store(o + W);                     // a^2 / R
    fqs_t::mul_sub(x, y, z, w).store(o + 2 * W);  // (x y - z w) / R
}
// The Fq2 product over the split form (two reductions: c0 = (w0 - w1) / R, c1 = (ws - (w0 + w1)) / R):
// element i of a and b (c0 then c1) to out[i].
extern "C" __global__ void fq2_split_test(const uint32_t* a, const uint32_t* b, uint32_t n, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    typedef fp2<fqs_t> f2;
    (f2::load(a + (uint64_t)f2::WORDS * i) * f2::load(b + (uint64_t)f2::WORDS * i)).store(out + (uint64_t)f2::WORDS * i);
}
#define PERF_FQ(NAME, F, OP) \
    extern "C" __global__ void NAME(uint32_t* out, uint32_t iters, const uint32_t* ys) { perf_mul_chain<F, OP>(out, iters, ys); }
PERF_FQ(perf_fq_sqr_eo, fqe_t, 4)
PERF_FQ(perf_fq_sqr_split, fqs_t, 4)
PERF_FQ(perf_fq_mulsub_eo, fqe_t, 5)
PERF_FQ(perf_fq_mulsub_split, fqs_t, 5)

extern "C" __global__ void fr_mul_eo_test(const uint32_t* a, const uint32_t* b, uint32_t n, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t::load(a + 8ull * i).mul_eo(fr_t::load(b + 8ull * i)).store(out + 8ull * i);
}

// ---- the epilogue and the pairing check (epilogue.cuh, pairing.cuh, groth16_check.cuh).
// The pairing's shape follows the base field: 8 limbs = BN254 (xi = 9 + u, D-type twist),
// 12 limbs = BLS12-381 (xi = 1 + u, M-type); engine/backends/gpu/verify.py checks the Curve.
// These chains are latency-bound (a handful of threads), not code-size-bound like the MSM's
// accumulation loop: they use the base field with its product inline (FQI_P, same constants),
// as even/odd chains (field.cuh product_traits): the tower's chains 12-15% shorter than with
// each curve's MSM-default product (perf/tower_probe.py; perf/RESULTS.md, "Session 28").
constexpr bool PAIRING_D_TWIST = FQ_P::N == 8;
struct FQI_P : FQ_P {
    static constexpr bool MUL_OUT_OF_LINE = false;
};
template <>
struct product_traits<FQI_P> {
    static constexpr bool by_value = false, even_odd = true, split = false, inlined = false;
};
typedef fp<FQI_P> fqi_t;
typedef affine<fqi_t> g1i_aff;
typedef xyzz<fqi_t> g1i_acc;
typedef affine<fp2<fqi_t>> g2i_aff;
typedef xyzz<fp2<fqi_t>> g2i_acc;
typedef pairing_ops<fp2g<fqi_t>, PAIRING_D_TWIST ? 9 : 1, PAIRING_D_TWIST> PAIR;
typedef groth16_check_ops<PAIR, g1i_aff, g2i_aff, G1_ENDO_P> CHECK;

extern "C" __global__ void __launch_bounds__(128) fb_table_g1(const uint32_t* point, uint32_t* out) {
    fb_table<g1i_aff, g1i_acc>(point, out);
}
extern "C" __global__ void __launch_bounds__(128) fb_table_g2(const uint32_t* point, uint32_t* out) {
    fb_table<g2i_aff, g2i_acc>(point, out);
}
typedef CHECK::tail_args tail_args;
// The lines of n G2 points (affine), point i's at out + i * n_lines * line words.  A warp
// a point (fp2_group.cuh's batches): launch 32n threads, at most 256 a block.
extern "C" __global__ void __launch_bounds__(256) g2_prepare(const uint32_t* consts, const uint32_t* points, uint32_t n,
                                                              uint32_t* out) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x, i = t >> 5;
    if (i >= n) return;
    const PAIR::consts k = PAIR::make_consts(consts);
    const g2i_aff q = g2i_aff::load(points + (uint64_t)i * g2i_aff::WORDS);
    uint32_t* dst = out + (uint64_t)i * k.n_lines() * PAIR::line::WORDS;
    const bool writer = (t & 31) == 0;
    PAIR::lines(k, PAIR::F2{q.x.c0, q.x.c1}, PAIR::F2{q.y.c0, q.y.c1}, fqi_t::one(), fqi_t::one(),
                [dst, writer](int li, const PAIR::line& l) {
        if (writer) l.store(dst + (uint64_t)li * PAIR::line::WORDS);
    });
}
// k_i * P_i (G1, affine in and out; tests of the epilogue's variable-base product).
extern "C" __global__ void g1_var_mul_test(const uint32_t* points, const uint32_t* scalars, uint32_t n, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const g1i_acc p = g1i_acc::from_affine(g1i_aff::load(points + (uint64_t)i * g1i_aff::WORDS));
    var_base_mul(p, scalars + 8ull * i).to_affine().store(out + (uint64_t)i * g1i_aff::WORDS);
}

// a_i^-1 in Fq by the tail's divsteps (`binary` != 0: the binary loop); tests of inverse.cuh.
extern "C" __global__ void fq_inverse_test(const uint32_t* a, uint32_t n, uint32_t binary, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fqi_t x = fqi_t::load(a + (uint64_t)i * fqi_t::N);
    (binary ? inverse_binary(x) : inverse_divsteps(x)).store(out + (uint64_t)i * fqi_t::N);
}

// ---- pairing values, tests and latency chains: one kernel, `op` picks the work (one copy of
// the pairing code for ptxas).  A warp an item (item = global thread / 32, n items):
//   op 0-8: an Fq12 operation on a[item], b[item] (Fq12s): 0 a b, 1 a^2, 2 cyclotomic a^2,
//     3 a^-1, 4-6 a^(q^1..3), 7 the final exponentiation, 8 a times the line (b's first three
//     Fq2 coefficients as ly yP, lx xP, lc);
//   op 9: pairing(a[item] G1, b[item] G2) (a key's e(alpha1, beta2); tests);
//   op 10, 11: b[item] a[item] by curve_warp.cuh (a: affine G1 / G2 points, b: 8-word scalars);
//   op 12: one batch of n <= BATCH_MAX Fq2 products a_j b_j (one warp);
//   op 14: one GLV half of the mid phase, (+-k) phi^e(a[item]) (b: 8 words an item, |k| then flags);
//   op 16 + m: latency chain m (perf/pairing_latency.py), n iterations, one warp: out[0..1]
//     cycles (clock64), out[2..3] nanoseconds (globaltimer).  m 0: base-field product inline,
//     1: out of line, 2: one Fq2 product (a lane group), 3: Fq12 product, 4: cyclotomic
//     squaring, 5: XYZZ doubling (G1, one thread's), 6: Fq12 squaring, 7: product by a line,
//     8: doubling step of the twist point with its line, 9: addition step, 10: a batch of ten
//     Fq2 products, 11: Miller loop with lines on the fly, 12: final exponentiation, 13: G1
//     doubling (curve_warp.cuh), 14: G1 addition (curve_warp.cuh), 15: binary inversion,
//     16: Miller loop on two warps (pairing.cuh: warp 1 makes the lines, warp 0 takes them),
//     17: final exponentiation on two warps (pairing.cuh's duo); 16 and 17: 64 threads; 18: the
//     divsteps inversion (inverse.cuh, the tail's).
//   op 13: pairing(a[item] G1, b[item] G2) with the two-warp Miller loop and final
//     exponentiation (the final phase's): a block of 64 threads an item.
// Outputs are stored by each warp's lane 0.  32 threads an item, at most 256 a block.
__device__ __forceinline__ void perf_chain(uint32_t* out, uint32_t iters, uint32_t mode, const uint32_t* consts) {
    uint64_t t0 = clock64(), g0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    uint32_t acc = 0;
    PAIR::F12 x = PAIR::F12::one(), y = PAIR::F12::one();
    y.c1.c0.c1.v[0] ^= 99u;
    PAIR::F2 u = PAIR::F2::one(), v = PAIR::F2::one();
    v.c1.v[0] ^= 777u;
    const PAIR::consts k = PAIR::make_consts(consts);
    if (mode <= 1) {
        fqi_t a = fqi_t::one(), b = fqi_t::one();
        b.v[0] ^= 12345u;
        for (uint32_t i = 0; i < iters; i++) a = mode == 0 ? fqi_t::mul_inline(a, b) : fqi_t::mul_out_of_line(a, b);
        acc = a.v[0];
    } else if (mode == 2) {
        for (uint32_t i = 0; i < iters; i++) u = u * v;
        acc = u.c0.v[0];
    } else if (mode == 3 || mode == 4 || mode == 6 || mode == 7) {
        for (uint32_t i = 0; i < iters; i++)
            x = mode == 3 ? x * y : mode == 4 ? x.cyc_sqr() : mode == 6 ? x.sqr()
                                                                 : PAIR::mul_scaled_line(x, {u, v, y.c1.c0});
        acc = x.c0.c0.c0.v[0];
    } else if (mode == 5 || mode == 13 || mode == 14) {
        g1i_acc p = g1i_acc::inf(), q;
        p.x = fqi_t::one(), p.y = fqi_t::one(), p.zz = fqi_t::one(), p.zzz = fqi_t::one();
        p.y.v[0] ^= 5u;
        q = p;
        q.x.v[0] ^= 3u;
        for (uint32_t i = 0; i < iters; i++) {
            if (mode == 5) p.dbl();
            else if (mode == 13) xyzz_warp<fqi_t>::dbl(p);
            else xyzz_warp<fqi_t>::add(p, q);
        }
        acc = p.x.v[0];
    } else if (mode == 8 || mode == 9) {
        const PAIR::F2 b3 = k.get(pairing_layout::B3);
        PAIR::tpoint T = {u, v, v, false};
        for (uint32_t i = 0; i < iters; i++) {
            const PAIR::line l = mode == 8 ? PAIR::dbl(T, b3, u.c0, v.c1) : PAIR::add(T, v, u, b3, u.c0, v.c1);
            acc ^= l.lc.c0.v[0];
        }
        acc ^= T.X.c0.v[0];
    } else if (mode == 10) {
        PAIR::batch bt;
        for (uint32_t i = 0; i < iters; i++) {
            for (int j = 0; j < 10; j++) bt.put(j, u, v);
            bt.run(10);
            u = bt.get(i % 10);
        }
        acc = u.c0.v[0];
    } else if (mode == 15 || mode == 18) {
        fqi_t a = fqi_t::one();
        a.v[0] ^= 12345u;
        for (uint32_t i = 0; i < iters; i++) a = (mode == 15 ? inverse_binary(a) : inverse_divsteps(a)) + fqi_t::one();
        acc = a.v[0];
    } else if (mode == 17) {
        uint32_t* duo = CHECK::pool();
        for (uint32_t i = 0; i < iters; i++) {
            if (threadIdx.x < 4) duo[threadIdx.x] = 0;
            __syncthreads();
            x = PAIR::final_exp(k, x * y, duo);
            __syncthreads();
        }
        acc = x.c0.c0.c0.v[0];
    } else if (mode == 16) {
        uint32_t* ring = CHECK::pool();
        for (uint32_t i = 0; i < iters; i++) {
            if (threadIdx.x == 0) ring[0] = ring[1] = ring[2] = 0;
            __syncthreads();
            if (threadIdx.x >= 32) PAIR::produce_lines(k, u.c0, v.c1, u, v, ring);
            else x = PAIR::consume_lines(k, ring) * x;
            __syncthreads();
        }
        acc = x.c0.c0.c0.v[0];
    } else {
        for (uint32_t i = 0; i < iters; i++)
            x = mode == 11 ? PAIR::miller_on_the_fly(k, u.c0, v.c1, u, v) * x : PAIR::final_exp(k, x * y);
        acc = x.c0.c0.c0.v[0];
    }
    uint64_t t1 = clock64(), g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    if (threadIdx.x == 0) {
        out[0] = (uint32_t)(t1 - t0), out[1] = (uint32_t)((t1 - t0) >> 32);
        out[2] = (uint32_t)(g1 - g0), out[3] = (uint32_t)((g1 - g0) >> 32);
        out[4] = acc;
    }
}
__device__ __forceinline__ void pairing_tools(const uint32_t* consts, const uint32_t* a, const uint32_t* b,
                                              uint32_t n, uint32_t op, uint32_t* out) {
    typedef PAIR::F12 F12;
    typedef PAIR::F2 F2;
    const uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const bool writer = (threadIdx.x & 31) == 0;
    if (op >= 16) {
        if (blockIdx.x == 0 && threadIdx.x < (op == 32 || op == 33 ? 64u : 32u)) perf_chain(out, n, op - 16, consts);
        return;
    }
    if (op == 13) {  // two warps a pair (the final phase's Miller loop), then the final exponentiation
        if (blockDim.x < 64 || threadIdx.x >= 64) return;  // (all of a block's threads take the same path)
        const uint32_t j = blockIdx.x;
        uint32_t *ring = CHECK::pool(), *duo = ring + PAIR::RING_WORDS;
        if (threadIdx.x < 4) ring[threadIdx.x] = duo[threadIdx.x] = 0;
        __syncthreads();
        if (j >= n) return;
        const PAIR::consts k = PAIR::make_consts(consts);
        const g1i_aff p = g1i_aff::load(a + (uint64_t)j * g1i_aff::WORDS);
        const g2i_aff q = g2i_aff::load(b + (uint64_t)j * g2i_aff::WORDS);
        if (threadIdx.x >= 32) {
            const bool inf = p.is_inf() || q.is_inf();
            PAIR::ring_post(ring, inf ? 2u : 1u);
            if (!inf) PAIR::produce_lines(k, p.x, p.y, F2{q.x.c0, q.x.c1}, F2{q.y.c0, q.y.c1}, ring);
            PAIR::final_exp(k, PAIR::duo_wait(duo), duo);
            return;
        }
        PAIR::ring_wait(ring);
        const F12 f = F2::peek(ring + 2) == 1u ? PAIR::consume_lines(k, ring) : F12::one();
        PAIR::duo_post(duo, f);
        const F12 r = PAIR::final_exp(k, f, duo);
        if (writer) r.store(out + (uint64_t)j * F12::WORDS);
        return;
    }
    if (op == 12) {
        if (i != 0) return;
        PAIR::batch bt;
        for (uint32_t j = 0; j < n; j++) bt.put(j, F2::load(a + j * F2::WORDS), F2::load(b + j * F2::WORDS));
        bt.run(n);
        for (uint32_t j = 0; j < n; j++) {
            const F2 r = bt.get(j);
            if (writer) r.store(out + j * F2::WORDS);
        }
        return;
    }
    if (i >= n) return;
    const PAIR::consts k = PAIR::make_consts(consts);
    if (op == 10) {
        const g1i_acc p = g1i_acc::from_affine(g1i_aff::load(a + (uint64_t)i * g1i_aff::WORDS));
        const g1i_aff r = tail_affine(xyzz_warp<fqi_t>::var_base_mul(p, b + 8ull * i));
        if (writer) r.store(out + (uint64_t)i * g1i_aff::WORDS);
        return;
    }
    if (op == 14) {  // one GLV half (the mid phase's): b holds 8 words an item, |k| (4), flags (bit 0 phi, 1 -)
        const g1i_acc p = g1i_acc::from_affine(g1i_aff::load(a + (uint64_t)i * g1i_aff::WORDS));
        const uint32_t* k = b + 8ull * i;
        const g1i_aff r = tail_affine(xyzz_warp<fqi_t>::glv_half_mul(p, k, (k[4] & 1u) != 0, (k[4] & 2u) != 0,
                                                                     CHECK::beta()));
        if (writer) r.store(out + (uint64_t)i * g1i_aff::WORDS);
        return;
    }
    if (op == 11) {
        const g2i_acc p = g2i_acc::from_affine(g2i_aff::load(a + (uint64_t)i * g2i_aff::WORDS));
        const g2i_aff r = tail_affine(xyzz_warp<fp2<fqi_t>>::var_base_mul(p, b + 8ull * i));
        if (writer) r.store(out + (uint64_t)i * g2i_aff::WORDS);
        return;
    }
    F12 r;
    if (op == 9) {
        r = CHECK::pair_fly(k, g1i_aff::load(a + (uint64_t)i * g1i_aff::WORDS),
                            g2i_aff::load(b + (uint64_t)i * g2i_aff::WORDS));
        r = PAIR::final_exp(k, r);
    } else {
        const F12 x = F12::load(a + (uint64_t)i * F12::WORDS), y = F12::load(b + (uint64_t)i * F12::WORDS);
        if (op == 0) r = x * y;
        else if (op == 1) r = x.sqr();
        else if (op == 2) r = x.cyc_sqr();
        else if (op == 3) r = x.inverse();
        else if (op <= 6) r = PAIR::frob(k, x, (int)op - 3);
        else if (op == 7) r = PAIR::final_exp(k, x);
        else r = PAIR::mul_scaled_line(x, {y.c0.c0, y.c0.c1, y.c0.c2});
    }
    if (writer) r.store(out + (uint64_t)i * F12::WORDS);
}

// Everything that runs the pairing code, as one kernel: ptxas compiles that code once a
// kernel, so one kernel keeps the build's time (not one copy for each phase, the batched
// check and the tools).  The arguments by op (engine/backends/gpu/epilogue.py launches it):
//   op 0, 1, 2: the proof's tail, phase early (128 threads), mid (128), final (192); op 4 the mid
//     phase's products only, op 5 its join (pi_a, pi_c) only (a small proof's: launch.py), op 6 the
//     join after the products came from MSMs (s A in the scratch, r B1 in B1's slot: launch.py); op 9
//     pi_b alone (32), op 10 the final phase with pi_b made by op 9 (192)
//     (groth16_check.cuh): p1 results, p2 witness, p3 tables, p4 points, p5 gamma lines,
//     p6 delta lines, p7 target; u1 slot words, u2 wires, u3 public inputs; a grid of k blocks runs
//     the phase of k proofs, block j's results and witness at p1 + j u4 and p2 + j u5 words
//     (engine/backends/gpu/batch.py; one block: u4 = u5 = 0);
//   op 3: the batched check of u1 proofs (64 to 256 threads): p1 proofs, p2 rho, p3 IC points,
//     p4 IC scalars, p5 alpha1's table, p6-p8 beta, gamma, delta lines, p9 work, p10 flag;
//     u2 IC scalars;
//   op 16 + t: pairing_tools' op t on p1, p2 (u1 items), output p10.
extern "C" __global__ void __launch_bounds__(256) groth16_pairing(
    uint32_t op, const uint32_t* consts, const uint32_t* p1, const uint32_t* p2, const uint32_t* p3,
    const uint32_t* p4, const uint32_t* p5, const uint32_t* p6, const uint32_t* p7, const uint32_t* p8, uint32_t* p9,
    uint32_t* p10, uint32_t u1, uint32_t u2, uint32_t u3, uint32_t u4, uint32_t u5) {
    if (op <= 2 || op == 4 || op == 5 || op == 6 || op == 9 || op == 10) {  // block j: proof j of a batch, its results at p1 + j u4, its witness at p2 + j u5
        const uint64_t j = blockIdx.x;
        const tail_args a{consts, const_cast<uint32_t*>(p1) + j * u4, u1, p2 + j * u5, u2, u3, p3, p4, p5, p6, p7};
        if (op == 0) CHECK::tail_early(a);
        else if (op == 1 || op == 4) CHECK::tail_mid(a, op == 1);
        else if (op == 5 || op == 6) CHECK::tail_join(a, op == 6);
        else if (op == 9) CHECK::tail_pi_b(a);
        else if (op == 2 || op == 10) CHECK::tail_final(a, op == 10);
    } else if (op == 3) {
        CHECK::batch_check(consts, p1, p2, u1, p3, p4, u2, p5, p6, p7, p8, p9, p10);
    } else if (op >= 16) {
        pairing_tools(consts, p1, p2, u1, op - 16, p10);
    }
}
