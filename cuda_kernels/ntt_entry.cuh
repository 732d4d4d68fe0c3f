// The NTT's entry points (the passes, wide and narrow, and the table builders), over `NTT` = ntt_kernels<fr_t> (Shoup
// twiddles where the field allows them) and NTT_M = ntt_kernels<fr_t, false> (Montgomery twiddles: the
// `_m` kernels; engine/backends/gpu/ntt.py picks the form per curve and size): included by kernels.cu
// and by perf/ntt_ab.py's NTT-only builds, so both compile the same kernels.
#pragma once

#ifndef NTT_MIN_BLOCKS  // set by params.cuh (engine/backends/gpu/params.py)
#define NTT_MIN_BLOCKS 3
#endif
#ifndef NTT_MIN_BLOCKS_M
#define NTT_MIN_BLOCKS_M 4
#endif
typedef ntt_kernels<fr_t, false> NTT_M;

#define NTT_ENTRIES(SUFFIX, K, BLOCKS)                                                                            \
    extern "C" __global__ void __launch_bounds__(256, BLOCKS)                                                   \
        ntt_dif_pass##SUFFIX(uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t l0, uint32_t b,            \
                             const uint32_t* scale) {                                                          \
        extern __shared__ uint32_t shm[];                                                                      \
        K::pass(true, data, tw, k, l0, b, scale, shm);                                                         \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256, BLOCKS)                                                   \
        ntt_dit_pass##SUFFIX(uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t s0, uint32_t b) {          \
        extern __shared__ uint32_t shm[];                                                                      \
        K::pass(false, data, tw, k, s0, b, nullptr, shm);                                                      \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                        \
        ntt_dif_narrow##SUFFIX(uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t l0, uint32_t b,          \
                               const uint32_t* scale) {                                                        \
        extern __shared__ uint32_t shm[];                                                                      \
        K::pass_narrow(true, data, tw, k, l0, b, scale, shm);                                                  \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                        \
        ntt_dit_narrow##SUFFIX(uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t s0, uint32_t b) {        \
        extern __shared__ uint32_t shm[];                                                                      \
        K::pass_narrow(false, data, tw, k, s0, b, nullptr, shm);                                               \
    }                                                                                                          \
    extern "C" __global__ void fr_twiddles##SUFFIX(uint32_t* out, const uint32_t* base, uint32_t n) {           \
        K::twiddles(out, base, n);                                                                             \
    }
NTT_ENTRIES(, NTT, NTT_MIN_BLOCKS)
NTT_ENTRIES(_m, NTT_M, NTT_MIN_BLOCKS_M)
#undef NTT_ENTRIES

extern "C" __global__ void fr_powers(uint32_t* out, const uint32_t* base, const uint32_t* scale, uint32_t n) {
    NTT::powers(out, base, scale, n);
}
