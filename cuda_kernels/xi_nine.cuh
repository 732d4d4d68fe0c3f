// BN254's xi = 9 + u: the products by xi in the tower (tower.cuh's mul_xi) are 9x - y and
// 9x + y mod p.  Written as small() (three doublings and an addition, each reduced) they were
// four reductions and ~100 instructions each; here one (t13tower, perf/RESULTS.md).
#pragma once

// The two PTX blocks of xi_nine share all but how y enters (p - y, or y): their common parts, as
// string literals that concatenate into each block's text.
#define XI_NINE_HEAD \
    "{\n\t" \
    ".reg .u32 w<8>, t<9>, l<8>, h<8>, c<9>, d<8>, q, b;\n\t" \
    ".reg .u64 top;\n\t" \
    ".reg .f64 f;\n\t" \
    ".reg .pred nb;\n\t"
#define XI_NINE_P_MINUS_Y \
    "sub.cc.u32 w0, %24, %16;\n\t" \
    "subc.cc.u32 w1, %25, %17;\n\t" \
    "subc.cc.u32 w2, %26, %18;\n\t" \
    "subc.cc.u32 w3, %27, %19;\n\t" \
    "subc.cc.u32 w4, %28, %20;\n\t" \
    "subc.cc.u32 w5, %29, %21;\n\t" \
    "subc.cc.u32 w6, %30, %22;\n\t" \
    "subc.u32 w7, %31, %23;\n\t"
#define XI_NINE_X \
    "shl.b32 t0, %8, 3;\n\t" \
    "shf.l.wrap.b32 t1, %8, %9, 3;\n\t" \
    "shf.l.wrap.b32 t2, %9, %10, 3;\n\t" \
    "shf.l.wrap.b32 t3, %10, %11, 3;\n\t" \
    "shf.l.wrap.b32 t4, %11, %12, 3;\n\t" \
    "shf.l.wrap.b32 t5, %12, %13, 3;\n\t" \
    "shf.l.wrap.b32 t6, %13, %14, 3;\n\t" \
    "shf.l.wrap.b32 t7, %14, %15, 3;\n\t" \
    "shr.u32 t8, %15, 29;\n\t" \
    "add.cc.u32 t0, t0, %8;\n\t" \
    "addc.cc.u32 t1, t1, %9;\n\t" \
    "addc.cc.u32 t2, t2, %10;\n\t" \
    "addc.cc.u32 t3, t3, %11;\n\t" \
    "addc.cc.u32 t4, t4, %12;\n\t" \
    "addc.cc.u32 t5, t5, %13;\n\t" \
    "addc.cc.u32 t6, t6, %14;\n\t" \
    "addc.cc.u32 t7, t7, %15;\n\t" \
    "addc.u32 t8, t8, 0;\n\t"
#define XI_NINE_ADD(o0, o1, o2, o3, o4, o5, o6, o7) \
    "add.cc.u32 t0, t0, " o0 ";\n\t" \
    "addc.cc.u32 t1, t1, " o1 ";\n\t" \
    "addc.cc.u32 t2, t2, " o2 ";\n\t" \
    "addc.cc.u32 t3, t3, " o3 ";\n\t" \
    "addc.cc.u32 t4, t4, " o4 ";\n\t" \
    "addc.cc.u32 t5, t5, " o5 ";\n\t" \
    "addc.cc.u32 t6, t6, " o6 ";\n\t" \
    "addc.cc.u32 t7, t7, " o7 ";\n\t"
#define XI_NINE_TAIL \
    "addc.u32 t8, t8, 0;\n\t" \
    "mov.b64 top, {t7, t8};\n\t" \
    "cvt.rn.f64.u64 f, top;\n\t" \
    "mul.rn.f64 f, f, %32;\n\t" \
    "cvt.rzi.u32.f64 q, f;\n\t" \
    "mul.lo.u32 l0, q, %24;\n\t" \
    "mul.hi.u32 h0, q, %24;\n\t" \
    "mul.lo.u32 l1, q, %25;\n\t" \
    "mul.hi.u32 h1, q, %25;\n\t" \
    "mul.lo.u32 l2, q, %26;\n\t" \
    "mul.hi.u32 h2, q, %26;\n\t" \
    "mul.lo.u32 l3, q, %27;\n\t" \
    "mul.hi.u32 h3, q, %27;\n\t" \
    "mul.lo.u32 l4, q, %28;\n\t" \
    "mul.hi.u32 h4, q, %28;\n\t" \
    "mul.lo.u32 l5, q, %29;\n\t" \
    "mul.hi.u32 h5, q, %29;\n\t" \
    "mul.lo.u32 l6, q, %30;\n\t" \
    "mul.hi.u32 h6, q, %30;\n\t" \
    "mul.lo.u32 l7, q, %31;\n\t" \
    "mul.hi.u32 h7, q, %31;\n\t" \
    "mov.u32 c0, l0;\n\t" \
    "add.cc.u32 c1, l1, h0;\n\t" \
    "addc.cc.u32 c2, l2, h1;\n\t" \
    "addc.cc.u32 c3, l3, h2;\n\t" \
    "addc.cc.u32 c4, l4, h3;\n\t" \
    "addc.cc.u32 c5, l5, h4;\n\t" \
    "addc.cc.u32 c6, l6, h5;\n\t" \
    "addc.cc.u32 c7, l7, h6;\n\t" \
    "addc.u32 c8, h7, 0;\n\t" \
    "sub.cc.u32 t0, t0, c0;\n\t" \
    "subc.cc.u32 t1, t1, c1;\n\t" \
    "subc.cc.u32 t2, t2, c2;\n\t" \
    "subc.cc.u32 t3, t3, c3;\n\t" \
    "subc.cc.u32 t4, t4, c4;\n\t" \
    "subc.cc.u32 t5, t5, c5;\n\t" \
    "subc.cc.u32 t6, t6, c6;\n\t" \
    "subc.cc.u32 t7, t7, c7;\n\t" \
    "subc.u32 t8, t8, c8;\n\t" \
    "sub.cc.u32 d0, t0, %24;\n\t" \
    "subc.cc.u32 d1, t1, %25;\n\t" \
    "subc.cc.u32 d2, t2, %26;\n\t" \
    "subc.cc.u32 d3, t3, %27;\n\t" \
    "subc.cc.u32 d4, t4, %28;\n\t" \
    "subc.cc.u32 d5, t5, %29;\n\t" \
    "subc.cc.u32 d6, t6, %30;\n\t" \
    "subc.cc.u32 d7, t7, %31;\n\t" \
    "subc.u32 b, t8, 0;\n\t" \
    "setp.eq.u32 nb, b, 0;\n\t" \
    "selp.u32 %0, d0, t0, nb;\n\t" \
    "selp.u32 %1, d1, t1, nb;\n\t" \
    "selp.u32 %2, d2, t2, nb;\n\t" \
    "selp.u32 %3, d3, t3, nb;\n\t" \
    "selp.u32 %4, d4, t4, nb;\n\t" \
    "selp.u32 %5, d5, t5, nb;\n\t" \
    "selp.u32 %6, d6, t6, nb;\n\t" \
    "selp.u32 %7, d7, t7, nb;\n\t" \
    "}\n\t"
#define XI_NINE_OPERANDS \
    : "=r"(r.v[0]), "=r"(r.v[1]), "=r"(r.v[2]), "=r"(r.v[3]), "=r"(r.v[4]), "=r"(r.v[5]), "=r"(r.v[6]), "=r"(r.v[7]) \
    : "r"(x.v[0]), "r"(x.v[1]), "r"(x.v[2]), "r"(x.v[3]), "r"(x.v[4]), "r"(x.v[5]), "r"(x.v[6]), "r"(x.v[7]), "r"(y.v[0]), "r"(y.v[1]), "r"(y.v[2]), "r"(y.v[3]), "r"(y.v[4]), "r"(y.v[5]), "r"(y.v[6]), "r"(y.v[7]), "n"(P::MOD[0]), "n"(P::MOD[1]), "n"(P::MOD[2]), "n"(P::MOD[3]), "n"(P::MOD[4]), "n"(P::MOD[5]), "n"(P::MOD[6]), "n"(P::MOD[7]), "d"(inv)

// 9x - y (MINUS) or 9x + y mod p for reduced x, y (BN254's xi = 9 + u), with one reduction
// instead of small()'s four: v = 9x + (p - y or y) < 10p as an N+1-limb integer, its
// quotient by p estimated from the top 64 bits (a double product: floor(v_top * 2^(32(N-1))
// / p), rounded down, so q or q - 1, never more), v - q p < 2p, one conditional subtraction.
// On the device (8 limbs) one PTX block of carry chains; elsewhere (the host's tests, other
// limb counts) the same steps in 64-bit C++, which tests/test_gpu_pairing.py checks against Python
// (the device's through the tower's results).
template <bool MINUS, template <class> class FP, class P>
__device__ __forceinline__ FP<P> xi_nine(const FP<P>& x, const FP<P>& y) {
    constexpr int N = P::N;
    constexpr double ptop = (double)P::MOD[N - 1] + (double)P::MOD[N - 2] / 4294967296.0 +
                            (double)P::MOD[N - 3] / 18446744073709551616.0;
    constexpr double inv = (1.0 / ptop) * (1.0 - 1.0 / 1099511627776.0);  // rounded down (2^-40)
#ifdef __CUDA_ARCH__
    if constexpr (N == 8) {
        FP<P> r;
        if constexpr (MINUS)
            asm(XI_NINE_HEAD XI_NINE_P_MINUS_Y XI_NINE_X XI_NINE_ADD("w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7")
                XI_NINE_TAIL XI_NINE_OPERANDS);
        else
            asm(XI_NINE_HEAD XI_NINE_X XI_NINE_ADD("%16", "%17", "%18", "%19", "%20", "%21", "%22", "%23") XI_NINE_TAIL
                XI_NINE_OPERANDS);
        return r;
    }
#endif
    uint32_t w[N], t[N + 1];
    if constexpr (MINUS) {
        uint32_t br = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            const uint64_t d = (uint64_t)P::MOD[j] - y.v[j] - br;
            w[j] = (uint32_t)d, br = (uint32_t)(d >> 63);
        }
    } else {
#pragma unroll
        for (int j = 0; j < N; j++) w[j] = y.v[j];
    }
    uint64_t c = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        c = (uint64_t)x.v[j] * 9u + w[j] + (c >> 32);
        t[j] = (uint32_t)c;
    }
    t[N] = (uint32_t)(c >> 32);
    const uint64_t top = ((uint64_t)t[N] << 32) | t[N - 1];
    const uint32_t q = (uint32_t)((double)top * inv);
    uint64_t b = 0;  // q p + borrow, the high word carried
#pragma unroll
    for (int j = 0; j < N; j++) {
        const uint64_t m = (uint64_t)q * P::MOD[j] + b;
        const uint32_t lo = (uint32_t)m;
        b = (m >> 32) + (t[j] < lo);
        t[j] -= lo;
    }
    FP<P> r;  // t < 2p now: subtract p once if t >= p
    uint32_t br = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        const uint64_t d = (uint64_t)t[j] - P::MOD[j] - br;
        r.v[j] = (uint32_t)d, br = (uint32_t)(d >> 63);
    }
    const bool keep = br != 0;  // t < p (the (N+1)th word t[N] - b is 0: t < 2p < 2^(32N))
#pragma unroll
    for (int j = 0; j < N; j++) r.v[j] = keep ? t[j] : r.v[j];
    return r;
}

#undef XI_NINE_HEAD
#undef XI_NINE_P_MINUS_Y
#undef XI_NINE_X
#undef XI_NINE_ADD
#undef XI_NINE_TAIL
#undef XI_NINE_OPERANDS
