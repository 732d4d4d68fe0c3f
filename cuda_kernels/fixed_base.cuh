// Fixed-base scalar multiplication k_i * G for many scalars (development key setup).
// The table holds d * 2^(8w) * G for every byte value d and byte position w (32 x 256
// affine points, d = 0 the point at infinity), so k * G is at most 32 mixed additions.
#pragma once
#include "curve.cuh"

// k * P from P's table (row w*256 + d = d * 2^(8w) * P), k 8 words little-endian: one mixed
// addition per non-zero byte.  Also the epilogue's products by key points (epilogue.cuh).
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

template <class Aff, class Acc>
__device__ __forceinline__ void fixed_base(const uint32_t* table, const uint32_t* scalars, uint32_t n, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint4* q = reinterpret_cast<const uint4*>(scalars + 8ull * i);
    const uint4 lo = q[0], hi = q[1];
    const uint32_t s[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    fixed_base_mul<Aff, Acc>(table, s).to_affine().store(out + (uint64_t)i * Aff::WORDS);
}
