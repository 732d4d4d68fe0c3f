// Montgomery multiplication written in plain C++ with 64-bit intermediates (CIOS), for
// comparison with the PTX carry chains of mont_ptx.cuh (perf/field_mul.py measures both;
// the field uses whichever is faster on the target).
#pragma once

template <class P>
__device__ __forceinline__ void mont_mul_c64(uint32_t* r, const uint32_t* a, const uint32_t* b) {
    constexpr int N = P::N;
    uint32_t t[N + 1];
#pragma unroll
    for (int j = 0; j <= N; j++) t[j] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        uint64_t c = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            const uint64_t s = (uint64_t)a[j] * b[i] + t[j] + c;
            t[j] = (uint32_t)s;
            c = s >> 32;
        }
        const uint64_t top = (uint64_t)t[N] + c;  // < 2^33 never overflows N+1 words (p < 2^(32N-1))
        const uint32_t m = t[0] * P::INV;
        c = ((uint64_t)m * P::MOD[0] + t[0]) >> 32;
#pragma unroll
        for (int j = 1; j < N; j++) {
            const uint64_t s = (uint64_t)m * P::MOD[j] + t[j] + c;
            t[j - 1] = (uint32_t)s;
            c = s >> 32;
        }
        const uint64_t s = (top & 0xffffffffu) + c;
        t[N - 1] = (uint32_t)s;
        t[N] = (uint32_t)(top >> 32) + (uint32_t)(s >> 32);
    }
    // t < 2p: subtract p once if t >= p
    uint32_t d[N];
    uint64_t borrow = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        const uint64_t x = (uint64_t)t[j] - P::MOD[j] - borrow;
        d[j] = (uint32_t)x;
        borrow = (x >> 32) & 1;
    }
    const bool keep = borrow > (uint64_t)t[N];  // t < p
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = keep ? t[j] : d[j];
}
