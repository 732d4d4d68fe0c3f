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
#include "inverse.cuh"

template <class F>
struct __align__(16) fp2g {
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

    // Lane l's share of a Karatsuba Fq2 product: x0 y0 (l = 0), x1 y1 (l = 1), (x0 + x1)(y0 + y1)
    // (l = 2 and up).  Inline: no call in the chain's one wait.
    static __device__ __forceinline__ F lane_product(uint32_t l, const F& x0, const F& x1, const F& y0, const F& y1) {
        const F sx = x0 + x1, sy = y0 + y1;
        F x, y;
#pragma unroll
        for (int j = 0; j < F::N; j++) {
            x.v[j] = l == 0 ? x0.v[j] : l == 1 ? x1.v[j] : sx.v[j];
            y.v[j] = l == 0 ? y0.v[j] : l == 1 ? y1.v[j] : sy.v[j];
        }
        return F::mul_inline(x, y);
    }
    // The three Karatsuba products x0 y0, x1 y1, (x0 + x1)(y0 + y1), one per lane, shared.
    static __device__ __forceinline__ void products(const F& x0, const F& x1, const F& y0, const F& y1, F& p0, F& p1,
                                                    F& p2) {
#ifdef __CUDA_ARCH__
        const uint32_t lane = threadIdx.x & 31, l = lane & 3, base = lane & ~3u;
        const unsigned mask = 0xFu << base;
        const F p = lane_product(l, x0, x1, y0, y1);
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
        F t = inverse_divsteps(c0.sqr() + c1.sqr());  // inverse.cuh
        return {c0 * t, (c1 * t).neg()};
    }
    static __device__ __forceinline__ fp2g load(const uint32_t* p) { return {F::load(p), F::load(p + F::WORDS)}; }

    // ---- batches: up to BATCH_MAX independent Fq2 products by the whole warp at once.
    // The operands go to the warp's slots in shared memory (every lane stores the same
    // values), run() has lane group g = lane / 3 (ten groups of three lanes, lanes 30 and
    // 31 idle) multiply slot r + g in round r / 10 with its three lanes each forming one
    // base-field product, and writes the product over the slot's first operand; get()
    // reads it back.  So a tower operation made of k independent Fq2 products waits on
    // ceil(k / 10) base-field products instead of k Fq2 products.  The whole warp must run
    // it together (all 32 lanes, converged: the tower's branches depend only on values all
    // lanes share); at most BATCH_WARPS warps a block use it.  One batch at a time per warp:
    // every get() of one batch comes before the next put().
    static constexpr int BATCH_MAX = 20, BATCH_WARPS = 8, GROUP = 3, GROUPS = 10;
    // words of one slot: x, then y, then four words of padding, so that the ten groups' loads
    // of a round (one slot each, SLOT words apart) fall in different shared-memory banks
    static constexpr int SLOT = 2 * WORDS + 4;
    struct batch {
        uint32_t* s;
        __device__ __forceinline__ batch() : s(scratch()) {}
        __device__ __forceinline__ void put(int j, const fp2g& x, const fp2g& y) {
            x.store(s + j * SLOT);
            y.store(s + j * SLOT + WORDS);
        }
        __device__ __forceinline__ fp2g get(int j) const { return load(s + j * SLOT); }
        __device__ __forceinline__ void run(int k) { run_batch(k); }
    };

    // ---- parts: the additions around a batch's products split over the lanes.  The tower's
    // operations are a few like computations on different values (an Fq12 product's three
    // Fq6 products, a cyclotomic squaring's three Fq4 squarings); run by every lane on the same
    // values, their additions (~26 instructions each) cost as many issue slots as one thread's.
    // So lane group q = part(n) of n (lanes 32q/n ..) computes only part q, with the same
    // instructions as the others on its own values (pick() selects them: data, not branches),
    // and hands its result on through the slots (exchange: sync, store, sync, load, sync).
    // On the host the parts run one after another (for_parts).
    static __device__ __forceinline__ int part(int n) {
#ifdef __CUDA_ARCH__
        return (int)(((threadIdx.x & 31) * (uint32_t)n) >> 5);
#else
        return 0;
#endif
    }
    template <int NP, class Body>
    static __device__ __forceinline__ void for_parts(Body&& body) {
#ifdef __CUDA_ARCH__
        body(part(NP));
#else
        for (int q = 0; q < NP; q++) body(q);
#endif
    }
    static __device__ __forceinline__ void warp_sync() {
#ifdef __CUDA_ARCH__
        __syncwarp();
#endif
    }
    // Between warps of a block (pairing.cuh's two-warp Miller loop): a word another warp
    // polls, and the fence that orders the stores before it.
    // (On the host, tests run the two warps' code as two threads: acquire and release.)
    static __device__ __forceinline__ uint32_t peek(const uint32_t* p) {
#ifdef __CUDA_ARCH__
        return *(const volatile uint32_t*)p;
#else
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
    }
    static __device__ __forceinline__ void poke(uint32_t* p, uint32_t v) {
#ifdef __CUDA_ARCH__
        __threadfence_block();
        __syncwarp();
        if ((threadIdx.x & 31) == 0) *(volatile uint32_t*)p = v;
#else
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
    }
    static __device__ __forceinline__ void wait_for(const uint32_t* p, uint32_t at_least) {
        while (peek(p) < at_least) {
        }
#ifdef __CUDA_ARCH__
        __threadfence_block();
#endif
    }
    // q = 0, 1, 2: a, b, c (selects per word).
    // Every word of all three is read and two selects (PTX selp) keep one: with the plain
    // `q == 0 ? a : ...` NVVM made operands that live in memory (a noinline operation's `this`)
    // conditional loads, a divergent branch and one scalar local load per word (the lane groups'
    // q differ, so the three paths ran one after another: 256 branches in the PTX of a
    // cyclotomic squaring; tests/test_tower_ptx.py).
    static __device__ __forceinline__ uint32_t sel3(int q, uint32_t a, uint32_t b, uint32_t c) {
#ifdef __CUDA_ARCH__
        uint32_t r;
        asm("{\n\t.reg .pred p0, p1;\n\tsetp.eq.s32 p0, %4, 0;\n\tsetp.eq.s32 p1, %4, 1;\n\t"
            "selp.b32 %0, %2, %3, p1;\n\tselp.b32 %0, %1, %0, p0;\n\t}"
            : "=&r"(r) : "r"(a), "r"(b), "r"(c), "r"(q));
        return r;
#else
        return q == 0 ? a : q == 1 ? b : c;
#endif
    }
    static __device__ __forceinline__ F pick(int q, const F& a, const F& b, const F& c) {
        F r;
#pragma unroll
        for (int j = 0; j < F::N; j++) r.v[j] = sel3(q, a.v[j], b.v[j], c.v[j]);
        return r;
    }
    static __device__ __forceinline__ fp2g pick(int q, const fp2g& a, const fp2g& b, const fp2g& c) {
        return {pick(q, a.c0, b.c0, c.c0), pick(q, a.c1, b.c1, c.c1)};
    }
    static __device__ __forceinline__ uint32_t* scratch() {
#ifdef __CUDA_ARCH__
        __shared__ __align__(16) uint32_t slots[BATCH_WARPS][BATCH_MAX * SLOT];
        return slots[threadIdx.x >> 5];
#else
        static thread_local uint32_t slots[BATCH_MAX * SLOT];  // a host thread stands for a warp
        return slots;
#endif
    }
    static __device__ __noinline__ void run_batch(int k) {
        uint32_t* s = scratch();  // (here, not passed: the compiler sees shared memory)
#ifdef __CUDA_ARCH__
        __syncwarp();
        const uint32_t lane = threadIdx.x & 31, g = lane / GROUP, l = lane - GROUP * g, base = GROUP * g;
#pragma unroll 1
        for (int r = 0; r < k; r += GROUPS) {
            const int j = r + (int)g;
            const bool mine = g < GROUPS && j < k;
            const uint32_t* slot = s + (mine ? j : r) * SLOT;  // idle lanes multiply a slot in use
            const F x0 = F::load(slot), x1 = F::load(slot + F::WORDS);
            const F y0 = F::load(slot + WORDS), y1 = F::load(slot + WORDS + F::WORDS);
            const F p = lane_product(l, x0, x1, y0, y1);
            F p0, p1, p2;
#pragma unroll
            for (int w = 0; w < F::N; w++) {
                p0.v[w] = __shfl_sync(0xffffffffu, p.v[w], base < 32 ? base : 0);
                p1.v[w] = __shfl_sync(0xffffffffu, p.v[w], base + 1 < 32 ? base + 1 : 0);
                p2.v[w] = __shfl_sync(0xffffffffu, p.v[w], base + 2 < 32 ? base + 2 : 0);
            }
            const F q = p0 + p1;
            if (mine && l == 0) (p0 - p1).store(s + j * SLOT);
            if (mine && l == 1) (p2 - q).store(s + j * SLOT + F::WORDS);
        }
        __syncwarp();
#else
        for (int j = 0; j < k; j++) {
            const fp2g x = load(s + j * SLOT), y = load(s + j * SLOT + WORDS);
            F p0, p1, p2;
            products(x.c0, x.c1, y.c0, y.c1, p0, p1, p2);
            fp2g{p0 - p1, p2 - p0 - p1}.store(s + j * SLOT);
        }
#endif
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        c0.store(p);
        c1.store(p + F::WORDS);
    }
};
