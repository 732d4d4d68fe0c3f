// Fq2 for the pairing, computed by a group of four lanes at once (lanes 4g .. 4g+3 of a warp).
//
// A pairing is a long chain of dependent Fq2 products; one thread doing it alone waits on
// every Montgomery product in turn.  Here the four lanes of a group hold the same values
// (every addition is done by all of them, which costs nothing extra: they run in lockstep),
// and each Fq2 product is split: lane 0 forms a0 b0, lane 1 a1 b1, lanes 2 and 3
// (a0 + a1)(b0 + b1), and three shuffles give every lane all three.  The chain then waits
// on one base-field product per Fq2 product instead of three.  Every lane of a group must
// run the same code on the same values (the tower's branches depend only on those values,
// so they agree); lanes of other groups are free to do other work.
// On the host (tests) the product is the plain Karatsuba one.
#pragma once
#include "field.cuh"

template <class F>
struct fp2g {
    F c0, c1;
    static constexpr int WORDS = 2 * F::WORDS;

    static __device__ __forceinline__ fp2g zero() { return {F::zero(), F::zero()}; }
    static __device__ __forceinline__ fp2g one() { return {F::one(), F::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const fp2g& o) const { return c0 == o.c0 && c1 == o.c1; }
    __device__ __forceinline__ bool operator!=(const fp2g& o) const { return !(*this == o); }
    friend __device__ __forceinline__ fp2g operator+(const fp2g& a, const fp2g& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
    friend __device__ __forceinline__ fp2g operator-(const fp2g& a, const fp2g& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
    __device__ __forceinline__ fp2g dbl() const { return *this + *this; }
    __device__ __forceinline__ fp2g neg() const { return {c0.neg(), c1.neg()}; }

    // The three Karatsuba products x0 y0, x1 y1, (x0 + x1)(y0 + y1), one per lane, shared.
    static __device__ __forceinline__ void products(const F& x0, const F& x1, const F& y0, const F& y1, F& p0, F& p1,
                                                    F& p2) {
#ifdef __CUDA_ARCH__
        const uint32_t lane = threadIdx.x & 31, l = lane & 3, base = lane & ~3u;
        const unsigned mask = 0xFu << base;
        const F sx = x0 + x1, sy = y0 + y1;
        F x, y;
#pragma unroll
        for (int j = 0; j < F::N; j++) {
            x.v[j] = l == 0 ? x0.v[j] : l == 1 ? x1.v[j] : sx.v[j];
            y.v[j] = l == 0 ? y0.v[j] : l == 1 ? y1.v[j] : sy.v[j];
        }
        const F p = F::mul_inline(x, y);  // one product, inline: no call in the chain's one wait
#pragma unroll
        for (int j = 0; j < F::N; j++) {
            p0.v[j] = __shfl_sync(mask, p.v[j], base);
            p1.v[j] = __shfl_sync(mask, p.v[j], base + 1);
            p2.v[j] = __shfl_sync(mask, p.v[j], base + 2);
        }
#else
        p0 = x0 * y0, p1 = x1 * y1, p2 = (x0 + x1) * (y0 + y1);
#endif
    }
    // Operands by value (registers), not by reference (which would put them in local memory).
    friend __device__ __noinline__ fp2g operator*(fp2g a, fp2g b) {
        F p0, p1, p2;
        products(a.c0, a.c1, b.c0, b.c1, p0, p1, p2);
        return {p0 - p1, p2 - p0 - p1};
    }
    // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: lane 0 forms c0 c1, lane 1 the other
    // product (lanes 2 and 3 form one that is not used: the wait is the same).
    __device__ __noinline__ fp2g sqr() const {
        F p0, p1, p2;
        products(c0, c0 + c1, c1, c0 - c1, p0, p1, p2);
        return {p1, p0.dbl()};
    }
    __device__ fp2g inverse() const {
        F t = (c0.sqr() + c1.sqr()).inverse();
        return {c0 * t, (c1 * t).neg()};
    }
    static __device__ __forceinline__ fp2g load(const uint32_t* p) { return {F::load(p), F::load(p + F::WORDS)}; }
    __device__ __forceinline__ void store(uint32_t* p) const {
        c0.store(p);
        c1.store(p + F::WORDS);
    }
};
