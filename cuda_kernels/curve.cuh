// Points of y^2 = x^3 + b (a = 0) over a field F (Fq for G1, Fq2 for G2).
// `affine` is the key's storage form (all-zero = infinity, as snarkjs writes it);
// `xyzz` (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2) is the accumulator: its mixed addition
// costs 8M + 2S and needs no inversion.  Formulas: add-2008-s, madd-2008-s,
// dbl-2008-s-1 for XYZZ coordinates (Explicit-Formulas Database).
#pragma once
#include "field.cuh"

template <class F>
struct affine {
    F x, y;
    static constexpr int WORDS = 2 * F::WORDS;
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
    static __device__ __forceinline__ affine load_ro(const uint32_t* p) { return {F::load_ro(p), F::load_ro(p + F::WORDS)}; }
    static __device__ __forceinline__ affine load(const uint32_t* p) { return {F::load(p), F::load(p + F::WORDS)}; }
    __device__ __forceinline__ void store(uint32_t* p) const {
        x.store(p);
        y.store(p + F::WORDS);
    }
    __device__ __forceinline__ affine neg() const { return {x, y.neg()}; }
};

// a b - c d: one reduction where the field has a lazy form (fp::mul_sub), else two products.
template <class F>
__device__ __forceinline__ F mul_sub(const F& a, const F& b, const F& c, const F& d) {
    if constexpr (F::HAS_MUL_SUB) return F::mul_sub(a, b, c, d);
    else return a * b - c * d;
}

template <class F>
struct xyzz {
    F x, y, zz, zzz;
    static constexpr int WORDS = 4 * F::WORDS;

    static __device__ __forceinline__ xyzz inf() { return {F::one(), F::one(), F::zero(), F::zero()}; }
    __device__ __forceinline__ bool is_inf() const { return zz.is_zero(); }
    static __device__ __forceinline__ xyzz from_affine(const affine<F>& a) {
        if (a.is_inf()) return inf();
        return {a.x, a.y, F::one(), F::one()};
    }

    static __device__ __forceinline__ xyzz load(const uint32_t* p) {
        return {F::load(p), F::load(p + F::WORDS), F::load(p + 2 * F::WORDS), F::load(p + 3 * F::WORDS)};
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        x.store(p);
        y.store(p + F::WORDS);
        zz.store(p + 2 * F::WORDS);
        zzz.store(p + 3 * F::WORDS);
    }

    // 2P for an affine P (ZZ = ZZZ = 1).
    static __device__ __forceinline__ xyzz dbl_affine(const affine<F>& a) {
        F u = a.y.dbl(), v = u.sqr(), w = u * v, s = a.x * v;
        F x2 = a.x.sqr();
        F m = x2.dbl() + x2;
        F x3 = m.sqr() - s.dbl();
        F y3 = m * (s - x3) - w * a.y;
        return {x3, y3, v, w};
    }

    // dbl and the full addition are out of line (one copy per module, not one per call
    // site); the mixed addition of the accumulation loop stays inline.
    __device__ __noinline__ void dbl() {
        if (is_inf()) return;
        F u = y.dbl(), v = u.sqr(), w = u * v, s = x * v;
        F x2 = x.sqr();
        F m = x2.dbl() + x2;
        F x3 = m.sqr() - s.dbl();
        y = mul_sub(m, s - x3, w, y);
        x = x3;
        zz = v * zz;
        zzz = w * zzz;
    }

    // this += a (a affine); handles infinity on either side, a == this and a == -this.
    __device__ __forceinline__ void add(const affine<F>& a) {
        if (a.is_inf()) return;
        if (is_inf()) {
            *this = {a.x, a.y, F::one(), F::one()};
            return;
        }
        F u2 = a.x * zz, s2 = a.y * zzz;
        F p = u2 - x, r = s2 - y;
        if (p.is_zero()) {
            if (r.is_zero()) *this = dbl_affine(a);
            else *this = inf();
            return;
        }
        F pp = p.sqr(), ppp = p * pp, q = x * pp;
        F x3 = r.sqr() - ppp - q.dbl();
        y = mul_sub(r, q - x3, y, ppp);
        x = x3;
        zz = zz * pp;
        zzz = zzz * ppp;
    }

    // this += o (both XYZZ).
    __device__ __noinline__ void add(const xyzz& o) {
        if (o.is_inf()) return;
        if (is_inf()) {
            *this = o;
            return;
        }
        F u1 = x * o.zz, u2 = o.x * zz, s1 = y * o.zzz, s2 = o.y * zzz;
        F p = u2 - u1, r = s2 - s1;
        if (p.is_zero()) {
            if (r.is_zero()) dbl();
            else *this = inf();
            return;
        }
        F pp = p.sqr(), ppp = p * pp, q = u1 * pp;
        F x3 = r.sqr() - ppp - q.dbl();
        y = mul_sub(r, q - x3, s1, ppp);
        x = x3;
        zz = zz * o.zz * pp;
        zzz = zzz * o.zzz * ppp;
    }

    // this = k * this for a small non-negative k (bucket weights): double-and-add.
    __device__ __forceinline__ void mul_small(uint32_t k) {
        xyzz base = *this, acc = inf();
#pragma unroll 1
        while (k) {
            if (k & 1) acc.add(base);
            k >>= 1;
            if (k) base.dbl();
        }
        *this = acc;
    }

    // Affine form with one inversion (used once per result, not in hot loops):
    // ZZ = z^2 and ZZZ = z^3, so ZZ/ZZZ = 1/z and 1/ZZ = (1/z)^2.
    __device__ __forceinline__ affine<F> to_affine() const {
        if (is_inf()) return {F::zero(), F::zero()};
        F zzz_inv = zzz.inverse();
        F zinv = zz * zzz_inv;
        return {x * zinv.sqr(), y * zzz_inv};
    }
};
