// The Montgomery product on the FP64 pipe: the same function as mont_ptx's products
// (a b / 2^(32N) mod p, fully reduced, 32-bit words in and out), computed with double-precision
// fused multiply-adds instead of integer multiply-adds.  On Hopper the FP64 units are a pipe of
// their own beside the integer multiplier (64 DFMA a clock an SM, like 64 IMAD), so products
// made here run beside the even/odd IMAD products rather than queueing behind them.
//
// Operands are split into L limbs of 52 bits held exactly as doubles (5 for 256-bit words, 8 for
// 384).  One 52 x 52 partial product a_i b_j < 2^104 is split exactly into a high and a low half
// by two FMAs rounding toward zero against fixed offsets (Emmart, Zheng and Weems, "Faster
// modular exponentiation using double precision floating point arithmetic on the GPU", ARITH
// 2018):
//     hi = fma_rz(a, b, 2^104)          = 2^104 + floor(ab / 2^52) 2^52   (ulp 2^52 there)
//     s  = (2^104 + 2^52) - hi          = 2^52 - floor(ab / 2^52) 2^52   (exact)
//     lo = fma_rz(a, b, s)              = 2^52 + (ab mod 2^52)            (exact, ulp 1)
// so the bit patterns of hi and lo are each a fixed exponent field plus a 52-bit integer.  Those
// patterns are summed as 64-bit integers into columns of weight 2^(52k); each column's exponent
// fields add up to a constant known at compile time (the count of halves it receives), which
// its initial value cancels, so a column ends as its exact integer sum (below 2^58).
//
// The reduction interleaves with the columns, one digit a step: L-1 digits of 52 bits and a last
// one of 32N - 52(L-1) bits (48 or 20), so the result is a b 2^-(32N): the engine's Montgomery
// form, with no conversion of the key's points.  A step's digit q = t p' mod 2^52 comes from the
// integer multiplier (one 64-bit low product); the step needs only the high half of q p_0, since
// t + q p_0 is 0 mod 2^52 by construction (its carry is t >> 52, plus one when t's low bits are
// not zero).
#pragma once

template <class P>
struct mont_f64 {
    static constexpr int N = P::N;                       // 32-bit words
    static constexpr int L = (32 * N + 51) / 52;         // 52-bit limbs: 5 (N = 8), 8 (N = 12)
    static constexpr int LAST = 32 * N - 52 * (L - 1);   // bits of the last reduction digit: 48, 20
    static constexpr uint64_t M52 = (1ull << 52) - 1;
    static constexpr uint64_t MLAST = (1ull << LAST) - 1;
    static constexpr uint64_t B_LO = 0x4330000000000000ull;  // bit pattern of 2^52
    static constexpr uint64_t B_HI = 0x4670000000000000ull;  // bit pattern of 2^104
    static_assert(L >= 2 && LAST > 0 && LAST <= 52, "52-bit limbs of the field's words");

    // Bits [52j, 52j + 52) of the modulus, from its 32-bit words.
    static constexpr uint64_t mod52(int j) {
        uint64_t r = 0;
        for (int b = 0; b < 52; b++) {
            const int bit = 52 * j + b;
            if (bit < 32 * N && ((P::MOD[bit >> 5] >> (bit & 31)) & 1u)) r |= 1ull << b;
        }
        return r;
    }
    // -p^-1 mod 2^64 by Newton's iteration (p odd); its low 52 or LAST bits serve every digit.
    static constexpr uint64_t neg_pinv() {
        const uint64_t p0 = (uint64_t)P::MOD[0] | ((uint64_t)P::MOD[1] << 32);
        uint64_t x = 1;
        for (int i = 0; i < 7; i++) x *= 2 - p0 * x;
        return 0 - x;
    }
    static constexpr uint64_t PINV = neg_pinv();
    struct limbs_t {
        double v[L];
    };
    static constexpr limbs_t make_p52() {
        limbs_t r{};
        for (int j = 0; j < L; j++) r.v[j] = (double)mod52(j);
        return r;
    }
    static constexpr limbs_t P52 = make_p52();  // the modulus's limbs

    // Halves each column receives (products, reduction steps): the exponent fields to cancel.
    static constexpr uint64_t bias(int k) {
        uint64_t lo = 0, hi = 0;
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) {
                lo += i + j == k;
                hi += i + j + 1 == k;
            }
        for (int s = 0; s < L - 1; s++) {  // 52-bit steps: q p_0's high half, then full q p_j
            hi += s + 1 == k;
            for (int j = 1; j < L; j++) {
                lo += s + j == k;
                hi += s + j + 1 == k;
            }
        }
        for (int j = 0; j < L; j++) {  // the last step: every q p_j whole
            lo += L - 1 + j == k;
            hi += L + j == k;
        }
        return 0 - (lo * B_LO + hi * B_HI);
    }
    struct columns_t {
        uint64_t v[2 * L];
    };
    static constexpr columns_t make_biases() {
        columns_t r{};
        for (int k = 0; k < 2 * L; k++) r.v[k] = bias(k);
        return r;
    }
    static constexpr columns_t BIAS = make_biases();

    static __device__ __forceinline__ uint64_t bits(double x) { return (uint64_t)__double_as_longlong(x); }
    // An integer below 2^52 as a double: its bits under 2^52's exponent, less 2^52 (exact).
    static __device__ __forceinline__ double exact(uint64_t x) {
        return __longlong_as_double((long long)(x | B_LO)) - 4503599627370496.0;
    }
    // Word w of a little-endian word array, zero past its end (indices known at compile time).
    static __device__ __forceinline__ uint32_t word(const uint32_t* v, int w) { return w < N ? v[w] : 0u; }

    // The 52-bit limbs of a field element, as exact doubles.
    static __device__ __forceinline__ void split(double* d, const uint32_t* v) {
#pragma unroll
        for (int j = 0; j < L; j++) {
            const int w = (52 * j) >> 5, s = (52 * j) & 31;
            const uint32_t lo = __funnelshift_r(word(v, w), word(v, w + 1), s);
            const uint32_t hi = __funnelshift_r(word(v, w + 1), word(v, w + 2), s) & 0xFFFFFu;
            d[j] = __hiloint2double((int)(hi | 0x43300000u), (int)lo) - 4503599627370496.0;
        }
    }

    // c_lo += low half of a b, c_hi += high half (bit patterns; see the top).
    static __device__ __forceinline__ void partial(double a, double b, uint64_t& c_lo, uint64_t& c_hi) {
        const double hi = __fma_rz(a, b, 20282409603651670423947251286016.0);               // 2^104
        const double s = __dsub_rz(20282409603651674927546878656512.0, hi);                 // 2^104 + 2^52
        const double lo = __fma_rz(a, b, s);
        c_lo += bits(lo);
        c_hi += bits(hi);
    }

    // r = a b / 2^(32N) mod p, fully reduced, for a and b in limbs (values below p).
    static __device__ __forceinline__ void mul_limbs(uint32_t* r, const double* a, const double* b) {
        uint64_t c[2 * L];
#pragma unroll
        for (int k = 0; k < 2 * L; k++) c[k] = BIAS.v[k];
#pragma unroll
        for (int i = 0; i < L; i++)
#pragma unroll
            for (int j = 0; j < L; j++) partial(a[i], b[j], c[i + j], c[i + j + 1]);
        uint64_t carry = 0;
#pragma unroll
        for (int k = 0; k < L - 1; k++) {
            const uint64_t t = c[k] + carry;
            const uint64_t t52 = t & M52;
            const double q = exact((t52 * PINV) & M52);
            c[k + 1] += bits(__fma_rz(q, P52.v[0], 20282409603651670423947251286016.0));
            carry = (t >> 52) + (t52 != 0);
#pragma unroll
            for (int j = 1; j < L; j++) partial(q, P52.v[j], c[k + j], c[k + j + 1]);
        }
        c[L - 1] += carry;
        {
            const double q = exact((c[L - 1] * PINV) & MLAST);
#pragma unroll
            for (int j = 0; j < L; j++) partial(q, P52.v[j], c[L - 1 + j], c[L + j]);
        }
        // Columns L-1 .. 2L-1 to 52-bit digits; the value sits LAST bits into column L-1.
#pragma unroll
        for (int k = L - 1; k < 2 * L - 1; k++) {
            c[k + 1] += c[k] >> 52;
            c[k] &= M52;
        }
        uint32_t t[N];
#pragma unroll
        for (int w = 0; w < N; w++) {
            const int bit = 52 * (L - 1) + LAST + 32 * w;
            const int k = bit / 52, s = bit % 52;
            uint64_t x = c[k] >> s;
            if (s > 20 && k + 1 < 2 * L) x |= c[k + 1] << (52 - s);
            t[w] = (uint32_t)x;
        }
        // t < 2p: subtract p once where it fits.
        uint32_t d[N], borrow = 0;
#pragma unroll
        for (int w = 0; w < N; w++) {
            const uint64_t x = (uint64_t)t[w] - P::MOD[w] - borrow;
            d[w] = (uint32_t)x;
            borrow = (uint32_t)(x >> 63);
        }
#pragma unroll
        for (int w = 0; w < N; w++) r[w] = borrow ? t[w] : d[w];
    }

    static __device__ __forceinline__ void mul(uint32_t* r, const uint32_t* a, const uint32_t* b) {
        double x[L], y[L];
        split(x, a);
        split(y, b);
        mul_limbs(r, x, y);
    }
};
