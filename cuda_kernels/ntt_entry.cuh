// The NTT's entry points (the passes and the table builders), over `NTT` = ntt_kernels<fr_t>:
// included by kernels.cu and by perf/ntt_ab.py's NTT-only builds, so both compile the same kernels.
#pragma once

#ifndef NTT_MIN_BLOCKS  // set by params.cuh (engine/backends/gpu/params.py)
#define NTT_MIN_BLOCKS 4
#endif
extern "C" __global__ void __launch_bounds__(256, NTT_MIN_BLOCKS)
    ntt_dif_pass(uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t l0, uint32_t b, const uint32_t* scale) {
    extern __shared__ uint32_t shm[];
    NTT::pass(true, data, tw, k, l0, b, scale, shm);
}
extern "C" __global__ void __launch_bounds__(256, NTT_MIN_BLOCKS)
    ntt_dit_pass(uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t s0, uint32_t b) {
    extern __shared__ uint32_t shm[];
    NTT::pass(false, data, tw, k, s0, b, nullptr, shm);
}
extern "C" __global__ void fr_twiddles(uint32_t* out, const uint32_t* base, uint32_t n) {
    NTT::twiddles(out, base, n);
}
extern "C" __global__ void fr_powers(uint32_t* out, const uint32_t* base, const uint32_t* scale, uint32_t n) {
    NTT::powers(out, base, scale, n);
}
