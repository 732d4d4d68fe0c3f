// A batch's front in one launch set (engine/backends/gpu/batch.py): k proofs of one key, their vectors side by
// side (proof y = blockIdx.y at y * n elements, its witness at y * w_stride words), each entry the
// single proof's kernel on proof y's slice.  k fronts one after another were 14k launches of n/256
// blocks or fewer (32 at the 2^13 domain on 132 SMs), bound by the host's launch rate
// (perf/RESULTS.md, h13tput); these are 14 launches of k times the blocks.  Included by kernels.cu
// after ntt_entry.cuh (NTT, EVAL and NTT_MIN_BLOCKS defined).
#pragma once

extern "C" __global__ void __launch_bounds__(256) evaluate_ab_batch(
    const uint32_t* rp_a, const uint32_t* wire_a, const uint32_t* coef_a, const uint32_t* rp_b,
    const uint32_t* wire_b, const uint32_t* coef_b, const uint32_t* w, uint32_t w_stride, uint32_t n, uint32_t* a,
    uint32_t* b, uint32_t* c) {
    const uint64_t o = (uint64_t)blockIdx.y * n * fr_t::N;
    EVAL::evaluate(rp_a, wire_a, coef_a, rp_b, wire_b, coef_b, w + (uint64_t)blockIdx.y * w_stride, n, a + o, b + o,
                   c + o);
}
extern "C" __global__ void __launch_bounds__(256) quotient_h_batch(const uint32_t* a, const uint32_t* b,
                                                                    const uint32_t* c, uint32_t n, uint32_t* h) {
    const uint64_t o = (uint64_t)blockIdx.y * n * fr_t::N;
    EVAL::quotient(a + o, b + o, c + o, n, h + o);
}
extern "C" __global__ void __launch_bounds__(256, NTT_MIN_BLOCKS) ntt_dif_pass_batch(
    uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t l0, uint32_t b, const uint32_t* scale) {
    extern __shared__ uint32_t shm[];
    NTT::pass(true, data + ((uint64_t)blockIdx.y << k) * fr_t::N, tw, k, l0, b, scale, shm);
}
extern "C" __global__ void __launch_bounds__(256, NTT_MIN_BLOCKS) ntt_dit_pass_batch(
    uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t s0, uint32_t b) {
    extern __shared__ uint32_t shm[];
    NTT::pass(false, data + ((uint64_t)blockIdx.y << k) * fr_t::N, tw, k, s0, b, nullptr, shm);
}
