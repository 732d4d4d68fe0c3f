// The Groth16 epilogue on the device (spec §5.1 step 7) and the scalar multiplications it uses.
//
//   pi_a = alpha1 + A + r delta1
//   pi_b = beta2 + B2 + s delta2
//   pi_c = C + H + s pi_a + r (beta1 + B1) = C + H + s alpha1 + s A + (rs) delta1 + r beta1 + r B1
//   L    = IC_0 + sum_i pub_i IC_i   (the verifier's public-input point)
//
// The rs delta1 terms of snarkjs's formula cancel (see engine/groth16/prover.py).  Products
// by key points (delta1, alpha1, beta1, delta2) use per-key tables of byte multiples (32
// mixed additions each); the products by A and B1 (this proof's MSM results) and by the IC
// points are windowed double-and-add.  Each product runs on its own thread, all at once;
// then four threads sum and convert pi_a, pi_b, pi_c and L to affine form.
#pragma once
#include "curve.cuh"

// Byte-table layout: row w*256 + d holds d * 2^(8w) * P (d = 0: infinity), affine.
constexpr int FB_ROWS = 32 * 256;

template <class Aff, class Acc>
__device__ __forceinline__ Acc fixed_base_mul(const uint32_t* table, const uint32_t* k) {
    Acc acc = Acc::inf();
#pragma unroll 1
    for (uint32_t w = 0; w < 32; w++) {
        const uint32_t d = (k[w >> 2] >> (8 * (w & 3))) & 0xffu;
        if (d) acc.add(Aff::load_ro(table + ((uint64_t)w * 256 + d) * Aff::WORDS));
    }
    return acc;
}

// k * P for an 8-word (256-bit) little-endian scalar k: 4-bit windows from the top.
template <class Acc>
__device__ __noinline__ Acc var_base_mul(const Acc& p, const uint32_t* k) {
    Acc tab[16];
    tab[0] = Acc::inf();
    tab[1] = p;
#pragma unroll 1
    for (int i = 2; i < 16; i++) {
        tab[i] = tab[i - 1];
        tab[i].add(p);
    }
    Acc acc = Acc::inf();
#pragma unroll 1
    for (int nib = 63; nib >= 0; nib--) {
        acc.dbl();
        acc.dbl();
        acc.dbl();
        acc.dbl();
        const uint32_t d = (k[nib >> 3] >> (4 * (nib & 7))) & 15u;
        if (d) acc.add(tab[d]);
    }
    return acc;
}

// The table of byte multiples of one affine point: thread t makes row t.
template <class Aff, class Acc>
__device__ __forceinline__ void fb_table(const uint32_t* point, uint32_t* out) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= FB_ROWS) return;
    const uint32_t w = t >> 8, d = t & 255u;
    uint32_t k[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    k[w >> 2] = d << (8 * (w & 3));
    const Acc p = Acc::from_affine(Aff::load(point));
    var_base_mul(p, k).to_affine().store(out + (uint64_t)t * Aff::WORDS);
}

// Everything the epilogue reads, in device memory.  `results` holds the five MSM sums
// (XYZZ, slots of `slot_words`: A, B1, B2, C, H); `witness` the plain witness (8 words a
// value) followed by r, s and rs mod r.
struct epilogue_args {
    const uint32_t* results;
    uint32_t slot_words;
    const uint32_t* witness;
    uint32_t n_wires;
    uint32_t n_public;
    const uint32_t* tables;  // byte tables of delta1, alpha1, beta1 (G1), then delta2 (G2)
    const uint32_t* points;  // alpha1, beta1 (G1 affine), beta2 (G2 affine), IC_0..IC_n (G1 affine)
    uint32_t* out;           // pi_a, pi_b, pi_c, L: affine, Montgomery
};

// One block of 128 threads.  Warp 0: the four G1 table products; warp 1: the G2 one;
// warps 2-3: s A, r B1 and the IC products.  Then threads 0, 32, 64, 96 finish pi_a, pi_b,
// pi_c and L.
template <class A1, class X1, class A2, class X2>
__device__ __forceinline__ void groth16_epilogue(const epilogue_args& a) {
    constexpr int W1 = A1::WORDS, W2 = A2::WORDS;
    __shared__ uint32_t fixed1[4][X1::WORDS];
    __shared__ uint32_t fixed2[X2::WORDS];
    __shared__ uint32_t var_c[64][X1::WORDS];  // s A and r B1 (lanes 0, 1 of warps 2-3)
    __shared__ uint32_t var_l[64][X1::WORDS];  // the IC products
    const uint32_t tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const uint32_t* r = a.witness + 8ull * a.n_wires;
    const uint32_t *s = r + 8, *rs = r + 16;
    const uint32_t* tab1 = a.tables;
    const uint32_t* tab2 = a.tables + 3ull * FB_ROWS * W1;
    const uint32_t* ic = a.points + 2 * W1 + W2;
    if (warp == 0 && lane < 4) {
        // r delta1, s alpha1, rs delta1, r beta1
        const uint32_t* which_tab[4] = {tab1, tab1 + 1ull * FB_ROWS * W1, tab1, tab1 + 2ull * FB_ROWS * W1};
        const uint32_t* which_k[4] = {r, s, rs, r};
        fixed_base_mul<A1, X1>(which_tab[lane], which_k[lane]).store(fixed1[lane]);
    } else if (warp == 1 && lane == 0) {
        fixed_base_mul<A2, X2>(tab2, s).store(fixed2);
    } else if (warp >= 2) {
        const uint32_t v = tid - 64;
        X1 acc_c = X1::inf(), acc_l = X1::inf();
#pragma unroll 1
        for (uint32_t t = v; t < 2 + a.n_public; t += 64) {
            if (t < 2) {  // s A, r B1
                X1 p = X1::load(a.results + (uint64_t)t * a.slot_words);
                acc_c.add(var_base_mul(p, t == 0 ? s : r));
            } else {  // pub_i IC_i, i = t - 1
                const uint32_t i = t - 1;
                X1 p = X1::from_affine(A1::load(ic + (uint64_t)i * W1));
                acc_l.add(var_base_mul(p, a.witness + 8ull * i));
            }
        }
        acc_c.store(var_c[v]);
        acc_l.store(var_l[v]);
    }
    __syncthreads();
    if (tid == 0) {  // pi_a = alpha1 + A + r delta1
        X1 acc = X1::load(a.results);
        acc.add(A1::load(a.points));
        acc.add(X1::load(fixed1[0]));
        acc.to_affine().store(a.out);
    } else if (tid == 32) {  // pi_b = beta2 + B2 + s delta2
        X2 acc = X2::load(a.results + 2ull * a.slot_words);
        acc.add(A2::load(a.points + 2 * W1));
        acc.add(X2::load(fixed2));
        acc.to_affine().store(a.out + W1);
    } else if (tid == 64) {  // pi_c = C + H + s alpha1 + rs delta1 + r beta1 + s A + r B1
        X1 acc = X1::load(a.results + 3ull * a.slot_words);
        acc.add(X1::load(a.results + 4ull * a.slot_words));
        for (int i = 1; i < 4; i++) acc.add(X1::load(fixed1[i]));
        acc.add(X1::load(var_c[0]));
        acc.add(X1::load(var_c[1]));
        acc.to_affine().store(a.out + W1 + W2);
    } else if (tid == 96) {  // L = IC_0 + sum pub_i IC_i
        X1 acc = X1::from_affine(A1::load(ic));
        for (uint32_t v = 0; v < 64; v++) acc.add(X1::load(var_l[v]));  // unused lanes hold infinity
        acc.to_affine().store(a.out + 2 * W1 + W2);
    }
}
