// Inversion for the proof's tail: the binary extended Euclidean algorithm on the limbs,
// and the affine form of XYZZ points through it.
//
// field.cuh's Fermat inversion is a chain of about 1.5 log2 p dependent Montgomery
// products (BN254: ~380 x 1100 cycles, 0.2 ms; BLS12-381: ~570 x 2700 cycles, 0.8 ms), and
// the tail has four inversions on its critical path (L, pi_c, pi_b, the final
// exponentiation).  The binary algorithm takes about 2 log2 p steps of shifts, additions and
// subtractions of N limbs instead.  It is variable-time: what the tail inverts is made from
// the proof's own points (public once the proof is out) and runs beside kernels whose
// timing already follows the witness.
// __host__ __device__-clean: tests check it with g++ over tests/host/host_field.hpp.
#pragma once
#include "curve.cuh"

// x^-1 for x in Montgomery form (0 gives 0).  With X the limbs' integer (x R), the loop keeps
// b X = u and c X = v (mod p), from (u, b) = (X, 1) and (v, c) = (p, 0), until u or v is 1;
// then X^-1 R^2 = (x / R)^-1 R is the Montgomery product of X^-1 by R^3 = R2 R2 / R.
// (FP<P>: field.cuh's fp, or the tests' host_fp: P is the field's constants.)
template <template <class> class FP, class P>
__device__ __noinline__ FP<P> inverse_binary(const FP<P> x) {
    typedef FP<P> F;
    constexpr int N = F::N;
    if (x.is_zero()) return x;
    F u = x, v, b = F::zero(), c = F::zero();
#pragma unroll
    for (int j = 0; j < N; j++) v.v[j] = P::MOD[j];
    b.v[0] = 1;
    auto is_one = [](const F& a) {
        uint32_t t = a.v[0] ^ 1u;
#pragma unroll
        for (int j = 1; j < N; j++) t |= a.v[j];
        return t == 0;
    };
    // a / 2 mod p for a < p: (a + p) / 2 when a is odd (p < 2^(32N-1): no carry out).
    auto halve = [](F& a) {
        uint32_t carry = 0;
        if (a.v[0] & 1u) {
            uint64_t s = 0;
#pragma unroll
            for (int j = 0; j < N; j++) {
                s += (uint64_t)a.v[j] + P::MOD[j];
                a.v[j] = (uint32_t)s;
                s >>= 32;
            }
            carry = (uint32_t)s;
        }
#pragma unroll
        for (int j = 0; j < N - 1; j++) a.v[j] = (a.v[j] >> 1) | (a.v[j + 1] << 31);
        a.v[N - 1] = (a.v[N - 1] >> 1) | (carry << 31);
    };
    auto shift = [](F& a) {
#pragma unroll
        for (int j = 0; j < N - 1; j++) a.v[j] = (a.v[j] >> 1) | (a.v[j + 1] << 31);
        a.v[N - 1] >>= 1;
    };
    auto geq = [](const F& a, const F& b2) {
        bool ge = true, decided = false;
#pragma unroll
        for (int j = N - 1; j >= 0; j--) {
            if (!decided && a.v[j] != b2.v[j]) {
                ge = a.v[j] > b2.v[j];
                decided = true;
            }
        }
        return ge;
    };
    auto sub_limbs = [](F& a, const F& b2) {  // a -= b2, a >= b2
        long long br = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            const long long d = (long long)a.v[j] - (long long)b2.v[j] + br;
            a.v[j] = (uint32_t)d;
            br = d >> 32;
        }
    };
#pragma unroll 1
    while (!is_one(u) && !is_one(v)) {
#pragma unroll 1
        while (!(u.v[0] & 1u)) shift(u), halve(b);
#pragma unroll 1
        while (!(v.v[0] & 1u)) shift(v), halve(c);
        if (geq(u, v)) {
            sub_limbs(u, v);
            b = b - c;
        } else {
            sub_limbs(v, u);
            c = c - b;
        }
    }
    F r2 = F::zero();
#pragma unroll
    for (int j = 0; j < N; j++) r2.v[j] = P::R2[j];
    return (is_one(u) ? b : c) * (r2 * r2);
}

// The tail's inverses: Fq directly, Fq2 (field.cuh's fp2) through the norm c0^2 + c1^2.
template <class F>
__device__ __forceinline__ F tail_inverse(const F& x) {
    return inverse_binary(x);
}
template <class F>
__device__ __forceinline__ fp2<F> tail_inverse(const fp2<F>& x) {
    const F t = inverse_binary(x.c0 * x.c0 + x.c1 * x.c1);
    return {x.c0 * t, (x.c1 * t).neg()};
}

// curve.cuh's to_affine with the binary inversion.
template <class F>
__device__ __forceinline__ affine<F> tail_affine(const xyzz<F>& p) {
    if (p.is_inf()) return {F::zero(), F::zero()};
    const F zzz_inv = tail_inverse(p.zzz);
    const F zinv = p.zz * zzz_inv;
    return {p.x * (zinv * zinv), p.y * zzz_inv};
}
