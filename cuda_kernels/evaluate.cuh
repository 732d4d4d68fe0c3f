// The sparse products A·w and B·w of the zkey's coeffs section, and the pointwise steps
// around the NTTs.  Coefficients are stored as c·R^2 mod r (spec §4.4), i.e. the Montgomery
// form of c·R, so one Montgomery product with a *plain* witness value gives the Montgomery
// form of c·w: the witness is used exactly as uploaded.
#pragma once
#include "field.cuh"

template <class F>
struct eval_kernels {
    // One thread per row of the domain: a = A_row·w, b = B_row·w, c = a∘b (Montgomery).
    // CSR over all n rows (rows past the constraints are empty).
    static __device__ __forceinline__ void evaluate(const uint32_t* rp_a, const uint32_t* wire_a, const uint32_t* coef_a,
                                                    const uint32_t* rp_b, const uint32_t* wire_b, const uint32_t* coef_b,
                                                    const uint32_t* w, uint32_t n, uint32_t* a_out, uint32_t* b_out,
                                                    uint32_t* c_out) {
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        F a = F::zero(), b = F::zero();
        for (uint32_t k = rp_a[i], e = rp_a[i + 1]; k < e; k++)
            a += F::load_ro(coef_a + (uint64_t)k * F::N) * F::load_ro(w + (uint64_t)wire_a[k] * F::N);
        for (uint32_t k = rp_b[i], e = rp_b[i + 1]; k < e; k++)
            b += F::load_ro(coef_b + (uint64_t)k * F::N) * F::load_ro(w + (uint64_t)wire_b[k] * F::N);
        a.store(a_out + (uint64_t)i * F::N);
        b.store(b_out + (uint64_t)i * F::N);
        (a * b).store(c_out + (uint64_t)i * F::N);
    }

    // h = a·b - c on the coset, converted to plain for the MSM (spec §5.1 step 5).
    static __device__ __forceinline__ void quotient(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t n,
                                                    uint32_t* h) {
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        const uint64_t o = (uint64_t)i * F::N;
        F x = F::load(a + o) * F::load(b + o) - F::load(c + o);
        x.from_mont().store(h + o);
    }

    static __device__ __forceinline__ void convert(uint32_t* x, uint32_t n, bool to) {
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        F v = F::load(x + (uint64_t)i * F::N);
        (to ? v.to_mont() : v.from_mont()).store(x + (uint64_t)i * F::N);
    }
};

// The witness's range check, on the device after its upload (the host skips its own pass over
// the witness: 2.8 ms at 2^20 on the H200's host, perf/RESULTS.md): a plain value w_i >= the
// modulus P::MOD leaves 0xFFFFFFFF - i in *found by atomicMax, so *found names the first such
// row and 0 (its initial value) none.  Words compared from the top down; n < 0xFFFFFFFF.
template <class P>
static __device__ __forceinline__ void first_unreduced(const uint32_t* w, uint32_t n, uint32_t* found) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint32_t* x = w + (uint64_t)i * P::N;
    int k = P::N - 1;
    while (k > 0 && x[k] == P::MOD[k]) k--;
    if (x[k] >= P::MOD[k]) atomicMax(found, 0xFFFFFFFFu - i);
}
