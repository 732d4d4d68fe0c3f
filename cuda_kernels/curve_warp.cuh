// XYZZ point arithmetic (curve.cuh's formulas and special cases) for one whole warp, each
// step's independent products in one batch of fp2_group.cuh: a doubling waits on three
// rounds of products instead of nine products, an addition on four instead of fourteen.
// Used by the proof's tail for its scalar products (epilogue.cuh), where one product or
// two are all the work there is, so their latency is the tail's.
//
// F is the point's field: the tail's Fq (G1; each product goes into a batch slot as an
// Fq2 product by an element of Fq, the same time) or field.cuh's Fq2 over it (G2).  Every
// lane of the warp runs the same code on the same values; all 32 lanes must be there.
#pragma once
#include "curve.cuh"
#include "fp2_group.cuh"

// A batch's slots seen as products in F.
template <class F>
struct warp_products {
    typedef fp2g<F> G;
    typedef typename G::batch batch;
    static __device__ __forceinline__ void put(batch& bt, int j, const F& x, const F& y) {
        bt.put(j, G{x, F::zero()}, G{y, F::zero()});
    }
    static __device__ __forceinline__ F get(const batch& bt, int j) { return bt.get(j).c0; }
};
template <class F>
struct warp_products<fp2<F>> {
    typedef fp2g<F> G;
    typedef typename G::batch batch;
    static __device__ __forceinline__ void put(batch& bt, int j, const fp2<F>& x, const fp2<F>& y) {
        bt.put(j, G{x.c0, x.c1}, G{y.c0, y.c1});
    }
    static __device__ __forceinline__ fp2<F> get(const batch& bt, int j) {
        const G g = bt.get(j);
        return {g.c0, g.c1};
    }
};

template <class F>
struct xyzz_warp {
    typedef xyzz<F> P;
    typedef affine<F> A;
    typedef warp_products<F> W;
    typedef typename W::batch batch;

    // dbl-2008-s-1: V = U^2, X^2;  W = U V, S = X V, ZZ V, M^2;  M (S - X3), W Y, W ZZZ.
    static __device__ __noinline__ void dbl(P& p) {
        if (p.is_inf()) return;
        batch bt;
        const F u = p.y.dbl();
        W::put(bt, 0, u, u), W::put(bt, 1, p.x, p.x);
        bt.run(2);
        const F v = W::get(bt, 0), x2 = W::get(bt, 1), m = x2.dbl() + x2;
        W::put(bt, 0, u, v), W::put(bt, 1, p.x, v), W::put(bt, 2, v, p.zz), W::put(bt, 3, m, m);
        bt.run(4);
        const F w = W::get(bt, 0), s = W::get(bt, 1), x3 = W::get(bt, 3) - s.dbl();
        p.zz = W::get(bt, 2);
        W::put(bt, 0, m, s - x3), W::put(bt, 1, w, p.y), W::put(bt, 2, w, p.zzz);
        bt.run(3);
        p.y = W::get(bt, 0) - W::get(bt, 1);
        p.x = x3;
        p.zzz = W::get(bt, 2);
    }

    // The shared tail of both additions, from U1, S1 (this side), P = U2 - U1, R = S2 - S1 and
    // the products ZZ1 ZZ2, ZZZ1 ZZZ2:  PP = P^2, R^2;  PPP = P PP, Q = U1 PP, ZZ PP;
    // R (Q - X3), S1 PPP, ZZZ PPP.
    // (by value: callers pass a's own coordinates, which this overwrites)
    static __device__ __forceinline__ void add_tail(P& a, const F u1, const F s1, const F pd, const F r, const F zz,
                                                    const F zzz) {
        batch bt;
        W::put(bt, 0, pd, pd), W::put(bt, 1, r, r);
        bt.run(2);
        const F pp = W::get(bt, 0), r2 = W::get(bt, 1);
        W::put(bt, 0, pd, pp), W::put(bt, 1, u1, pp), W::put(bt, 2, zz, pp);
        bt.run(3);
        const F ppp = W::get(bt, 0), q = W::get(bt, 1), x3 = r2 - ppp - q.dbl();
        a.zz = W::get(bt, 2);
        W::put(bt, 0, r, q - x3), W::put(bt, 1, s1, ppp), W::put(bt, 2, zzz, ppp);
        bt.run(3);
        a.y = W::get(bt, 0) - W::get(bt, 1);
        a.x = x3;
        a.zzz = W::get(bt, 2);
    }

    // a += o (both XYZZ; infinity on either side, o == a and o == -a as in curve.cuh).
    static __device__ __noinline__ void add(P& a, const P& o) {
        if (o.is_inf()) return;
        if (a.is_inf()) {
            a = o;
            return;
        }
        batch bt;
        W::put(bt, 0, a.x, o.zz), W::put(bt, 1, o.x, a.zz), W::put(bt, 2, a.y, o.zzz), W::put(bt, 3, o.y, a.zzz);
        W::put(bt, 4, a.zz, o.zz), W::put(bt, 5, a.zzz, o.zzz);
        bt.run(6);
        const F u1 = W::get(bt, 0), s1 = W::get(bt, 2), pd = W::get(bt, 1) - u1, r = W::get(bt, 3) - s1;
        if (pd.is_zero()) {
            if (r.is_zero()) dbl(a);
            else a = P::inf();
            return;
        }
        add_tail(a, u1, s1, pd, r, W::get(bt, 4), W::get(bt, 5));
    }

    // a += o for an affine o (ZZ2 = ZZZ2 = 1).
    static __device__ __noinline__ void add(P& a, const A& o) {
        if (o.is_inf()) return;
        if (a.is_inf()) {
            a = P::from_affine(o);
            return;
        }
        batch bt;
        W::put(bt, 0, o.x, a.zz), W::put(bt, 1, o.y, a.zzz);
        bt.run(2);
        const F pd = W::get(bt, 0) - a.x, r = W::get(bt, 1) - a.y;
        if (pd.is_zero()) {
            if (r.is_zero()) {
                a = P::from_affine(o);
                dbl(a);
            } else {
                a = P::inf();
            }
            return;
        }
        add_tail(a, a.x, a.y, pd, r, a.zz, a.zzz);
    }

    // k P for a little-endian k of `nibbles` 4-bit digits (64: 8 words; 32: a GLV half of 4
    // words, glv_half_mul): 4-bit windows from the top (epilogue.cuh's var_base_mul, warp-wide).
    static __device__ __noinline__ P var_base_mul(const P& p, const uint32_t* k, int nibbles = 64) {
        P tab[16];
        tab[0] = P::inf();
        tab[1] = p;
        tab[2] = p;
        dbl(tab[2]);
#pragma unroll 1
        for (int i = 3; i < 16; i++) {
            tab[i] = tab[i - 1];
            add(tab[i], p);
        }
        P acc = P::inf();
#pragma unroll 1
        for (int nib = nibbles - 1; nib >= 0; nib--) {
            dbl(acc), dbl(acc), dbl(acc), dbl(acc);
            const uint32_t d = (k[nib >> 3] >> (4 * (nib & 7))) & 15u;
            if (d) add(acc, tab[d]);
        }
        return acc;
    }

    // One half of a GLV product (engine/algebra/glv.py): (+-k_i) phi^i(P), k_i of 128 bits (4
    // words), phi(x, y) = (beta x, y), which is (beta X, Y, ZZ, ZZZ) in XYZZ; bit 0 of `neg`
    // negates.  k P = k1 P + k2 phi(P) for k = k1 + k2 lambda mod r: two of these on two
    // warps wait on half the doublings of var_base_mul.
    static __device__ __forceinline__ P glv_half_mul(P p, const uint32_t* k, bool endo, bool neg, const F& beta) {
        if (endo) p.x = p.x * beta;
        if (neg) p.y = p.y.neg();
        return var_base_mul(p, k, 32);
    }

    // k P from P's byte table (fixed_base.cuh's layout): one mixed addition per non-zero byte.
    static __device__ __noinline__ P fixed_base_mul(const uint32_t* table, const uint32_t* k) {
        P acc = P::inf();
#pragma unroll 1
        for (uint32_t w = 0; w < 32; w++) {
            const uint32_t d = (k[w >> 2] >> (8 * (w & 3))) & 0xffu;
            if (d) add(acc, A::load_ro(table + ((uint64_t)w * 256 + d) * A::WORDS));
        }
        return acc;
    }
};
