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
// points are windowed double-and-add.  Each product runs on its own thread.  The phases
// that assemble the proof and run its pairing check are in groth16_check.cuh, where the
// pipeline's streams overlap them with the MSMs they do not depend on.
#pragma once
#include "curve.cuh"
#include "fixed_base.cuh"

constexpr int FB_ROWS = 32 * 256;  // rows of a byte table (fixed_base.cuh's layout)

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

