// Batch-affine bucket accumulation: one round halves every bucket of the sorted entries by
// adding its points in pairs, in affine coordinates, all the pairs' slope denominators of a
// block inverted together (Montgomery's trick: each thread's running product over its m
// slots, a product tree over the block's threads in shared memory).
//
// A round is three kernels, so that no lane waits on an inversion another lane runs: forward
// (prefix products to global memory, the block's tree, its root), invert (one block root a
// thread, every lane busy), backward (tree rebuilt, the root's inverse pushed down, the slots
// walked back).  An affine addition costs 1 product forward, 2 backward (the pair's own
// inverse and the running inverse), then the slope, its square and y: 6 products against 10
// for a mixed XYZZ addition; the tree adds about 4 products a thread (up twice, down once),
// the inversion about 380 products a block of blockDim.x * m additions.  (A first version
// inverted each block's root on one lane inside one kernel: the other 31 lanes and warps of
// the block waited, and it measured 2.4x slower than XYZZ at 2^24.)
//
// Round r reads bucket k's points at in_off[k] .. in_off[k+1] (round 0: sorted entries that
// index the bases, with the sign bit; later rounds: the previous round's points) and writes
// ceil(count/2) points at out_off[k] (an exclusive scan of those halved counts).  Output slot
// o of bucket k is the pair (2j, 2j+1), j = o - out_off[k]; a last odd point is copied.
// Each thread owns m consecutive output slots; all sizes are bounds from n and the plan, so a
// block whose first slot lies past out_off[K] leaves at once (the whole block agrees).
#pragma once
#include "curve.cuh"
#include "msm_buckets.cuh"
#include "inverse.cuh"

template <class Aff>
struct msm_affine_kernels {
    typedef decltype(Aff::x) F;
    static constexpr int FW = F::WORDS;
    enum : uint32_t { TAKE_P = 0, TAKE_Q = 1, ADD = 2, DBL = 3, ZERO = 4 };

    // What P + Q needs, and the denominator of its slope (1 where it needs none).
    static __device__ __forceinline__ uint32_t classify(const Aff& p, const Aff& q, F& den) {
        den = F::one();
        if (q.is_inf()) return TAKE_P;
        if (p.is_inf()) return TAKE_Q;
        if (p.x != q.x) {
            den = q.x - p.x;
            return ADD;
        }
        if (p.y == q.y && !p.y.is_zero()) {
            den = p.y.dbl();
            return DBL;
        }
        return ZERO;  // Q = -P
    }

    static __device__ __forceinline__ Aff load_point(const uint32_t* sorted, const uint32_t* pts, uint32_t p) {
        if (sorted == nullptr) return Aff::load(pts + (uint64_t)p * Aff::WORDS);
        const uint32_t e = sorted[p];
        Aff a = Aff::load_ro(pts + (uint64_t)(e & 0x7fffffffu) * Aff::WORDS);
        return (e >> 31) ? a.neg() : a;
    }

    // The pair of output slot o in bucket k (q = infinity when the bucket's count is odd).
    static __device__ __forceinline__ void load_pair(const uint32_t* sorted, const uint32_t* pts,
                                                     const uint32_t* in_off, const uint32_t* out_off, uint32_t k,
                                                     uint32_t o, Aff& p, Aff& q) {
        const uint32_t a = in_off[k] + 2 * (o - out_off[k]);
        p = load_point(sorted, pts, a);
        if (a + 1 < in_off[k + 1]) q = load_point(sorted, pts, a + 1);
        else q = {F::zero(), F::zero()};
    }

    // The slope denominator of output slot o in bucket k, from the pair's x coordinates alone
    // where they differ and neither is 0 (an ADD: half the pair's bytes); else from both points.
    static __device__ __forceinline__ F den_of(const uint32_t* sorted, const uint32_t* pts, const uint32_t* in_off,
                                               const uint32_t* out_off, uint32_t k, uint32_t o) {
        const uint32_t a = in_off[k] + 2 * (o - out_off[k]);
        if (a + 1 >= in_off[k + 1]) return F::one();  // a last odd point, copied
        const F px = load_x(sorted, pts, a), qx = load_x(sorted, pts, a + 1);
        if (px != qx && !px.is_zero() && !qx.is_zero()) return qx - px;
        Aff p, q;
        load_pair(sorted, pts, in_off, out_off, k, o, p, q);
        F den;
        classify(p, q, den);
        return den;
    }

    static __device__ __forceinline__ F load_x(const uint32_t* sorted, const uint32_t* pts, uint32_t p) {
        if (sorted == nullptr) return F::load(pts + (uint64_t)p * Aff::WORDS);
        return F::load_ro(pts + (uint64_t)(sorted[p] & 0x7fffffffu) * Aff::WORDS);  // the sign bit flips y only
    }

    // Product tree over the block's leaves tree[NT + t] (NT = blockDim.x, a power of two):
    // node i = node 2i * node 2i+1, root at 1.  All threads of the block call it.
    static __device__ __forceinline__ void tree_up(uint32_t* tree) {
        const uint32_t NT = blockDim.x, tid = threadIdx.x;
        __syncthreads();
#pragma unroll 1
        for (uint32_t h = NT >> 1; h >= 1; h >>= 1) {
            if (tid < h) {
                const uint32_t i = h + tid;
                (F::load(tree + 2 * i * FW) * F::load(tree + (2 * i + 1) * FW)).store(tree + i * FW);
            }
            __syncthreads();
        }
    }

    // With the root replaced by its inverse: every node by its inverse, down to the leaves.
    static __device__ __forceinline__ void tree_down(uint32_t* tree) {
        const uint32_t NT = blockDim.x, tid = threadIdx.x;
        __syncthreads();
#pragma unroll 1
        for (uint32_t h = 1; h < NT; h <<= 1) {
            if (tid < h) {
                const uint32_t i = h + tid;
                const F inv = F::load(tree + i * FW);
                const F l = F::load(tree + 2 * i * FW), r = F::load(tree + (2 * i + 1) * FW);
                (inv * r).store(tree + 2 * i * FW);
                (inv * l).store(tree + (2 * i + 1) * FW);
            }
            __syncthreads();
        }
    }

    // This thread's output slots: [first, first + cnt) and the bucket of the first.
    static __device__ __forceinline__ bool slots(const uint32_t* out_off, uint32_t K, uint32_t m, uint32_t& first,
                                                 uint32_t& cnt, uint32_t& k) {
        const uint32_t NT = blockDim.x, tid = threadIdx.x;
        const uint32_t L = out_off[K];
        const uint64_t block_first = (uint64_t)blockIdx.x * NT * m;
        if (block_first >= L) return false;  // the whole block agrees
        const uint64_t first64 = block_first + (uint64_t)tid * m;
        cnt = first64 >= L ? 0 : (uint32_t)min((uint64_t)m, L - first64);
        first = (uint32_t)min(first64, (uint64_t)L);
        k = cnt ? bucket_at(out_off, 0, K, first) : 0;
        return true;
    }

    // Where slot j of this thread keeps its prefix product (coalesced across the block).
    static __device__ __forceinline__ uint64_t prefix_at(uint32_t m, uint32_t j) {
        return (((uint64_t)blockIdx.x * m + j) * blockDim.x + threadIdx.x) * FW;
    }

    // Pass 1: every slot's prefix product of denominators (to `prefix`), each thread's total
    // (to `leaves`), each block's product (to `totals`).  Shared memory: 2 * blockDim.x elements.
    static __device__ __forceinline__ void forward(const uint32_t* sorted, const uint32_t* in, const uint32_t* in_off,
                                                   const uint32_t* out_off, uint32_t K, uint32_t m, uint32_t* prefix,
                                                   uint32_t* leaves, uint32_t* totals, uint32_t* tree) {
        uint32_t first, cnt, k;
        if (!slots(out_off, K, m, first, cnt, k)) return;
        F acc = F::one();
#pragma unroll 1
        for (uint32_t j = 0; j < cnt; j++) {
            const uint32_t o = first + j;
            k = bucket_after(out_off, K, k, o);
            acc.store(prefix + prefix_at(m, j));
            acc = acc * den_of(sorted, in, in_off, out_off, k, o);
        }
        const uint32_t NT = blockDim.x, tid = threadIdx.x;
        acc.store(leaves + ((uint64_t)blockIdx.x * NT + tid) * FW);
        acc.store(tree + (NT + tid) * FW);
        tree_up(tree);
        if (tid == 0) F::load(tree + FW).store(totals + (uint64_t)blockIdx.x * FW);
    }

    // Pass 2: each block product replaced by its inverse, one a thread (all lanes busy).
    static __device__ __forceinline__ void invert(uint32_t* totals, uint32_t count) {
        const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
        if (b < count) F::load(totals + (uint64_t)b * FW).inverse().store(totals + (uint64_t)b * FW);
    }

    // The slots [first, first + cnt) backwards from `inv`, the inverse of their denominators'
    // product: each pair's own inverse (inv times the slot's prefix, from `prefix_of(j)`), its sum.
    template <class Prefix>
    static __device__ __forceinline__ void walk_back(const uint32_t* sorted, const uint32_t* in, const uint32_t* in_off,
                                                     const uint32_t* out_off, uint32_t K, uint32_t first, uint32_t cnt,
                                                     uint32_t k, F inv, Prefix prefix_of, uint32_t* out) {
        const uint32_t k_first = k;
        if (cnt) k = bucket_after(out_off, K, k, first + cnt - 1);
#pragma unroll 1
        for (uint32_t j = cnt; j-- > 0;) {
            const uint32_t o = first + j;
            k = bucket_before(out_off, k_first, k, o);
            Aff p, q;
            load_pair(sorted, in, in_off, out_off, k, o, p, q);
            F den;
            const uint32_t kind = classify(p, q, den);
            const F dinv = inv * prefix_of(j);
            inv = inv * den;
            Aff r;
            if (kind == TAKE_P) r = p;
            else if (kind == TAKE_Q) r = q;
            else if (kind == ZERO) r = {F::zero(), F::zero()};
            else {
                F num;
                if (kind == ADD) num = q.y - p.y;
                else {
                    const F x2 = p.x.sqr();
                    num = x2.dbl() + x2;
                }
                const F lam = num * dinv;
                const F x3 = lam.sqr() - p.x - q.x;
                r = {x3, lam * (p.x - x3) - p.y};
            }
            r.store(out + (uint64_t)o * Aff::WORDS);
        }
    }

    // Pass 3: the block's tree rebuilt from the leaves, its root's inverse from `totals` pushed
    // down to every thread, then the slots backwards.
    static __device__ __forceinline__ void backward(const uint32_t* sorted, const uint32_t* in, const uint32_t* in_off,
                                                    const uint32_t* out_off, uint32_t K, uint32_t m,
                                                    const uint32_t* prefix, const uint32_t* leaves,
                                                    const uint32_t* totals, uint32_t* out, uint32_t* tree) {
        uint32_t first, cnt, k;
        if (!slots(out_off, K, m, first, cnt, k)) return;
        const uint32_t NT = blockDim.x, tid = threadIdx.x;
        F::load(leaves + ((uint64_t)blockIdx.x * NT + tid) * FW).store(tree + (NT + tid) * FW);
        tree_up(tree);
        if (tid == 0) F::load(totals + (uint64_t)blockIdx.x * FW).store(tree + FW);
        tree_down(tree);
        walk_back(sorted, in, in_off, out_off, K, first, cnt, k, F::load(tree + (NT + tid) * FW),
                  [&](uint32_t j) { return F::load(prefix + prefix_at(m, j)); }, out);
    }

    // The whole round in one kernel: the prefixes in shared memory (slot j of thread t at
    // tree + (2 NT + j NT + t) FW, after the tree's 2 NT elements), the block's root inverted
    // by its thread 0 (divsteps, inverse.cuh) while the SM's other resident blocks compute.
    // Points are read one and a half times (forward their x, backward both coordinates) and the
    // sums written: no prefix, leaf or total goes through global memory.  Shared memory: (2 + m) * blockDim.x elements.
    static __device__ __forceinline__ void fused(const uint32_t* sorted, const uint32_t* in, const uint32_t* in_off,
                                                 const uint32_t* out_off, uint32_t K, uint32_t m, uint32_t* out,
                                                 uint32_t* shm) {
        uint32_t first, cnt, k;
        if (!slots(out_off, K, m, first, cnt, k)) return;
        const uint32_t NT = blockDim.x, tid = threadIdx.x;
        uint32_t* tree = shm;
        uint32_t* pre = shm + (uint64_t)(2 * NT + tid) * FW;  // this thread's slot 0; slot j NT * FW further
        F acc = F::one();
        uint32_t kf = k;
#pragma unroll 1
        for (uint32_t j = 0; j < cnt; j++) {
            const uint32_t o = first + j;
            kf = bucket_after(out_off, K, kf, o);
            acc.store(pre + (uint64_t)j * NT * FW);
            acc = acc * den_of(sorted, in, in_off, out_off, kf, o);
        }
        acc.store(tree + (NT + tid) * FW);
        tree_up(tree);
        if (tid == 0) tail_inverse(F::load(tree + FW)).store(tree + FW);
        tree_down(tree);
        walk_back(sorted, in, in_off, out_off, K, first, cnt, k, F::load(tree + (NT + tid) * FW),
                  [&](uint32_t j) { return F::load(pre + (uint64_t)j * NT * FW); }, out);
    }
};

// counts[k] = ceil((in_off[k+1] - in_off[k]) / 2): the next round's bucket sizes.
__device__ __forceinline__ void msm_halve_counts(const uint32_t* in_off, uint32_t K, uint32_t* counts) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < K) counts[k] = (in_off[k + 1] - in_off[k] + 1) >> 1;
}
