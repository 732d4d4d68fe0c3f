// Inversion for the proof's tail: Bernstein and Yang's divsteps (the tail's, inverse_divsteps:
// 52k cycles for BN254's Fq, 86k for BLS12-381's, on the H200) and the binary extended
// Euclidean algorithm before them (139k, 294k; kept for the tests), and the affine form of XYZZ
// points through the divsteps (perf/pairing_latency.py; perf/RESULTS.md, "Session 28").
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

// x^-1 for x in Montgomery form (0 gives 0) by Bernstein and Yang's divsteps, thirty at a time.
// The binary loop above spends ~275 cycles a step on shifts and subtractions of N limbs (140k
// cycles for BN254's Fq: ~70 us on the tail's chain, three times a proof).  Here a step touches
// only the low word of f and g (the first k divsteps depend on their low k bits alone) and a 2x2
// matrix; every thirtieth step the matrix is applied once to the whole f, g and to their
// cofactors d, e.  Invariants (X the limbs' integer, M = p): f = d X, g = e X (mod M), f odd;
// from (f, g, d, e) = (M, X, 0, 1) until g = 0, when f = +-1 and X^-1 = +-d.  The wide values
// are signed, in 30-bit limbs (the top limb signed), so that the matrix's products (|u|, |v| <= 2^30)
// sum in 64 bits and the division by 2^30 drops a limb.  Variable-time, as the binary loop is.
template <template <class> class FP, class P>
__device__ __noinline__ FP<P> inverse_divsteps(const FP<P> x) {
    typedef FP<P> F;
    constexpr int N = F::N;
    constexpr int L = (32 * N + 29) / 30;  // 9 limbs for 8 words, 13 for 12: room for 3M, signed
    constexpr uint32_t MASK = (1u << 30) - 1;
    // the const-time bound on divsteps (Bernstein-Yang, theorem 11.2) as batches of 30, plus one
    constexpr int MAX_BATCHES = ((49 * 32 * N + 57) / 17) / 30 + 2;
    if (x.is_zero()) return x;
    int32_t f[L], g[L], d[L], e[L], m[L];
    auto to30 = [](const uint32_t* w, int32_t* out) {  // a non-negative integer of N words
#pragma unroll
        for (int i = 0; i < L; i++) {
            const int bit = 30 * i, j = bit >> 5, sh = bit & 31;
            uint64_t chunk = j < N ? (uint64_t)w[j] >> sh : 0;
            if (j + 1 < N && sh > 2) chunk |= (uint64_t)w[j + 1] << (32 - sh);
            out[i] = (int32_t)(chunk & MASK);
        }
    };
    to30(P::MOD, m);
    to30(x.v, g);
#pragma unroll
    for (int i = 0; i < L; i++) f[i] = m[i], d[i] = 0, e[i] = 0;
    e[0] = 1;
    const uint32_t negminv = P::NEGPINV[0];  // -M^-1 mod 2^32
    int32_t delta = 1;
    // (d, e) in [0, M): d + M if negative, then d - M if that is not negative
    auto reduce = [&m](int32_t* a) {
        if (a[L - 1] < 0) {
            long long c = 0;
#pragma unroll
            for (int i = 0; i < L; i++) {
                c += (long long)a[i] + m[i];
                a[i] = i < L - 1 ? (int32_t)(c & MASK) : (int32_t)c;
                c >>= 30;
            }
        }
        int32_t t[L];
        long long c = 0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            c += (long long)a[i] - m[i];
            t[i] = i < L - 1 ? (int32_t)(c & MASK) : (int32_t)c;
            c >>= 30;
        }
        if (t[L - 1] >= 0) {
#pragma unroll
            for (int i = 0; i < L; i++) a[i] = t[i];
        }
    };
#pragma unroll 1
    for (int batch = 0; batch < MAX_BATCHES; batch++) {
        // thirty divsteps on the low words; (f', g') 2^30 = (u f + v g, q f + r g)
        uint32_t fl = (uint32_t)f[0] | ((uint32_t)f[1] << 30), gl = (uint32_t)g[0] | ((uint32_t)g[1] << 30);
        uint32_t u = 1, v = 0, q = 0, r = 1;  // two's complement: the entries are signed
        int left = 30;
#pragma unroll 1
        for (;;) {
            uint32_t z = gl | (1u << left);  // g's trailing zeros, at most `left`: halvings
#ifdef __CUDA_ARCH__
            const int zeros = __ffs(z) - 1;
#else
            const int zeros = __builtin_ctz(z);
#endif
            gl >>= zeros, u <<= zeros, v <<= zeros, delta += zeros, left -= zeros;
            if (left == 0) break;
            if (delta > 0) {  // g odd: (f, g) <- (g, -f) and the rows with them
                delta = -delta;
                const uint32_t tf = fl, tu = u, tv = v;
                fl = gl, gl = 0u - tf, u = q, v = r, q = 0u - tu, r = 0u - tv;
            }
            gl += fl, q += u, r += v;  // both odd: g + f is even
            gl >>= 1, u <<= 1, v <<= 1, delta += 1, left -= 1;
            if (left == 0) break;
        }
        const long long su = (int32_t)u, sv = (int32_t)v, sq = (int32_t)q, sr = (int32_t)r;
        // f, g: exact; their low 30 bits of the sums are zero
        long long cf = su * f[0] + sv * g[0], cg = sq * f[0] + sr * g[0];
        // d, e: plus k M with k = -t M^-1 mod 2^30, so that they divide by 2^30 too
        const uint32_t kd = ((uint32_t)(su * d[0] + sv * e[0]) * negminv) & MASK;
        const uint32_t ke = ((uint32_t)(sq * d[0] + sr * e[0]) * negminv) & MASK;
        long long cd = su * d[0] + sv * e[0] + (long long)kd * m[0], ce = sq * d[0] + sr * e[0] + (long long)ke * m[0];
        cf >>= 30, cg >>= 30, cd >>= 30, ce >>= 30;
#pragma unroll
        for (int i = 1; i < L; i++) {
            cf += su * f[i] + sv * g[i];
            cg += sq * f[i] + sr * g[i];
            cd += su * d[i] + sv * e[i] + (long long)kd * m[i];
            ce += sq * d[i] + sr * e[i] + (long long)ke * m[i];
            f[i - 1] = (int32_t)(cf & MASK), g[i - 1] = (int32_t)(cg & MASK);
            d[i - 1] = (int32_t)(cd & MASK), e[i - 1] = (int32_t)(ce & MASK);
            cf >>= 30, cg >>= 30, cd >>= 30, ce >>= 30;
        }
        f[L - 1] = (int32_t)cf, g[L - 1] = (int32_t)cg, d[L - 1] = (int32_t)cd, e[L - 1] = (int32_t)ce;
        reduce(d), reduce(e);  // (-M, 2M) -> [0, M)
        int32_t any = 0;
#pragma unroll
        for (int i = 0; i < L; i++) any |= g[i];
        if (any == 0) break;
    }
    // f = +-1: X^-1 = +-d; as N words, then X^-1 R^2 = (x / R)^-1 R by the Montgomery product with R^3
    if (f[L - 1] < 0) {  // M - d (d != 0)
        long long c = 0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            c += (long long)m[i] - d[i];
            d[i] = i < L - 1 ? (int32_t)(c & MASK) : (int32_t)c;
            c >>= 30;
        }
    }
    F out;
#pragma unroll
    for (int j = 0; j < N; j++) {
        const int bit = 32 * j, i = bit / 30, sh = bit % 30;
        uint64_t w = (uint64_t)(uint32_t)d[i] >> sh;
        if (i + 1 < L) w |= (uint64_t)(uint32_t)d[i + 1] << (30 - sh);
        if (i + 2 < L && 60 - sh < 32) w |= (uint64_t)(uint32_t)d[i + 2] << (60 - sh);
        out.v[j] = (uint32_t)w;
    }
    F r2 = F::zero();
#pragma unroll
    for (int j = 0; j < N; j++) r2.v[j] = P::R2[j];
    return out * (r2 * r2);
}

// The tail's inverses: Fq directly, Fq2 (field.cuh's fp2) through the norm c0^2 + c1^2.
template <class F>
__device__ __forceinline__ F tail_inverse(const F& x) {
    return inverse_divsteps(x);
}
template <class F>
__device__ __forceinline__ fp2<F> tail_inverse(const fp2<F>& x) {
    const F t = inverse_divsteps(x.c0 * x.c0 + x.c1 * x.c1);
    return {x.c0 * t, (x.c1 * t).neg()};
}

// curve.cuh's to_affine with the divsteps inversion.
template <class F>
__device__ __forceinline__ affine<F> tail_affine(const xyzz<F>& p) {
    if (p.is_inf()) return {F::zero(), F::zero()};
    const F zzz_inv = tail_inverse(p.zzz);
    const F zinv = p.zz * zzz_inv;
    return {p.x * (zinv * zinv), p.y * zzz_inv};
}
