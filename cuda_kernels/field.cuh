// Prime fields and their quadratic extension, written once as templates over a field's
// constants (a struct P with N, MOD, INV, ONE, R2, MODM2, BITS; made by the build from
// engine/algebra/curves.py).  Elements are kept fully reduced, in Montgomery form with
// R = 2^(32N): exactly the bytes of a snarkjs zkey, so key data uploads unchanged.
#pragma once

#ifndef GROTH16_STDINT
#define GROTH16_STDINT
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
#endif

#include "mont_ptx.cuh"

#ifndef FIELD_MUL_VARIANT
#define FIELD_MUL_VARIANT 2
#endif

// product_form<P, VALUE, EVEN_ODD>: the field of P with its out-of-line product's operands by
// value (VALUE) and the product as even/odd chains (EVEN_ODD: mont_ptx mul_eo, gen_mont_eo.py, one
// IMAD.WIDE.U32.X a 32x32 product, ~63 other instructions against ~385; 8 and 12 limbs).  The plain field takes the operands by reference, which gives them an
// address: the caller stores them to its stack frame and the product loads them back (BN254 G1's
// accumulation: a 512-byte frame a thread, 16 LDL a product); by value they travel in registers
// (no frame, more registers: 130 against 94).  Fq2's products over any of them stay by reference
// (by value too, G2's accumulation took 255 registers and spilled).  The MSM's XYZZ pass is built
// in these forms (kernels.cu: by_value suffix v, by_value_eo e, by_reference_eo r).
// SPLIT (with EVEN_ODD): products as the even/odd chains, but squarings and differences of products
// split into a double-width product and REDC (gen_mont_split.py): N(N+1)/2 wide products for a^2
// against N^2, one reduction for a b - c d (mul_sub), and an Fq2 product as three double-width
// products and two reductions, c0 = (w0 - w1) / R, c1 = (ws - (w0 + w1)) / R.  (Session 32's Fq2
// product gave a wrong c1 on the device; its 2N-word addition is now C++ and runs before c0's
// reduction (perf/RESULTS.md, session 33).)
// INLINE (with SPLIT): every product inlined where it is used, none called.  A call passes its
// operands in the ABI's registers, and ptxas makes about two thirds of those moves IMAD.MOV, on the
// pipe the products saturate: BN254 G1's split accumulation has 334 IMAD.MOV beside 346 wide products
// (statically; its mixed addition's path ~220 IMAD.MOV against ~1080 wide products in its 11 calls);
// inlined it has none, in 132 registers against 130 (BLS12-381: 172 against 184), at 2.3-2.7x the
// code (perf/sass_mix.py; perf/RESULTS.md, session 40).  Built for G1's accumulation and its
// batch-affine rounds (msm.py "split_inline").
template <class P, bool VALUE, bool EVEN_ODD, bool SPLIT = false, bool INLINE = false>
struct product_form : P {};
template <class P>
using by_value = product_form<P, true, false>;
template <class P>
using by_value_eo = product_form<P, true, true>;
template <class P>
using by_reference_eo = product_form<P, false, true>;
template <class P>
using by_value_split = product_form<P, true, true, true>;
template <class P>
using split_inline = product_form<P, true, true, true, true>;
template <class P>
struct product_traits {
    static constexpr bool by_value = false, even_odd = false, split = false, inlined = false;
};
template <class P, bool VALUE, bool EVEN_ODD, bool SPLIT, bool INLINE>
struct product_traits<product_form<P, VALUE, EVEN_ODD, SPLIT, INLINE>> {
    static constexpr bool by_value = VALUE, even_odd = EVEN_ODD, split = SPLIT, inlined = INLINE;
};

template <class P>
struct fp {
    static constexpr int N = P::N;
    static constexpr bool SHOUP = P::SHOUP;
    uint32_t v[N];

    static __device__ __forceinline__ fp zero() {
        fp r;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = 0;
        return r;
    }
    static __device__ __forceinline__ fp one() {  // R mod p
        fp r;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = P::ONE[j];
        return r;
    }
    __device__ __forceinline__ bool is_zero() const {
        uint32_t x = 0;
#pragma unroll
        for (int j = 0; j < N; j++) x |= v[j];
        return x == 0;
    }
    __device__ __forceinline__ bool operator==(const fp& o) const {
        uint32_t x = 0;
#pragma unroll
        for (int j = 0; j < N; j++) x |= v[j] ^ o.v[j];
        return x == 0;
    }
    __device__ __forceinline__ bool operator!=(const fp& o) const { return !(*this == o); }

    friend __device__ __forceinline__ fp operator+(const fp& a, const fp& b) {
        fp r;
        mont_ptx<N>::template add<P>(r.v, a.v, b.v);
        return r;
    }
    friend __device__ __forceinline__ fp operator-(const fp& a, const fp& b) {
        fp r;
        mont_ptx<N>::template sub<P>(r.v, a.v, b.v);
        return r;
    }
    // FIELD_MUL_VARIANT (set by the build): 0 = CIOS with lo/hi multiply-add chains, 1 = CIOS
    // with 32x32->64 products and one carry chain per half row, 2 = each field's faster one
    // (measured on H200, perf/field_mul.py and perf/msm.py: 1 for 8 limbs, 0 for 12).
    // P::MUL_OUT_OF_LINE (set by the build: the base field): one copy of the product that every
    // use calls, so code made of many products (a point addition) stays small.
    // 3 = the even/odd chains (gen_mont_eo.py) for 8 limbs, the carry-chain form for 12; an
    // experiment switch for the MSM (GROTH16_FIELD_MUL=eo): the NTT uses mul_eo either way.
    // A product_form with EVEN_ODD (the MSM's eo builds) takes the even/odd chains for 8 and
    // 12 limbs (BLS12-381's Fq: mont_ptx<12>::mul_eo, generated since b13bls).
    static __device__ __forceinline__ fp mul_inline(const fp& a, const fp& b) {
        fp r;
        if constexpr ((FIELD_MUL_VARIANT == 3 && N == 8) || product_traits<P>::even_odd)
            mont_ptx<N>::template mul_eo<P>(r.v, a.v, b.v);
        else if constexpr (FIELD_MUL_VARIANT == 1 || (FIELD_MUL_VARIANT == 2 && N == 8))
            mont_ptx<N>::template mul_wide<P>(r.v, a.v, b.v);
        else
            mont_ptx<N>::template mul<P>(r.v, a.v, b.v);
        return r;
    }
    static __device__ __noinline__ fp mul_out_of_line(const fp& a, const fp& b) { return mul_inline(a, b); }
    static __device__ __noinline__ fp mul_by_value(fp a, fp b) { return mul_inline(a, b); }
    friend __device__ __forceinline__ fp operator*(const fp& a, const fp& b) {
        if constexpr (product_traits<P>::inlined)
            return mul_inline(a, b);
        else if constexpr (P::MUL_OUT_OF_LINE && product_traits<P>::by_value)
            return mul_by_value(a, b);
        else if constexpr (P::MUL_OUT_OF_LINE)
            return mul_out_of_line(a, b);
        else
            return mul_inline(a, b);
    }
    __device__ __forceinline__ fp& operator+=(const fp& b) { return *this = *this + b; }
    __device__ __forceinline__ fp& operator-=(const fp& b) { return *this = *this - b; }
    __device__ __forceinline__ fp& operator*=(const fp& b) { return *this = *this * b; }

    // Product with a table constant w (plain, not Montgomery) given ws = floor(w 2^(32N) / p):
    // x * w mod p, so a Montgomery-form x stays in Montgomery form.  Only where SHOUP (2p < R: r < 2p).
    __device__ __forceinline__ fp mul_shoup(const fp& w, const fp& ws) const {
        static_assert(SHOUP, "Shoup products need 2p < 2^(32N)");
        fp r;
        mont_ptx<N>::template mul_shoup<P>(r.v, v, w.v, ws.v);
        return r;
    }
    // The same two products as even/odd chains, which ptxas turns into one IMAD.WIDE.U32.X per
    // 32x32 product (gen_mont_eo.py; 8 limbs: the scalar fields).  The NTT's butterflies.
    __device__ __forceinline__ fp mul_eo(const fp& b) const {
        static_assert(N == 8, "even/odd chains are generated for 8 limbs");
        fp r;
        mont_ptx<N>::template mul_eo<P>(r.v, v, b.v);
        return r;
    }
    __device__ __forceinline__ fp mul_shoup_eo(const fp& w, const fp& ws) const {
        static_assert(SHOUP && N == 8, "Shoup products need 2p < 2^(32N); generated for 8 limbs");
        fp r;
        mont_ptx<N>::template mul_shoup_eo<P>(r.v, v, w.v, ws.v);
        return r;
    }
    // The pair (w, ws) for a constant given in Montgomery form wm = w R mod p: w = wm / R and
    // ws = (w R - wm) / p = -wm p^-1 mod R (an exact division, done as a low-half product).
    __device__ __forceinline__ void shoup_pair(fp& w, fp& ws) const {
        w = from_mont();
        uint32_t t[N];
#pragma unroll
        for (int j = 0; j < N; j++) t[j] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t c = 0;
#pragma unroll
            for (int j = 0; i + j < N; j++) {
                c += (uint64_t)v[i] * P::NEGPINV[j] + t[i + j];
                t[i + j] = (uint32_t)c;
                c >>= 32;
            }
        }
#pragma unroll
        for (int j = 0; j < N; j++) ws.v[j] = t[j];
    }
    // The split forms square with each cross product once (sqr_split); the others multiply.
    static __device__ __forceinline__ fp sqr_split_inline(const fp& a) {
        fp r;
        mont_ptx<N>::template sqr_split<P>(r.v, a.v);
        return r;
    }
    static __device__ __noinline__ fp sqr_by_value(fp a) { return sqr_split_inline(a); }
    __device__ __forceinline__ fp sqr() const {
        if constexpr (product_traits<P>::split && product_traits<P>::inlined) return sqr_split_inline(*this);
        else if constexpr (product_traits<P>::split) return sqr_by_value(*this);
        else return *this * *this;
    }
    // A difference of two products with one reduction (split forms; plain products otherwise):
    // a b - c d = redc_diff(mul_wide(a, b), mul_wide(c, d)), the wide values below p^2.
    struct wide {
        uint32_t v[2 * N];
    };
    static __device__ __forceinline__ wide mul_wide_inline(const fp& a, const fp& b) {
        wide t;
        mont_ptx<N>::template wide_eo<P>(t.v, a.v, b.v);
        return t;
    }
    static __device__ __forceinline__ fp redc_diff_inline(const wide& t1, const wide& t2) {
        fp r;
        mont_ptx<N>::template redc_diff_eo<P>(r.v, t1.v, t2.v);
        return r;
    }
    static __device__ __noinline__ wide mul_wide_by_value(fp a, fp b) { return mul_wide_inline(a, b); }
    static __device__ __noinline__ fp redc_diff_by_value(wide t1, wide t2) { return redc_diff_inline(t1, t2); }
    // (T1 - T2) / R for T1 < p^2, T2 < 2 p^2 (an Fq2 product's c1 = s - (v0 + v1)).
    static __device__ __noinline__ fp redc_diff2_by_value(wide t1, wide t2) {
        fp r;
        mont_ptx<N>::template redc_diff2_eo<P>(r.v, t1.v, t2.v);
        return r;
    }
    // A + B in C++, not an asm statement: as an asm addition after c0's reduction it gave a wrong c1
    // on the device, early-clobbered outputs written last or not (sessions 32-33), though its PTX is
    // exact on the host simulator; fp2's operator* also runs it before that reduction.
    static __device__ __forceinline__ wide add_wide(const wide& a, const wide& b) {
        wide t;
        uint64_t c = 0;
#pragma unroll
        for (int k = 0; k < 2 * N; k++) {
            c += (uint64_t)a.v[k] + b.v[k];
            t.v[k] = (uint32_t)c;
            c >>= 32;
        }
        return t;
    }
    static constexpr bool SPLIT = product_traits<P>::split;

    static __device__ __forceinline__ fp mul_sub(const fp& a, const fp& b, const fp& c, const fp& d) {
        if constexpr (product_traits<P>::split && product_traits<P>::inlined)
            return redc_diff_inline(mul_wide_inline(a, b), mul_wide_inline(c, d));
        else if constexpr (product_traits<P>::split)
            return redc_diff_by_value(mul_wide_by_value(a, b), mul_wide_by_value(c, d));
        else return a * b - c * d;
    }
    __device__ __forceinline__ fp dbl() const { return *this + *this; }
    __device__ __forceinline__ fp neg() const { return zero() - *this; }

    // Montgomery form <-> plain: multiply by 1 or by R^2.
    __device__ __forceinline__ fp from_mont() const {
        fp one_plain = zero();
        one_plain.v[0] = 1;
        return *this * one_plain;
    }
    __device__ __forceinline__ fp to_mont() const {
        fp r2;
#pragma unroll
        for (int j = 0; j < N; j++) r2.v[j] = P::R2[j];
        return *this * r2;
    }

    // x^(p-2) by square-and-multiply over the constant exponent: Fermat inversion (0 -> 0).
    __device__ fp inverse() const {
        fp acc = one();
#pragma unroll 1
        for (int w = N - 1; w >= 0; w--) {
            const uint32_t e = P::MODM2[w];
#pragma unroll 1
            for (int bit = 31; bit >= 0; bit--) {
                acc = acc.sqr();
                if ((e >> bit) & 1) acc = acc * *this;
            }
        }
        return acc;
    }

    // 16-byte vector loads: an element is 32 or 48 bytes, 16-byte aligned in every buffer.
    static __device__ __forceinline__ fp load(const uint32_t* p) {
        fp r;
        const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
        for (int j = 0; j < N / 4; j++) {
            uint4 t = q[j];
            r.v[4 * j] = t.x, r.v[4 * j + 1] = t.y, r.v[4 * j + 2] = t.z, r.v[4 * j + 3] = t.w;
        }
        return r;
    }
    // Read-only data (key points, twiddles): through the non-coherent cache.
    static __device__ __forceinline__ fp load_ro(const uint32_t* p) {
        fp r;
        const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
        for (int j = 0; j < N / 4; j++) {
            uint4 t = __ldg(q + j);
            r.v[4 * j] = t.x, r.v[4 * j + 1] = t.y, r.v[4 * j + 2] = t.z, r.v[4 * j + 3] = t.w;
        }
        return r;
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
        for (int j = 0; j < N / 4; j++) q[j] = make_uint4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
    }
    static constexpr int WORDS = N;
    static constexpr bool HAS_MUL_SUB = true;
};

// Fq2 = Fq[u]/(u^2 + 1), stored c0 then c1 (the zkey's order).
template <class F>
struct fp2 {
    F c0, c1;
    static constexpr int WORDS = 2 * F::WORDS;
    static constexpr bool HAS_MUL_SUB = false;

    static __device__ __forceinline__ fp2 zero() { return {F::zero(), F::zero()}; }
    static __device__ __forceinline__ fp2 one() { return {F::one(), F::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const fp2& o) const { return c0 == o.c0 && c1 == o.c1; }
    __device__ __forceinline__ bool operator!=(const fp2& o) const { return !(*this == o); }
    friend __device__ __forceinline__ fp2 operator+(const fp2& a, const fp2& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
    friend __device__ __forceinline__ fp2 operator-(const fp2& a, const fp2& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
    // Not inlined: a G2 formula holds a dozen of these, and inlining them all makes kernels
    // that take NVRTC minutes and spill; the call costs little next to three products.
    friend __device__ __noinline__ fp2 operator*(const fp2& a, const fp2& b) {
        // Karatsuba: three base-field products; with the split product two reductions, not three:
        // c0 = (w0 - w1) / R, c1 = (ws - (w0 + w1)) / R on the double-width products
        if constexpr (F::SPLIT) {
            const auto w0 = F::mul_wide_by_value(a.c0, b.c0), w1 = F::mul_wide_by_value(a.c1, b.c1);
            const auto ws = F::mul_wide_by_value(a.c0 + a.c1, b.c0 + b.c1);
            const auto sum = F::add_wide(w0, w1);
            const F c0 = F::redc_diff_by_value(w0, w1);
            return {c0, F::redc_diff2_by_value(ws, sum)};
        } else {
            F v0 = a.c0 * b.c0, v1 = a.c1 * b.c1;
            F s = (a.c0 + a.c1) * (b.c0 + b.c1);
            return {v0 - v1, s - v0 - v1};
        }
    }
    __device__ __forceinline__ fp2& operator+=(const fp2& b) { return *this = *this + b; }
    __device__ __forceinline__ fp2& operator-=(const fp2& b) { return *this = *this - b; }
    __device__ __forceinline__ fp2& operator*=(const fp2& b) { return *this = *this * b; }
    __device__ __noinline__ fp2 sqr() const {
        // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u
        F t = c0 * c1;
        return {(c0 + c1) * (c0 - c1), t + t};
    }
    __device__ __forceinline__ fp2 dbl() const { return *this + *this; }
    __device__ __forceinline__ fp2 neg() const { return {c0.neg(), c1.neg()}; }
    __device__ fp2 inverse() const {
        F t = (c0.sqr() + c1.sqr()).inverse();
        return {c0 * t, (c1 * t).neg()};
    }
    static __device__ __forceinline__ fp2 load(const uint32_t* p) { return {F::load(p), F::load(p + F::WORDS)}; }
    static __device__ __forceinline__ fp2 load_ro(const uint32_t* p) {
        return {F::load_ro(p), F::load_ro(p + F::WORDS)};
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        c0.store(p);
        c1.store(p + F::WORDS);
    }
};
