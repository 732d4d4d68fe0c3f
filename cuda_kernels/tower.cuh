// The pairing's tower over Fq2 = Fq[u]/(u^2+1) (field.cuh's fp2):
//   Fq6 = Fq2[v]/(v^3 - xi), xi = XI0 + u (BN254: 9 + u, BLS12-381: 1 + u)
//   Fq12 = Fq6[w]/(w^2 - v)
// Layout and formulas follow engine/algebra/pairing.py (the CPU oracle), so an Fq12 is
// ((a0, a1, a2), (b0, b1, b2)) = a + b w, the layout of snarkjs's vk_alphabeta_12; in the
// w-basis its coefficients are (a0, b0, a1, b1, a2, b2).  Values are Montgomery, reduced.
// Everything is __host__ __device__-clean (the parts' warp exchanges sit under __CUDA_ARCH__,
// their host path beside them: the parts one after another), so tests compile it with g++
// over a host field and check it against the Python reference before any device time.
//
// The products: F2 is fp2_group.cuh's fp2g, whose batches multiply up to twenty independent
// Fq2 pairs with the whole warp in the time of one or two base-field products.  So each
// operation here is written as put (its independent Fq2 products into one batch), run, get
// (the additions that combine them): an Fq12 product is 18 Fq2 products in one batch (two
// rounds), a squaring 18 (as a product), a cyclotomic squaring 6, a product by a line 15.
// The additions around the products are split over the lanes too (fp2_group.cuh's parts):
// each of three lane groups combines one of the operation's like pieces (an Fq6 product of
// Karatsuba, an Fq4 squaring), and the exchange hands the pieces to every lane.  Operations
// that put into a batch take its first slot `at` so that callers can fill one batch
// with the products of several operations.
#pragma once
#include "xi_nine.cuh"

template <class F2, int XI0>
struct fp6 {
    F2 c0, c1, c2;
    typedef F2 base;
    typedef decltype(F2::c0) F;

    static __device__ __forceinline__ fp6 zero() { return {F2::zero(), F2::zero(), F2::zero()}; }
    static __device__ __forceinline__ fp6 one() { return {F2::one(), F2::zero(), F2::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero() && c2.is_zero(); }
    __device__ __forceinline__ bool operator==(const fp6& o) const { return c0 == o.c0 && c1 == o.c1 && c2 == o.c2; }

    // xi * a = (XI0 a0 - a1) + (a0 + XI0 a1) u, XI0 a small constant: BN254's (XI0 = 9) as
    // xi_nine.cuh's 9x -/+ y with one reduction, BLS12-381's (XI0 = 1) additions only.
    static __device__ __forceinline__ F small(const F& x) {
        if constexpr (XI0 == 1) {
            return x;
        } else {
            static_assert(XI0 == 9, "xi = 1 + u or 9 + u");
            auto x8 = x.dbl().dbl().dbl();
            return x8 + x;
        }
    }
    static __device__ __forceinline__ F2 mul_xi(const F2& a) {
        if constexpr (XI0 == 9) return {xi_nine<true>(a.c0, a.c1), xi_nine<false>(a.c1, a.c0)};
        else return {small(a.c0) - a.c1, a.c0 + small(a.c1)};
    }
    friend __device__ __forceinline__ fp6 operator+(const fp6& a, const fp6& b) { return {a.c0 + b.c0, a.c1 + b.c1, a.c2 + b.c2}; }
    friend __device__ __forceinline__ fp6 operator-(const fp6& a, const fp6& b) { return {a.c0 - b.c0, a.c1 - b.c1, a.c2 - b.c2}; }
    __device__ __forceinline__ fp6 neg() const { return {c0.neg(), c1.neg(), c2.neg()}; }
    __device__ __forceinline__ fp6 dbl() const { return *this + *this; }
    // v * (a0 + a1 v + a2 v^2) = xi a2 + a0 v + a1 v^2
    __device__ __forceinline__ fp6 mul_v() const { return {mul_xi(c2), c0, c1}; }

    typedef typename F2::batch batch;
    static __device__ __forceinline__ fp6 pick(int q, const fp6& a, const fp6& b, const fp6& c) {
        return {F2::pick(q, a.c0, b.c0, c.c0), F2::pick(q, a.c1, b.c1, c.c1), F2::pick(q, a.c2, b.c2, c.c2)};
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        c0.store(p), c1.store(p + F2::WORDS), c2.store(p + 2 * F2::WORDS);
    }
    // Karatsuba over three coefficients: six Fq2 products, slots at .. at + 5.
    static __device__ __forceinline__ void put_mul(batch& bt, int at, const fp6& a, const fp6& b) {
        bt.put(at, a.c0, b.c0), bt.put(at + 1, a.c1, b.c1), bt.put(at + 2, a.c2, b.c2);
        bt.put(at + 3, a.c1 + a.c2, b.c1 + b.c2);
        bt.put(at + 4, a.c0 + a.c1, b.c0 + b.c1);
        bt.put(at + 5, a.c0 + a.c2, b.c0 + b.c2);
    }
    static __device__ __forceinline__ fp6 get_mul(const batch& bt, int at) {
        const F2 t0 = bt.get(at), t1 = bt.get(at + 1), t2 = bt.get(at + 2);
        const F2 u12 = bt.get(at + 3) - t1 - t2, u01 = bt.get(at + 4) - t0 - t1, u02 = bt.get(at + 5) - t0 - t2;
        return {t0 + mul_xi(u12), u01 + mul_xi(t2), u02 + t1};
    }
    friend __device__ __noinline__ fp6 operator*(const fp6& a, const fp6& b) {
        batch bt;
        put_mul(bt, 0, a, b);
        bt.run(6);
        return get_mul(bt, 0);
    }
    // a * (b + c v) for Fq2 b, c (the sparse factor of a line): five Fq2 products.
    static __device__ __forceinline__ void put_mul_01(batch& bt, int at, const fp6& a, const F2& b, const F2& c) {
        bt.put(at, a.c0, b), bt.put(at + 1, a.c1, c), bt.put(at + 2, a.c2, c);
        bt.put(at + 3, a.c0 + a.c1, b + c), bt.put(at + 4, a.c2, b);
    }
    static __device__ __forceinline__ fp6 get_mul_01(const batch& bt, int at) {
        const F2 t0 = bt.get(at), t1 = bt.get(at + 1);
        return {t0 + mul_xi(bt.get(at + 2)), bt.get(at + 3) - t0 - t1, t1 + bt.get(at + 4)};
    }
    // a * s for an Fq2 s: three products.
    static __device__ __forceinline__ void put_mul_fq2(batch& bt, int at, const fp6& a, const F2& s) {
        bt.put(at, a.c0, s), bt.put(at + 1, a.c1, s), bt.put(at + 2, a.c2, s);
    }
    static __device__ __forceinline__ fp6 get_3(const batch& bt, int at) { return {bt.get(at), bt.get(at + 1), bt.get(at + 2)}; }
    __device__ __noinline__ fp6 mul_fq2(const F2& s) const {
        batch bt;
        put_mul_fq2(bt, 0, *this, s);
        bt.run(3);
        return get_3(bt, 0);
    }

    __device__ fp6 inverse() const {
        batch bt;
        bt.put(0, c0, c0), bt.put(1, c1, c2), bt.put(2, c2, c2), bt.put(3, c0, c1), bt.put(4, c1, c1), bt.put(5, c0, c2);
        bt.run(6);
        const F2 d0 = bt.get(0) - mul_xi(bt.get(1)), d1 = mul_xi(bt.get(2)) - bt.get(3), d2 = bt.get(4) - bt.get(5);
        bt.put(0, c0, d0), bt.put(1, c2, d1), bt.put(2, c1, d2);
        bt.run(3);
        const F2 t = bt.get(0) + mul_xi(bt.get(1) + bt.get(2));
        return fp6{d0, d1, d2}.mul_fq2(t.inverse());
    }
};

template <class F6>
struct fp12 {
    typedef typename F6::base F2;
    F6 c0, c1;
    static constexpr int WORDS = 6 * F2::WORDS;

    static __device__ __forceinline__ fp12 one() { return {F6::one(), F6::zero()}; }
    __device__ __forceinline__ bool operator==(const fp12& o) const { return c0 == o.c0 && c1 == o.c1; }
    __device__ __forceinline__ bool is_one() const { return *this == one(); }

    typedef typename F2::batch batch;
    // An Fq12 product, squaring or product by a line is Karatsuba over w: t0 = a0 b0, t1 = a1 b1,
    // m = (a0 + a1)(b0 + b1), then a b = (t0 + v t1) + (m - t0 - t1) w.  The three Fq6 products
    // are fp2_group.cuh's parts: part q puts product q (slots 6q .. 6q + 5, or 5q .. 5q + 4 for
    // a sparse one), the batch runs them (two rounds), part q combines its own Fq6 and the
    // exchange hands the three on.  So a lane's additions are one Fq6 product's, not three.
    static constexpr int X6 = 3 * F2::WORDS + 4;  // exchange: part q's Fq6 at q * X6 (banks apart)
    template <class Get>
    static __device__ __forceinline__ fp12 combine(batch& bt, Get&& get) {
#ifdef __CUDA_ARCH__
        const int q = F2::part(3);
        const F6 mine = get(q);
        __syncwarp();
        mine.store(bt.s + q * X6);
        __syncwarp();
        // and the parts again: part q forms the coefficients q of the result, (t0 + v t1)_q and
        // (m - t0 - t1)_q, from the three Fq6 (not every lane all six), and a second exchange
        // hands them on (the result's layout: c0.c_q at word q W, c1.c_q at (3 + q) W).
        constexpr int W = F2::WORDS;
        uint32_t* s = bt.s;
        auto ld = [s](int i, int j) { return F2::load(s + i * X6 + j * W); };
        const F2 t0q = ld(0, q), t1q = ld(1, q), t1p = ld(1, q == 0 ? 2 : q - 1);
        const F2 vt1 = F2::pick(q, F6::mul_xi(t1p), t1p, t1p);  // (v t1)_q: xi t1_2, t1_0, t1_1
        const F2 a = t0q + vt1, b = ld(2, q) - t0q - t1q;
        __syncwarp();
        a.store(s + q * W);
        b.store(s + (3 + q) * W);
        __syncwarp();
        const fp12 r = load(s);
        __syncwarp();
        return r;
#else
        const F6 t0 = get(0), t1 = get(1), m = get(2);
        return {t0 + t1.mul_v(), m - t0 - t1};
#endif
    }
    // The products of a b (18 slots from 0), the products of a^2 (the same, b = a).
    static __device__ __forceinline__ void put_mul(batch& bt, const fp12& a, const fp12& b) {
        const F6 sa = a.c0 + a.c1, sb = b.c0 + b.c1;
        F2::template for_parts<3>([&](int q) {
            F6::put_mul(bt, 6 * q, F6::pick(q, a.c0, a.c1, sa), F6::pick(q, b.c0, b.c1, sb));
        });
    }
    static __device__ __forceinline__ void put_sqr(batch& bt, const fp12& a) {
        const F6 sa = a.c0 + a.c1;
        F2::template for_parts<3>([&](int q) {
            const F6 x = F6::pick(q, a.c0, a.c1, sa);
            F6::put_mul(bt, 6 * q, x, x);
        });
    }
    static __device__ __forceinline__ fp12 get_mul(batch& bt) {
        return combine(bt, [&bt](int q) { return F6::get_mul(bt, 6 * q); });
    }
    // Each operation twice: out of line (most callers: one copy of the code) and inline (`*_in`,
    // for the loops of the Miller loop and of the powers of x, where the value stays in registers
    // instead of going through the caller's stack and back at every call).
    static __device__ __forceinline__ fp12 mul_in(const fp12& a, const fp12& b) {
        batch bt;
        put_mul(bt, a, b);
        bt.run(18);
        return get_mul(bt);
    }
    friend __device__ __noinline__ fp12 operator*(const fp12& a, const fp12& b) { return mul_in(a, b); }
    // (as a product: its additions split over the parts like a product's; the same two rounds
    // as the two-Fq6-product squaring)
    static __device__ __forceinline__ fp12 sqr_in(const fp12& a) {
        batch bt;
        put_sqr(bt, a);
        bt.run(18);
        return get_mul(bt);
    }
    __device__ __noinline__ fp12 sqr() const { return sqr_in(*this); }
    __device__ __forceinline__ fp12 conj() const { return {c0, c1.neg()}; }
    __device__ fp12 inverse() const {
        batch bt;
        F6::put_mul(bt, 0, c0, c0);
        F6::put_mul(bt, 6, c1, c1);
        bt.run(12);
        const F6 t = (F6::get_mul(bt, 0) - F6::get_mul(bt, 6).mul_v()).inverse();
        F6::put_mul(bt, 0, c0, t);
        F6::put_mul(bt, 6, c1, t);
        bt.run(12);
        return {F6::get_mul(bt, 0), F6::get_mul(bt, 6).neg()};
    }

    // Squaring in the cyclotomic subgroup (Granger-Scott): three squarings in
    // Fq4 = Fq2[s]/(s^2 - xi) of the pairs (z0, z1) = (a0, b1), (z2, z3) = (b0, a2),
    // (z4, z5) = (a1, b2); then z_new = 3t -/+ 2z.
    // (all six products in one batch: one round)
    static __device__ __forceinline__ void put_sq4(batch& bt, int at, const F2& x, const F2& y) {
        bt.put(at, x, y);
        bt.put(at + 1, x + y, x + F6::mul_xi(y));
    }
    static __device__ __forceinline__ void get_sq4(const batch& bt, int at, F2& n, F2& d) {
        const F2 m = bt.get(at);
        n = bt.get(at + 1) - m - F6::mul_xi(m);  // x^2 + xi y^2
        d = m.dbl();                             // 2xy
    }
    // Part q squares pair q, (z0, z1), (z2, z3) or (z4, z5), and forms two of the outputs:
    // 3 t - 2 z into c0.c_q, 3 t' + 2 z' into c1.c_(q+1 mod 3) (t' = xi t5 for part 2).
    __device__ __noinline__ fp12 cyc_sqr() const { return cyc_sqr_in(*this); }
    static __device__ __forceinline__ fp12 cyc_sqr_in(const fp12& x) {
        const F6 &c0 = x.c0, &c1 = x.c1;
        const F2 &z0 = c0.c0, &z4 = c0.c1, &z3 = c0.c2, &z2 = c1.c0, &z1 = c1.c1, &z5 = c1.c2;
        batch bt;
        F2::template for_parts<3>([&](int q) { put_sq4(bt, 2 * q, F2::pick(q, z0, z2, z4), F2::pick(q, z1, z3, z5)); });
        bt.run(6);
        auto outputs = [&](int q, F2& a, F2& b) {
            F2 n, d;
            get_sq4(bt, 2 * q, n, d);
            const F2 za = F2::pick(q, z0, z4, z3), zb = F2::pick(q, z1, z5, z2), t = F2::pick(q, d, d, F6::mul_xi(d));
            a = (n - za).dbl() + n;  // 3t - 2z
            b = (t + zb).dbl() + t;  // 3t + 2z
        };
#ifdef __CUDA_ARCH__
        constexpr int W = F2::WORDS;
        const int q = F2::part(3);
        F2 a, b;
        outputs(q, a, b);
        __syncwarp();
        a.store(bt.s + q * W);
        b.store(bt.s + (q == 2 ? 3 : 4 + q) * W);
        __syncwarp();
        const fp12 r = load(bt.s);
        __syncwarp();
        return r;
#else
        F2 a[3], b[3];
        for (int q = 0; q < 3; q++) outputs(q, a[q], b[q]);
        return {{a[0], a[1], a[2]}, {b[2], b[0], b[1]}};
#endif
    }

    // a^(q^k): the coefficient of w^i is conjugated k times and scaled by gamma_k[i]
    // (gamma = the six constants xi^(i (q^k - 1) / 6), given by the host).
    __device__ fp12 frob(const F2* gamma, bool odd) const {
        auto c = [odd](const F2& x) { return odd ? F2{x.c0, x.c1.neg()} : x; };
        batch bt;
        bt.put(0, c(c0.c1), gamma[2]), bt.put(1, c(c0.c2), gamma[4]);
        bt.put(2, c(c1.c0), gamma[1]), bt.put(3, c(c1.c1), gamma[3]), bt.put(4, c(c1.c2), gamma[5]);
        bt.run(5);
        return {{c(c0.c0), bt.get(0), bt.get(1)}, {bt.get(2), bt.get(3), bt.get(4)}};
    }

    // f * line, the line given by three Fq2 values (ly yP, lx xP, lc).  D-type twist (BN254):
    // line = ly yP + lx xP w + lc w^3 = L0 + L1 w with L0 = ly yP, L1 = lx xP + lc v.  M-type
    // (BLS12-381): lc + lx xP v + ly yP v w, L0 = lc + lx xP v, L1 = ly yP v.  Each of the
    // three Fq6 products of Karatsuba (f0 L0, f1 L1, (f0 + f1)(L0 + L1)) is a product by a
    // sparse b + c v (five Fq2 products, c = 0 or b = 0 where the factor has one coefficient),
    // so the parts run the same code: 15 slots, two rounds.
    __device__ __noinline__ fp12 mul_line_d(const F2& yp, const F2& b0, const F2& lc) const {
        return mul_sparse(yp, F2::zero(), b0, lc);
    }
    __device__ __noinline__ fp12 mul_line_m(const F2& yp, const F2& a1, const F2& lc) const {
        return mul_sparse(lc, a1, F2::zero(), yp);
    }
    __device__ __forceinline__ fp12 mul_line_d_in(const F2& yp, const F2& b0, const F2& lc) const {
        return mul_sparse(yp, F2::zero(), b0, lc);
    }
    __device__ __forceinline__ fp12 mul_line_m_in(const F2& yp, const F2& a1, const F2& lc) const {
        return mul_sparse(lc, a1, F2::zero(), yp);
    }
    // f (L0 + L1 w), L0 = b0 + c0 v, L1 = b1 + c1 v
    __device__ __forceinline__ fp12 mul_sparse(const F2& b0, const F2& cc0, const F2& b1, const F2& cc1) const {
        batch bt;
        const F6 s = c0 + c1;
        const F2 sb = b0 + b1, sc = cc0 + cc1;
        F2::template for_parts<3>([&](int q) {
            F6::put_mul_01(bt, 5 * q, F6::pick(q, c0, c1, s), F2::pick(q, b0, b1, sb), F2::pick(q, cc0, cc1, sc));
        });
        bt.run(15);
        return combine(bt, [&bt](int q) { return F6::get_mul_01(bt, 5 * q); });
    }

    static __device__ __forceinline__ fp12 load(const uint32_t* p) {
        constexpr int W = F2::WORDS;
        return {{F2::load(p), F2::load(p + W), F2::load(p + 2 * W)},
                {F2::load(p + 3 * W), F2::load(p + 4 * W), F2::load(p + 5 * W)}};
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        constexpr int W = F2::WORDS;
        c0.c0.store(p), c0.c1.store(p + W), c0.c2.store(p + 2 * W);
        c1.c0.store(p + 3 * W), c1.c1.store(p + 4 * W), c1.c2.store(p + 5 * W);
    }
};
