// NTT over Fr in passes of up to 10 levels, each pass a shared-memory sub-transform run as
// radix-4 register rounds.
//
// DIF (Gentleman-Sande) takes natural order to bit-reversed order; DIT (Cooley-Tukey) takes
// bit-reversed to natural.  The prover chains iNTT as DIF (with the coset factor g^j / n
// applied as its last pass writes) and NTT as DIT, so no bit-reversal pass is ever run.
// Twiddles come from one table of entries for w^j, j < n/2 (w^-j for the inverse), with w the
// table's root; a transform of size 2^k reads it at stride 2^(K-k) (K = the table's log).
// An entry is w^j in Montgomery form, or, where the field allows Shoup products (F::SHOUP:
// 2r < 2^256, both scalar fields) and SH asks for them, the pair (w^j, floor(w^j 2^256 / r)):
// 92 instead of 121 wide products a twiddle product, at twice the table's bytes.  Which form a
// transform takes is measured per curve and size (engine/backends/gpu/ntt.py shoup_twiddles):
// BN254's large transforms run faster on the smaller Montgomery table (perf/RESULTS.md).
#pragma once
#include "field.cuh"

#ifndef NTT_EO_PRODUCTS
#define NTT_EO_PRODUCTS 1
#endif
#ifndef NTT_BRANCH_FREE
#define NTT_BRANCH_FREE 0
#endif

template <class F, bool SH = F::SHOUP>
struct ntt_kernels {
    static_assert(!SH || F::SHOUP, "Shoup twiddles need 2p < 2^(32N)");
    static constexpr int TW = SH ? 2 * F::N : F::N;  // words per twiddle entry

    // Shared memory holds each element as two 16-byte halves in two planes (half h of
    // element e at plane h, slot e), so loads and stores are 128-bit and a warp touching
    // consecutive elements hits consecutive 16-byte words.
    static __device__ __forceinline__ F shm_load(const uint32_t* shm, uint32_t count, uint32_t e) {
        const uint4* q = reinterpret_cast<const uint4*>(shm);
        const uint4 x = q[e], y = q[count + e];
        F r;
        r.v[0] = x.x, r.v[1] = x.y, r.v[2] = x.z, r.v[3] = x.w;
        r.v[4] = y.x, r.v[5] = y.y, r.v[6] = y.z, r.v[7] = y.w;
        return r;
    }
    static __device__ __forceinline__ void shm_store(uint32_t* shm, uint32_t count, uint32_t e, const F& x) {
        uint4* q = reinterpret_cast<uint4*>(shm);
        q[e] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
        q[count + e] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
    }

    // The table entry for a twiddle given in Montgomery form.
    static __device__ __forceinline__ void store_twiddle(uint32_t* out, const F& wm) {
        if constexpr (SH) {
            F w, ws;
            wm.shoup_pair(w, ws);
            w.store(out);
            ws.store(out + F::N);
        } else {
            wm.store(out);
        }
    }
    // A twiddle entry in registers (ws: Shoup's quotient, unused for Montgomery twiddles).
    struct entry {
        F w, ws;
    };
    static __device__ __forceinline__ entry load_entry(const uint32_t* tw, uint32_t e) {
        const uint32_t* t = tw + (uint64_t)e * TW;
        entry r;
        r.w = F::load_ro(t);
        if constexpr (SH) r.ws = F::load_ro(t + F::N);
        return r;
    }
    static __device__ __forceinline__ F entry_mul(const F& y, const entry& t) {
        if constexpr (SH)
            return shoup(y, t.w, t.ws);
        else
            return mul(y, t.w);
    }
    // y *= entry e of the table (e = 0 is the twiddle 1: callers skip it)
    // The products run as even/odd chains (F::mul_shoup_eo, F::mul_eo: one IMAD.WIDE.U32.X per
    // 32x32 product, perf/RESULTS.md); NTT_EO_PRODUCTS=0 builds the older forms, for A/B runs.
    static __device__ __forceinline__ F twiddle_mul(const F& y, const uint32_t* tw, uint32_t e) {
        return entry_mul(y, load_entry(tw, e));
    }
    static __device__ __forceinline__ F shoup(const F& y, const F& w, const F& ws) {
        if constexpr (NTT_EO_PRODUCTS)
            return y.mul_shoup_eo(w, ws);
        else
            return y.mul_shoup(w, ws);
    }
    static __device__ __forceinline__ F mul(const F& a, const F& b) {
        if constexpr (NTT_EO_PRODUCTS)
            return a.mul_eo(b);
        else
            return a * b;
    }
    // e = 0 (twiddle 1) skips the product, where a whole warp skips it; NTT_BRANCH_FREE=1 builds
    // every product unconditionally (entry 0 is the twiddle 1), so that ptxas may interleave a
    // round's independent products: an experiment (perf/ntt_ab.py variants "...bf").
    static __device__ __forceinline__ void dif_bfly(F& x, F& y, const uint32_t* tw, uint32_t e) {
        const F s = x + y;
        y = x - y;
        if (NTT_BRANCH_FREE || e) y = twiddle_mul(y, tw, e);
        x = s;
    }
    static __device__ __forceinline__ void dit_bfly(F& x, F& y, const uint32_t* tw, uint32_t e) {
        if (NTT_BRANCH_FREE || e) y = twiddle_mul(y, tw, e);
        const F s = x + y;
        y = x - y;
        x = s;
    }
    // The same with the entry already in registers (the narrow pass loads it a step ahead).
    static __device__ __forceinline__ void dif_bfly(F& x, F& y, const entry& t, bool twiddled) {
        const F s = x + y;
        y = x - y;
        if (twiddled) y = entry_mul(y, t);
        x = s;
    }
    static __device__ __forceinline__ void dit_bfly(F& x, F& y, const entry& t, bool twiddled) {
        if (twiddled) y = entry_mul(y, t);
        const F s = x + y;
        y = x - y;
        x = s;
    }

    // A pass covers levels [l0, l0 + b) of a transform of size 2^k, as 2^(k-b) independent
    // groups of 2^b elements: DIF group = base + M * 2^(k-l0-b), DIT group = base + M * 2^l0,
    // M < 2^b.  Each thread holds four elements of its group in registers and runs two levels
    // on them per round, so a pass is ceil(b/2) rounds with one shared-memory exchange (and
    // barrier) between rounds; the first round reads global memory and the last writes it.
    // A group has 2^(b-2) threads; an odd b starts with a radix-2 round (two butterflies a
    // thread).  Every division is by a power of two, so it is written as a shift.
    //
    // Where a thread's four elements sit in its group for the round starting at local level r:
    // DIF radix-4 (levels r, r+1, distances h then h/2): m, m + h/2, m + h, m + 3h/2;
    // DIT radix-4 (stages r, r+1, distances h then 2h): m, m + h, m + 2h, m + 3h;
    // radix-2 (one level, distance h): butterflies u and u + T, T = 2^(b-2) threads a group.
    static __device__ __forceinline__ void quad(uint32_t idx[4], bool dif, bool radix4, uint32_t u, uint32_t b,
                                                uint32_t r) {
        if (!radix4) {
            const uint32_t lh = dif ? b - 1 - r : r, h = 1u << lh, T = 1u << (b - 2);
#pragma unroll
            for (int q = 0; q < 2; q++) {
                const uint32_t bu = u + q * T, tl = bu & (h - 1);
                idx[2 * q] = ((bu >> lh) << (lh + 1)) | tl;
                idx[2 * q + 1] = idx[2 * q] + h;
            }
        } else if (dif) {
            const uint32_t lh = b - 1 - r, h2 = 1u << (lh - 1);
            const uint32_t m = ((u >> (lh - 1)) << (lh + 1)) | (u & (h2 - 1));
            idx[0] = m, idx[1] = m + h2, idx[2] = m + 2 * h2, idx[3] = m + 3 * h2;
        } else {
            const uint32_t h = 1u << r, m = ((u >> r) << (r + 2)) | (u & (h - 1));
            idx[0] = m, idx[1] = m + h, idx[2] = m + 2 * h, idx[3] = m + 3 * h;
        }
    }

    // The twiddle exponents of a round (an index into the size-n table; 0 is the twiddle 1):
    // a butterfly's twiddle is w_(sub-transform size)^(its offset in the sub-transform's first
    // half).  radix-4: e[0] for the first level's first pair, e[1] for its second pair, e[2]
    // for the second level (DIF: one twiddle for both pairs; DIT: e[0] serves both first-level
    // pairs, e[1] and e[2] the second level's).  radix-2: e[0], e[1] for the two butterflies.
    static __device__ __forceinline__ void round_twiddles(uint32_t e[3], bool dif, bool radix4, const uint32_t idx[4],
                                                          uint32_t k, uint32_t l0, uint32_t b, uint32_t r, uint32_t ls,
                                                          uint32_t lo) {
        const uint32_t quarter = 1u << (k - 2);  // w^(n/4): the step between a radix-4 round's pairs
        if (dif) {
            const uint32_t h = 1u << (b - 1 - r), hm = (radix4 ? h >> 1 : h) - 1;
            e[0] = (((idx[0] & hm) << ls) + lo) << (l0 + r);
            e[1] = radix4 ? e[0] + quarter : (((idx[2] & hm) << ls) + lo) << (l0 + r);
            e[2] = e[0] << 1;
        } else {
            const uint32_t hm = (1u << r) - 1, sh = k - l0 - r - 1;
            e[0] = (((idx[0] & hm) << l0) + lo) << sh;
            e[1] = radix4 ? e[0] >> 1 : (((idx[2] & hm) << l0) + lo) << sh;
            e[2] = (e[0] >> 1) + quarter;
        }
    }
    static __device__ __forceinline__ void dif_round(F x[4], const uint32_t e[3], bool radix4, const uint32_t* tw) {
        if (!radix4) {
            dif_bfly(x[0], x[1], tw, e[0]);
            dif_bfly(x[2], x[3], tw, e[1]);
        } else {
            dif_bfly(x[0], x[2], tw, e[0]);
            dif_bfly(x[1], x[3], tw, e[1]);
            dif_bfly(x[0], x[1], tw, e[2]);
            dif_bfly(x[2], x[3], tw, e[2]);
        }
    }
    static __device__ __forceinline__ void dit_round(F x[4], const uint32_t e[3], bool radix4, const uint32_t* tw) {
        if (!radix4) {
            dit_bfly(x[0], x[1], tw, e[0]);
            dit_bfly(x[2], x[3], tw, e[1]);
        } else {
            dit_bfly(x[0], x[1], tw, e[0]);
            dit_bfly(x[2], x[3], tw, e[0]);
            dit_bfly(x[0], x[2], tw, e[1]);
            dit_bfly(x[1], x[3], tw, e[2]);
        }
    }

    // One pass; blockDim.x = groups_per_block * 2^(b-2) (b = 1, a transform of two elements:
    // one thread a group).  scale != null: multiply the element written at position p by
    // scale[bitrev_k(p)] (Montgomery form).
    static __device__ __forceinline__ void pass(bool dif, uint32_t* data, const uint32_t* tw, uint32_t k, uint32_t l0,
                                                uint32_t b, const uint32_t* scale, uint32_t* shm) {
        const uint32_t tpg_log = b >= 2 ? b - 2 : 0, tpg = 1u << tpg_log, size = 1u << b;
        const uint32_t local_g = threadIdx.x >> tpg_log, u = threadIdx.x & (tpg - 1);
        const uint32_t gpb = blockDim.x >> tpg_log;
        const uint32_t g = blockIdx.x * gpb + local_g;
        const uint32_t ls = dif ? k - l0 - b : l0;  // log2 of the stride between group elements
        const uint32_t lo = g & ((1u << ls) - 1), hi = g >> ls;
        const uint64_t base = ((uint64_t)hi << (ls + b)) + lo;
        const uint32_t count = gpb * size, off = local_g * size;
        F x[4];
        uint32_t idx[4] = {0, 1, 0, 1}, e[3];
        if (b == 1) {  // one butterfly a group (a lone level: a transform of two, or a remainder pass)
            x[0] = F::load(data + base * F::N), x[1] = F::load(data + (base + (1ull << ls)) * F::N);
            if (dif)
                dif_bfly(x[0], x[1], tw, lo << l0);
            else
                dit_bfly(x[0], x[1], tw, lo << (k - l0 - 1));
        }
        const uint32_t rounds = b >= 2 ? (b + 1) >> 1 : 0;
        for (uint32_t i = 0, r = 0; i < rounds; i++) {
            const bool radix4 = !(i == 0 && (b & 1));  // an odd b starts with the radix-2 round
            quad(idx, dif, radix4, u, b, r);
            round_twiddles(e, dif, radix4, idx, k, l0, b, r, ls, lo);
            if (i == 0) {
#pragma unroll
                for (int j = 0; j < 4; j++) x[j] = F::load(data + (base + ((uint64_t)idx[j] << ls)) * F::N);
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++) x[j] = shm_load(shm, count, off + idx[j]);
            }
            if (dif)
                dif_round(x, e, radix4, tw);
            else
                dit_round(x, e, radix4, tw);
            r += radix4 ? 2 : 1;
            if (i + 1 < rounds) {
#pragma unroll
                for (int j = 0; j < 4; j++) shm_store(shm, count, off + idx[j], x[j]);
                // Only the threads that share slots need to meet: a warp, when the group has at most
                // 32 threads or both rounds keep each warp's elements in its own 128 slots (DIT
                // rounds starting at level <= 5, DIF rounds whose larger distance is <= 64), else
                // the block.  Warps then drift apart, one warp's loads overlapping another's products
                // (tests/test_gpu_plan.py checks the rule against the slot layout).
                if (b <= 7 || (radix4 && (dif ? b - r <= 5 : r <= 5)))
                    __syncwarp(blockDim.x >= 32 ? 0xffffffffu : (1u << blockDim.x) - 1);
                else
                    __syncthreads();
            }
        }
        const int held = b >= 2 ? 4 : 2;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (j >= held) break;
            const uint64_t pos = base + ((uint64_t)idx[j] << ls);
            if (scale) x[j] = mul(x[j], F::load_ro(scale + (uint64_t)(__brev((uint32_t)pos) >> (32 - k)) * F::N));
            x[j].store(data + pos * F::N);
        }
    }

    // The narrow pass: the same levels, groups and results as `pass`, with two elements a thread (2^(b-1)
    // threads a group) and one level a step.  For small transforms, where `pass` has about one warp a
    // scheduler and each waits out its own product and twiddle loads (Nsight Compute at 2^16: no warp
    // eligible 85% of the cycles), twice the warps hide each other's latency.
    //
    // At the step on group bit s (DIT: s = 0 .. b-1; DIF: s = b-1 .. 0) thread u holds the elements
    // M = lo_s(u) | j << s | hi_s(u) << (s+1), j = 0, 1: its bits below s are M's, the rest M's above s.
    // Moving to the next bit swaps one thread bit with the register bit: each thread of a pair (lane
    // distance m) sends the element the other needs, by shuffle where m < 32, else through shared memory
    // (two planes of 16-byte halves, double-buffered: one barrier an exchange).
    static __device__ __forceinline__ void exchange(F x[2], uint32_t u, uint32_t m, uint32_t* shm, uint32_t& buf,
                                                    uint32_t warp_mask) {
        const bool low = !(u & m);
        F send = low ? x[1] : x[0], got;
        if (m < 32) {
#pragma unroll
            for (int w = 0; w < F::N; w++) got.v[w] = __shfl_xor_sync(warp_mask, send.v[w], m);
        } else {
            uint32_t* plane = shm + (buf++ & 1) * blockDim.x * F::N;
            shm_store(plane, blockDim.x, threadIdx.x, send);
            __syncthreads();
            got = shm_load(plane, blockDim.x, threadIdx.x ^ m);
        }
        if (low)
            x[1] = got;
        else
            x[0] = got;
    }
    static __device__ __forceinline__ void pass_narrow(bool dif, uint32_t* data, const uint32_t* tw, uint32_t k,
                                                       uint32_t l0, uint32_t b, const uint32_t* scale,
                                                       uint32_t* shm) {
        const uint32_t tpg_log = b - 1, tpg = 1u << tpg_log;
        const uint32_t local_g = threadIdx.x >> tpg_log, u = threadIdx.x & (tpg - 1);
        const uint32_t gpb = blockDim.x >> tpg_log;
        const uint32_t g = blockIdx.x * gpb + local_g;
        const uint32_t ls = dif ? k - l0 - b : l0;
        const uint32_t lo = g & ((1u << ls) - 1), hi = g >> ls;
        const uint64_t base = ((uint64_t)hi << (ls + b)) + lo;
        const uint32_t warp_mask = blockDim.x >= 32 ? 0xffffffffu : (1u << blockDim.x) - 1;
        auto at = [&](uint32_t s, uint32_t j) {  // M of register j at the step on bit s
            const uint32_t below = u & ((1u << s) - 1);
            return below | (j << s) | ((u >> s) << (s + 1));
        };
        auto exponent = [&](uint32_t i) {  // the twiddle of step i's butterfly (0: the twiddle 1)
            const uint32_t s = dif ? b - 1 - i : i, below = u & ((1u << s) - 1);
            return dif ? ((below << ls) + lo) << (l0 + i) : ((below << l0) + lo) << (k - l0 - s - 1);
        };
        F x[2];
        const uint32_t first = dif ? b - 1 : 0;
#pragma unroll
        for (uint32_t j = 0; j < 2; j++) x[j] = F::load(data + (base + ((uint64_t)at(first, j) << ls)) * F::N);
        // Each step's twiddle is loaded a step ahead, so its latency hides behind the exchange and the
        // product before it.
        uint32_t e = exponent(0);
        entry t = load_entry(tw, e);
        uint32_t buf = 0;  // shared-memory exchanges so far: consecutive ones use alternate buffers
        for (uint32_t i = 0; i < b; i++) {
            uint32_t e_next = 0;
            entry t_next;
            if (i + 1 < b) {
                e_next = exponent(i + 1);
                t_next = load_entry(tw, e_next);
            }
            if (i) {
                const uint32_t h = 1u << (dif ? b - 1 - i : i);
                exchange(x, u, dif ? h : h >> 1, shm, buf, warp_mask);
            }
            if (dif)
                dif_bfly(x[0], x[1], t, e != 0);
            else
                dit_bfly(x[0], x[1], t, e != 0);
            e = e_next;
            t = t_next;
        }
        const uint32_t last = dif ? 0 : b - 1;
#pragma unroll
        for (uint32_t j = 0; j < 2; j++) {
            const uint64_t pos = base + ((uint64_t)at(last, j) << ls);
            if (scale) x[j] = mul(x[j], F::load_ro(scale + (uint64_t)(__brev((uint32_t)pos) >> (32 - k)) * F::N));
            x[j].store(data + pos * F::N);
        }
    }

    // Twiddle table: entry j for w^j, j < n (w in Montgomery form at base_p).
    static __device__ __forceinline__ void twiddles(uint32_t* out, const uint32_t* base_p, uint32_t n) {
        const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
        if (j >= n) return;
        F base = F::load(base_p), acc = F::one();
        for (uint32_t e = j; e; e >>= 1) {
            if (e & 1) acc = acc * base;
            base = base.sqr();
        }
        store_twiddle(out + (uint64_t)j * TW, acc);
    }

    // x * w for plain x and w through a twiddle entry (tests: the NTT's twiddle product, Shoup
    // with its pair built here, or Montgomery).
    static __device__ __forceinline__ void twiddle_test(const uint32_t* x, const uint32_t* w, uint32_t n,
                                                        uint32_t* out) {
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        const F wm = F::load(w + (uint64_t)i * F::N).to_mont(), y = F::load(x + (uint64_t)i * F::N);
        if constexpr (SH) {
            F wp, ws;
            wm.shoup_pair(wp, ws);
            shoup(y, wp, ws).store(out + (uint64_t)i * F::N);
        } else {
            mul(y, wm).store(out + (uint64_t)i * F::N);
        }
    }

    // out[j] = scale * base^(j + start) for j < n (twiddle and coset tables).
    static __device__ __forceinline__ void powers(uint32_t* out, const uint32_t* base_p, const uint32_t* scale_p,
                                                  uint32_t n) {
        const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
        if (j >= n) return;
        F base = F::load(base_p), acc = F::load(scale_p);
        for (uint32_t e = j; e; e >>= 1) {
            if (e & 1) acc = acc * base;
            base = base.sqr();
        }
        acc.store(out + (uint64_t)j * F::N);
    }

    static __device__ __forceinline__ void bit_reverse(const uint32_t* in, uint32_t* out, uint32_t k) {
        const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
        if (j >= (1u << k)) return;
        const uint32_t rj = k ? __brev(j) >> (32 - k) : 0;
        F::load(in + (uint64_t)j * F::N).store(out + (uint64_t)rj * F::N);
    }

    // data[j] *= table[j] (natural index), or by table[bitrev(j)] when bitrev != 0.
    static __device__ __forceinline__ void scale(uint32_t* data, const uint32_t* table, uint32_t k) {
        const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
        if (j >= (1u << k)) return;
        F x = F::load(data + (uint64_t)j * F::N) * F::load_ro(table + (uint64_t)j * F::N);
        x.store(data + (uint64_t)j * F::N);
    }
};
