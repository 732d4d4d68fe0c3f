// Pippenger multi-scalar multiplication with signed digits, bucket sorting by counting,
// chunked bucket accumulation (load-balanced however skewed the scalars are), and
// running-sum bucket reduction.  Templated over the point type so G1 and G2 share it.
//
// Layout of one MSM (host picks c, windows W, fold f; groups G = ceil(W / f), B = 2^(c-1)):
//   bases    : f tables of n affine points, table t holding 2^(c*t) * P_i   (t = 0 is the key)
//   key      : bucket id = (w / f) * B + |digit| - 1       (K = G * B buckets)
//   entry    : ((w % f) * n + i) | sign << 31             (which table row, and the sign)
//   result   : sum over groups g of 2^(c*f*g) * sum_b (b+1) * bucket[g][b]
// A batch of k scalar vectors against the same bases (k witnesses of one key) sorts into k
// bucket sets, vector j's keys offset by j*K: one accumulation pass over all of them, k results.
// The XYZZ pass also runs up to MSM_SETS MSMs of one sorted scalar vector against different
// bases at once (a proof's A, B1 and C): grid.y picks the set, each set has its own buckets,
// partial slots, fix-up lists and reduction points, one after another in the scratch, and
// every later kernel treats the sets' bucket groups as more groups.
// The accumulation either adds every bucket's entries in XYZZ (accumulate below), or first
// halves the buckets by rounds of batch-affine additions (msm_affine.cuh) and then adds what
// is left the same way, with `sorted` = null meaning entry p is point p.
#pragma once
#include "curve.cuh"
#include "msm_affine.cuh"

// Signed c-bit digit of window w of a 256-bit scalar (little-endian 32-bit limbs), given the
// carry from window w-1.  Digits lie in [-2^(c-1), 2^(c-1)].
__device__ __forceinline__ int32_t window_digit(const uint32_t* s, uint32_t w, uint32_t c, uint32_t& carry) {
    const uint32_t bit = w * c, limb = bit >> 5, shift = bit & 31;
    uint64_t lo = limb < 8 ? s[limb] : 0, hi = limb + 1 < 8 ? s[limb + 1] : 0;
    uint32_t val = (uint32_t)(((hi << 32) | lo) >> shift) & ((1u << c) - 1);
    val += carry;
    if (val > (1u << (c - 1))) {
        carry = 1;
        return (int32_t)val - (int32_t)(1u << c);
    }
    carry = 0;
    return (int32_t)val;
}

__device__ __forceinline__ void load_scalar(const uint32_t* scalars, uint32_t i, uint32_t* s) {
    const uint4* q = reinterpret_cast<const uint4*>(scalars + 8ull * i);
    uint4 a = q[0], b = q[1];
    s[0] = a.x, s[1] = a.y, s[2] = a.z, s[3] = a.w, s[4] = b.x, s[5] = b.y, s[6] = b.z, s[7] = b.w;
}

// The scalar of this thread (index i of vector blockIdx.y; zero past n) and the vector's first key.
__device__ __forceinline__ bool thread_scalar(const uint32_t* scalars, uint32_t n, uint32_t batch_keys, uint32_t* s,
                                              uint32_t& i, uint32_t& key0) {
    i = blockIdx.x * blockDim.x + threadIdx.x;
    key0 = blockIdx.y * batch_keys;
    const bool valid = i < n;
    if (valid) load_scalar(scalars + 8ull * n * blockIdx.y, i, s);
    else
        for (int j = 0; j < 8; j++) s[j] = 0;
    return valid;
}

// Bucket id of a nonzero digit d of window w (see the layout at the top).
__device__ __forceinline__ uint32_t digit_key(uint32_t key0, uint32_t w, uint32_t fold, uint32_t B, int32_t d) {
    return key0 + (w / fold) * B + (uint32_t)(d < 0 ? -d : d) - 1;
}

// Counting pass (scatter == false) or placement pass (scatter == true) of the bucket sort.
// Lanes of a warp that hit the same bucket share one atomic (skewed inputs, e.g. many
// scalars equal to 1, would otherwise serialise on one counter).
template <bool scatter>
__device__ __forceinline__ void msm_digits(const uint32_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                           uint32_t fold, uint32_t batch_keys, uint32_t* counters,
                                           uint32_t* sorted) {
    uint32_t s[8], i, key0;  // grid.y: the vector of the batch
    const bool valid = thread_scalar(scalars, n, batch_keys, s, i, key0);
    const uint32_t B = 1u << (c - 1);
    const uint32_t lane = threadIdx.x & 31;
    uint32_t carry = 0;
    for (uint32_t w = 0; w < windows; w++) {
        int32_t d = window_digit(s, w, c, carry);
        const bool hit = valid && d != 0;
        const uint32_t active = __ballot_sync(0xffffffffu, hit);
        if (!hit) continue;
        const uint32_t key = digit_key(key0, w, fold, B, d);
        const uint32_t peers = __match_any_sync(active, key);
        const uint32_t leader = __ffs(peers) - 1;
        uint32_t base = 0;
        if (lane == leader) base = atomicAdd(&counters[key], __popc(peers));
        if (scatter) {
            base = __shfl_sync(peers, base, leader);
            const uint32_t rank = __popc(peers & ((1u << lane) - 1));
            sorted[base + rank] = ((w % fold) * n + i) | (d < 0 ? 0x80000000u : 0u);
        }
    }
}

// Exclusive scan of `count` counters into offsets[0..count] (offsets[count] = total) and a
// copy for the placement pass's cursors.  Three launches: per-block scan (4096 entries a
// block), scan of the block sums (one block), then the add-back.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t v, uint32_t* shm, uint32_t& total) {
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    uint32_t x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= (uint32_t)o) x += y;
    }
    if (lane == 31) shm[warp] = x;
    __syncthreads();
    if (warp == 0) {
        uint32_t t = lane < nwarps ? shm[lane] : 0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            uint32_t y = __shfl_up_sync(0xffffffffu, t, o);
            if (lane >= (uint32_t)o) t += y;
        }
        shm[lane] = t;  // inclusive prefix of warp sums
    }
    __syncthreads();
    total = shm[nwarps - 1];
    const uint32_t warp_prefix = warp ? shm[warp - 1] : 0;
    __syncthreads();
    return warp_prefix + x - v;
}

// Binned sort, for sorts whose `sorted` array is far larger than the L2 cache: the direct placement
// (msm_digits<true>) writes every entry to a random 4-byte slot of it after a global atomic on its
// bucket's counter (BN254 G1 2^24: 2e8 entries, 12.2 ms, and the count's 2.5 ms).  Instead:
//   bin count: each block counts its digits by coarse bin (key >> shift, MSM_BINS bins over all keys) in
//          shared memory and adds its counts to the bins' (a global atomic a bin a block);
//   bin:   a block of MSM_BINS threads takes a scalar each, groups its block's (key, entry) pairs by bin
//          in shared memory, reserves each bin's run at the bin's cursor (its scanned counts) and writes
//          the runs out whole: the binned order, each bin at its keys' final range;
// then msm_regroup.cuh's passes turn the bins into groups of 2^m keys and those into keys, each after
// counting its groups over the order before it (where a slice of it holds few groups).
#define MSM_BINS 256

// This thread's scalar (blocks of MSM_BINS threads, grid.y the vector of the batch) and the block's digits
// counted by bin into hist (shared memory, MSM_BINS words); returns whether the thread has a scalar.
__device__ __forceinline__ bool block_bin_hist(const uint32_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                               uint32_t fold, uint32_t batch_keys, uint32_t shift, uint32_t* hist,
                                               uint32_t* s, uint32_t& i, uint32_t& key0) {
    const bool valid = thread_scalar(scalars, n, batch_keys, s, i, key0);
    const uint32_t B = 1u << (c - 1);
    hist[threadIdx.x] = 0;
    __syncthreads();
    uint32_t carry = 0;
    for (uint32_t w = 0; w < windows; w++) {
        const int32_t d = window_digit(s, w, c, carry);
        if (valid && d != 0) atomicAdd(&hist[digit_key(key0, w, fold, B, d) >> shift], 1u);
    }
    __syncthreads();
    return valid;
}

// The bins' counts.
__device__ __forceinline__ void msm_bin_count_pass(const uint32_t* scalars, uint32_t n, uint32_t c,
                                                   uint32_t windows, uint32_t fold, uint32_t batch_keys,
                                                   uint32_t shift, uint32_t* bin_counts, uint32_t* hist) {
    uint32_t s[8], i, key0;
    block_bin_hist(scalars, n, c, windows, fold, batch_keys, shift, hist, s, i, key0);
    if (hist[threadIdx.x]) atomicAdd(&bin_counts[threadIdx.x], hist[threadIdx.x]);
}

__device__ __forceinline__ void msm_bin_pass(const uint32_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                             uint32_t fold, uint32_t batch_keys, uint32_t shift,
                                             uint32_t* bin_cursor, uint32_t* bin_keys, uint32_t* bin_entries,
                                             uint32_t* shm) {
    uint32_t* hist = shm;                 // pairs of this block in each bin
    uint32_t* start = shm + MSM_BINS;     // their exclusive prefix: the bin's run in the stage
    uint32_t* cursor = shm + 2 * MSM_BINS;
    uint32_t* out = shm + 3 * MSM_BINS;   // where the bin's run goes in the binned order
    uint32_t* scan_shm = shm + 4 * MSM_BINS;
    uint2* stage = reinterpret_cast<uint2*>(shm + 4 * MSM_BINS + 32);  // blockDim.x * windows pairs
    const uint32_t tid = threadIdx.x;
    uint32_t s[8], i, key0;
    const bool valid = block_bin_hist(scalars, n, c, windows, fold, batch_keys, shift, hist, s, i, key0);
    const uint32_t B = 1u << (c - 1);
    uint32_t total;
    const uint32_t mine = hist[tid];
    const uint32_t first = block_exclusive_scan(mine, scan_shm, total);
    start[tid] = first;
    cursor[tid] = first;
    if (mine) out[tid] = atomicAdd(&bin_cursor[tid], mine);
    __syncthreads();
    uint32_t carry = 0;
    for (uint32_t w = 0; w < windows; w++) {
        const int32_t d = window_digit(s, w, c, carry);
        if (valid && d != 0) {
            const uint32_t key = digit_key(key0, w, fold, B, d);
            const uint32_t at = atomicAdd(&cursor[key >> shift], 1u);
            stage[at] = make_uint2(key, ((w % fold) * n + i) | (d < 0 ? 0x80000000u : 0u));
        }
    }
    __syncthreads();
    for (uint32_t j = tid; j < total; j += blockDim.x) {  // a bin's run: consecutive j, consecutive slots
        const uint2 e = stage[j];
        const uint32_t b = e.x >> shift;
        const uint32_t at = out[b] + (j - start[b]);
        bin_keys[at] = e.x;
        bin_entries[at] = e.y;
    }
}

#include "msm_regroup.cuh"

#define MSM_SETS 3

// Up to MSM_SETS pointers a kernel argument each (set y uses the y-th).
__device__ __forceinline__ const uint32_t* msm_pick(uint32_t y, const uint32_t* p0, const uint32_t* p1,
                                                    const uint32_t* p2) {
    return y == 0 ? p0 : y == 1 ? p1 : p2;
}

// The XYZZ pass's chunk (entries a thread).  `chunking` is the plan's bound T, or, with bit 31 set, T in bits
// 0-15, the layout's chunk count / 128 in bits 16-26 and log2 of the least chunk in bits 27-30
// (engine/backends/gpu/msm.py chunking_arg).  Then a vector with fewer entries L than the plan allows for (a
// witness: its zeros make none, its ones all fall in one bucket) spreads them over the layout's threads,
// ceil(L / chunks) a thread, instead of leaving most of them idle (BLS12-381 G1 at 2^24, all values 0 or 1:
// 4300 of 135k threads busy, 16.6 ms for 6.9M entries); at least the least chunk (a bucket cut across more
// chunks costs its fix-up more additions) and at most T.  The kernels of one pass compute it from the same L,
// so they agree on every chunk's bounds.
__device__ __forceinline__ uint32_t msm_chunk(uint32_t chunking, uint32_t L) {
    if (!(chunking >> 31)) return chunking;
    const uint32_t T = chunking & 0xffffu, least = 1u << ((chunking >> 27) & 15u);
    const uint64_t chunks = (uint64_t)((chunking >> 16) & 0x7ffu) << 7;
    const uint32_t even = (uint32_t)(((uint64_t)L + chunks - 1) / chunks);
    return min(T, max(least, even));
}

template <class Aff, class Acc>
struct msm_kernels {
    // One thread per chunk of T consecutive sorted entries (T = msm_chunk(chunking, L)); a run of
    // entries of one bucket that is the whole bucket goes straight to `buckets`, a cut run goes to
    // the chunk's partial slot (2t: the chunk's first run, 2t+1: its last run).
    // SETS: set blockIdx.y, its bases (the caller's pick), its K buckets, its partial slots
    // (partial_words apart); a single MSM keeps its own kernel, the code it was tuned as.
    template <bool SETS>
    static __device__ __forceinline__ void accumulate(const uint32_t* sorted, const uint32_t* offsets, uint32_t K,
                                                      const uint32_t* bases, uint32_t chunking, uint32_t* buckets,
                                                      uint32_t* partials, uint32_t partial_words) {
        if constexpr (SETS) {
            buckets += (uint64_t)blockIdx.y * K * Acc::WORDS;
            partials += (uint64_t)blockIdx.y * partial_words;
        }
        const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
        const uint32_t L = offsets[K], T = msm_chunk(chunking, L);
        const uint64_t s0_64 = (uint64_t)t * T;
        if (s0_64 >= L) return;
        const uint32_t s0 = (uint32_t)s0_64;
        const uint32_t e0 = min(s0 + T, L);
        uint32_t k = bucket_at(offsets, 0, K, s0);
        uint32_t b_start = offsets[k], b_end = offsets[k + 1];
        uint32_t run_start = s0;
        Acc acc = Acc::inf();
        for (uint32_t p = s0; p < e0; p++) {
            const uint32_t e = sorted ? sorted[p] : p;
            const uint32_t idx = e & 0x7fffffffu;
            Aff pt = Aff::load_ro(bases + (uint64_t)idx * Aff::WORDS);
            if (e >> 31) pt = pt.neg();
            acc.add(pt);
            const uint32_t q = p + 1;
            if (q == b_end || q == e0) {
                if (run_start == b_start && q == b_end) {
                    acc.store(buckets + (uint64_t)k * Acc::WORDS);
                } else {
                    const uint64_t slot = 2ull * t + (run_start == s0 ? 0 : 1);
                    acc.store(partials + slot * Acc::WORDS);
                }
                acc = Acc::inf();
                run_start = q;
                if (q < e0) {
                    k = bucket_after(offsets, K, k, q);
                    b_start = offsets[k];
                    b_end = offsets[k + 1];
                }
            }
        }
    }

    // Partial slots of bucket k, in chunk order.
    static __device__ __forceinline__ uint64_t first_slot(uint32_t s, uint32_t T) {
        const uint32_t c_lo = s / T;
        return 2ull * c_lo + (s == c_lo * T ? 0 : 1);
    }

    // One thread per bucket: empty -> infinity; cut across at most `serial_max` chunks -> sum
    // its partials here; across up to `warp_max` -> the warp list (heavy[0..count[0]), a warp
    // a bucket in fix_heavy); across more -> the block list (heavy[K-1], heavy[K-2], ...,
    // count[1] of them: a block a bucket).  The serial sums stay short: on one thread a
    // dependent point addition costs microseconds.
    static __device__ __forceinline__ void fix(const uint32_t* offsets, uint32_t K, uint32_t chunking,
                                               const uint32_t* partials, uint32_t* buckets, uint32_t* heavy,
                                               uint32_t* heavy_count, uint32_t serial_max, uint32_t warp_max,
                                               uint32_t partial_words) {
        // set blockIdx.y: its partials, buckets, lists (K entries each) and counts (two each)
        partials += (uint64_t)blockIdx.y * partial_words;
        buckets += (uint64_t)blockIdx.y * K * Acc::WORDS;
        heavy += (uint64_t)blockIdx.y * K;
        heavy_count += 2 * blockIdx.y;
        const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
        if (k >= K) return;
        const uint32_t T = msm_chunk(chunking, offsets[K]);
        const uint32_t s = offsets[k], e = offsets[k + 1];
        if (s == e) {
            Acc::inf().store(buckets + (uint64_t)k * Acc::WORDS);
            return;
        }
        const uint32_t c_lo = s / T, c_hi = (e - 1) / T;
        if (c_lo == c_hi) return;  // written whole by accumulate
        const uint32_t m = c_hi - c_lo + 1;
        if (m > warp_max) {
            heavy[K - 1 - atomicAdd(heavy_count + 1, 1u)] = k;
            return;
        }
        if (m > serial_max) {
            heavy[atomicAdd(heavy_count, 1u)] = k;
            return;
        }
        Acc acc = Acc::load(partials + first_slot(s, T) * Acc::WORDS);
        for (uint32_t c = c_lo + 1; c <= c_hi; c++) acc.add(Acc::load(partials + 2ull * c * Acc::WORDS));
        acc.store(buckets + (uint64_t)k * Acc::WORDS);
    }

    static __device__ __forceinline__ Acc shfl_down(const Acc& v, uint32_t o, uint32_t width) {
        Acc other;
        const uint32_t* src = reinterpret_cast<const uint32_t*>(&v);
        uint32_t* dst = reinterpret_cast<uint32_t*>(&other);
#pragma unroll
        for (int j = 0; j < Acc::WORDS; j++) dst[j] = __shfl_down_sync(0xffffffffu, src[j], o, width);
        return other;
    }

    // Sum over each group of `width` lanes (a power of two up to 32) of one value per lane,
    // valid in the group's first lane: a shuffle tree, depth log2(width).  The whole warp calls it.
    static __device__ __forceinline__ Acc group_sum(Acc v, uint32_t width) {
        const uint32_t lane = threadIdx.x & (width - 1);
#pragma unroll 1
        for (uint32_t o = width >> 1; o > 0; o >>= 1) {
            Acc other = shfl_down(v, o, width);
            if (lane + o < width) v.add(other);
        }
        return v;
    }

    static __device__ __forceinline__ Acc warp_sum(Acc v) { return group_sum(v, 32); }

    // Block-wide sum of one value per thread (result valid in thread 0): a shuffle tree in
    // each warp, then one over the warp sums.  Depth 5 + log2(warps) additions.
    static __device__ __forceinline__ Acc block_sum(Acc v, uint32_t* shm) {
        const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
        v = warp_sum(v);
        if (lane == 0) v.store(shm + warp * Acc::WORDS);
        __syncthreads();
        if (warp == 0) {
            v = lane < nwarps ? Acc::load(shm + lane * Acc::WORDS) : Acc::inf();
            v = warp_sum(v);
        }
        __syncthreads();
        return v;
    }

    // The partial sums of a cut bucket k shared over `lanes` threads: thread `lane` == 0 takes
    // the first chunk's slot, each thread every lanes-th later chunk from c_lo + 1 + lane.
    static __device__ __forceinline__ Acc partial_share(const uint32_t* offsets, uint32_t k, uint32_t T,
                                                        const uint32_t* partials, uint32_t lane, uint32_t lanes) {
        const uint32_t s = offsets[k], e = offsets[k + 1];
        const uint32_t c_lo = s / T, c_hi = (e - 1) / T;
        Acc acc = Acc::inf();
        if (lane == 0) acc = Acc::load(partials + first_slot(s, T) * Acc::WORDS);
        for (uint32_t c = c_lo + 1 + lane; c <= c_hi; c += lanes) acc.add(Acc::load(partials + 2ull * c * Acc::WORDS));
        return acc;
    }

    // Where slice j of a block-list bucket (slices > 1) leaves its sum: the partial slot of its thread 0's
    // first chunk, which no other block reads (slice 0: the bucket's first slot); ~0 where the slice has
    // no chunk.
    static __device__ __forceinline__ uint64_t slice_slot(const uint32_t* offsets, uint32_t k, uint32_t T,
                                                          uint32_t j) {
        const uint32_t s = offsets[k], e = offsets[k + 1];
        const uint32_t c_lo = s / T, c_hi = (e - 1) / T;
        if (j == 0) return first_slot(s, T);
        const uint64_t c = (uint64_t)c_lo + 1 + (uint64_t)j * blockDim.x;
        return c <= c_hi ? 2 * c : ~0ull;
    }

    // The block list (`slices` blocks a bucket, grid-stride over the (bucket, slice) pairs: one bucket
    // can hold most of a witness's entries, its ones, cut across ~10^4-10^5 chunks), then the warp list
    // (a group of `lanes` lanes a bucket, grid-stride over every group of the grid); fix's counts say
    // how long each list is.  `lanes_slices`: lanes in bits 0-7, slices in bits 8-15 (0 or 1: a block a
    // bucket, its sum straight to the bucket; more: each slice's sum to its slice_slot, fix_join's to add).
    static __device__ __forceinline__ void fix_heavy(const uint32_t* heavy, const uint32_t* heavy_count, uint32_t K,
                                                     const uint32_t* offsets, uint32_t chunking, uint32_t* partials,
                                                     uint32_t* buckets, uint32_t partial_words, uint32_t lanes_slices,
                                                     uint32_t* shm) {
        const uint32_t T = msm_chunk(chunking, offsets[K]);
        const uint32_t lanes = lanes_slices & 0xffu, slices = max(1u, (lanes_slices >> 8) & 0xffu);
        partials += (uint64_t)blockIdx.y * partial_words;  // set blockIdx.y, as in fix
        buckets += (uint64_t)blockIdx.y * K * Acc::WORDS;
        heavy += (uint64_t)blockIdx.y * K;
        heavy_count += 2 * blockIdx.y;
        const uint32_t by_block = heavy_count[1];
        for (uint32_t p = blockIdx.x; p < by_block * slices; p += gridDim.x) {
            const uint32_t h = p / slices, j = p - h * slices, k = heavy[K - 1 - h];
            const uint32_t lane = j * blockDim.x + threadIdx.x;
            Acc acc = block_sum(partial_share(offsets, k, T, partials, lane, slices * blockDim.x), shm);
            if (threadIdx.x == 0) {
                if (slices == 1) {
                    acc.store(buckets + (uint64_t)k * Acc::WORDS);
                } else {
                    const uint64_t slot = slice_slot(offsets, k, T, j);
                    if (slot != ~0ull) acc.store(partials + slot * Acc::WORDS);
                }
            }
        }
        const uint32_t by_warp = heavy_count[0];
        const uint32_t per_warp = 32 / lanes, lane = threadIdx.x & (lanes - 1);
        const uint32_t warp = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
        const uint32_t stride = gridDim.x * (blockDim.x >> 5) * per_warp;
        // the loop's bound is the warp's first bucket, so every lane runs the shuffles together
        for (uint32_t h0 = warp * per_warp; h0 < by_warp; h0 += stride) {
            const uint32_t h = h0 + ((threadIdx.x & 31) / lanes);
            Acc acc = h < by_warp ? partial_share(offsets, heavy[h], T, partials, lane, lanes) : Acc::inf();
            acc = group_sum(acc, lanes);
            if (h < by_warp && lane == 0) acc.store(buckets + (uint64_t)heavy[h] * Acc::WORDS);
        }
    }

    // After fix_heavy with slices > 1: each block-list bucket's slice sums (thread j takes slice j, j <
    // slices <= blockDim.x) into the bucket, a block a bucket, grid-stride.  blockDim.x must be fix_heavy's.
    static __device__ __forceinline__ void fix_join(const uint32_t* heavy, const uint32_t* heavy_count, uint32_t K,
                                                    const uint32_t* offsets, uint32_t chunking,
                                                    const uint32_t* partials, uint32_t* buckets,
                                                    uint32_t partial_words, uint32_t slices, uint32_t* shm) {
        const uint32_t T = msm_chunk(chunking, offsets[K]);
        partials += (uint64_t)blockIdx.y * partial_words;
        buckets += (uint64_t)blockIdx.y * K * Acc::WORDS;
        heavy += (uint64_t)blockIdx.y * K;
        heavy_count += 2 * blockIdx.y;
        const uint32_t by_block = heavy_count[1];
        for (uint32_t h = blockIdx.x; h < by_block; h += gridDim.x) {
            const uint32_t k = heavy[K - 1 - h];
            Acc acc = Acc::inf();
            if (threadIdx.x < slices) {
                const uint64_t slot = slice_slot(offsets, k, T, threadIdx.x);
                if (slot != ~0ull) acc = Acc::load(partials + slot * Acc::WORDS);
            }
            acc = block_sum(acc, shm);
            if (threadIdx.x == 0) acc.store(buckets + (uint64_t)k * Acc::WORDS);
        }
    }

    // sum_b (b+1) * bucket[b] over segment sgi (L buckets from lo = sgi * L) of group g: running
    // sums from the top, plus lo * (segment sum).
    static __device__ __forceinline__ Acc segment_value(const uint32_t* buckets, uint32_t B, uint32_t g,
                                                       uint32_t sgi, uint32_t L) {
        const uint32_t lo = sgi * L, hi = min(lo + L, B);
        Acc run = Acc::inf(), acc = Acc::inf();
        for (uint32_t j = hi; j-- > lo;) {
            run.add(Acc::load(buckets + ((uint64_t)g * B + j) * Acc::WORDS));
            acc.add(run);
        }
        run.mul_small(lo);
        acc.add(run);
        return acc;
    }

    // A block per (blockIdx.x: blockDim.x segments of L buckets, blockIdx.y: group): each
    // thread its segment's value, the block's sum to seg_out[g * gridDim.x + blockIdx.x] (the
    // tree sum's first pass in the same kernel: one launch and one round trip fewer).
    static __device__ __forceinline__ void reduce_segments(const uint32_t* buckets, uint32_t B, uint32_t L,
                                                           uint32_t* seg_out, uint32_t* shm) {
        const uint32_t segs = (B + L - 1) / L, g = blockIdx.y;
        const uint32_t sgi = blockIdx.x * blockDim.x + threadIdx.x;
        Acc acc = sgi < segs ? segment_value(buckets, B, g, sgi, L) : Acc::inf();
        acc = block_sum(acc, shm);
        if (threadIdx.x == 0) acc.store(seg_out + ((uint64_t)g * gridDim.x + blockIdx.x) * Acc::WORDS);
    }

    // One pass of a tree sum over `count` points per group (grid.y = groups): block b of
    // group g sums `per_thread * blockDim.x` consecutive points into out[g * gridDim.x + b].
    static __device__ __forceinline__ void tree_sum(const uint32_t* in, uint32_t count, uint32_t per_thread,
                                                    uint32_t* out, uint32_t* shm) {
        const uint32_t g = blockIdx.y, b = blockIdx.x;
        const uint64_t base = (uint64_t)g * count;
        const uint32_t start = b * blockDim.x * per_thread;
        Acc acc = Acc::inf();
        for (uint32_t j = 0; j < per_thread; j++) {
            const uint32_t idx = start + j * blockDim.x + threadIdx.x;
            if (idx < count) acc.add(Acc::load(in + (base + idx) * Acc::WORDS));
        }
        acc = block_sum(acc, shm);
        if (threadIdx.x == 0) acc.store(out + ((uint64_t)g * gridDim.x + b) * Acc::WORDS);
    }

    // One thread a (set, vector of the batch) (blockIdx.x = set * batch + vector): Horner over
    // its groups, shifting by c*fold bits between them; set y's result j at results[y] + j * stride.
    static __device__ __forceinline__ void combine(const uint32_t* group_out, uint32_t groups, uint32_t shift,
                                                   uint32_t* r0, uint32_t* r1, uint32_t* r2, uint32_t batch,
                                                   uint32_t stride) {
        if (threadIdx.x != 0) return;
        group_out += (uint64_t)blockIdx.x * groups * Acc::WORDS;
        const uint32_t y = blockIdx.x / batch, j = blockIdx.x % batch;
        uint32_t* result = const_cast<uint32_t*>(msm_pick(y, r0, r1, r2)) + (uint64_t)j * stride;
        Acc acc = Acc::load(group_out + (uint64_t)(groups - 1) * Acc::WORDS);
        for (uint32_t g = groups - 1; g-- > 0;) {
            for (uint32_t d = 0; d < shift; d++) acc.dbl();
            acc.add(Acc::load(group_out + (uint64_t)g * Acc::WORDS));
        }
        acc.store(result);
    }

    // Window tables for fold > 1: table t holds 2^(c*t) * P_i (affine), t = 1..fold-1.
    // An affine form costs an inversion (about 380 products, twice the c doublings of a level),
    // so a thread inverts the ZZZ of up to TABLE_BATCH of its levels at once (Montgomery's
    // trick), keeping (X*ZZ^2, Y) in each level's own slot meanwhile: x = X/ZZ = X*ZZ^2/ZZZ^2
    // and y = Y/ZZZ, as ZZ^3 = ZZZ^2.  The batch's prefix products and ZZZs sit in local memory.
    static constexpr uint32_t TABLE_BATCH = 16;
    static __device__ __forceinline__ void precompute(uint32_t* bases, uint32_t n, uint32_t c, uint32_t fold) {
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        Aff p = Aff::load(bases + (uint64_t)i * Aff::WORDS);
        using F = decltype(p.x);
        const Aff inf{F::zero(), F::zero()};
        if (p.is_inf()) {  // every multiple is infinity (all-zero, as the key writes it)
#pragma unroll 1
            for (uint32_t t = 1; t < fold; t++) inf.store(bases + ((uint64_t)t * n + i) * Aff::WORDS);
            return;
        }
        Acc acc = Acc::from_affine(p);
        F before[TABLE_BATCH], zzz[TABLE_BATCH];
#pragma unroll 1
        for (uint32_t t0 = 1; t0 < fold; t0 += TABLE_BATCH) {
            const uint32_t t1 = min(fold, t0 + TABLE_BATCH);
            F run = F::one();
#pragma unroll 1
            for (uint32_t t = t0; t < t1; t++) {
#pragma unroll 1
                for (uint32_t d = 0; d < c; d++) acc.dbl();
                const bool at_inf = acc.is_inf();  // not for points of the group's prime order
                before[t - t0] = run;
                zzz[t - t0] = at_inf ? F::one() : acc.zzz;
                run = run * zzz[t - t0];
                const Aff held = at_inf ? inf : Aff{acc.x * acc.zz.sqr(), acc.y};
                held.store(bases + ((uint64_t)t * n + i) * Aff::WORDS);
            }
            F inv = run.inverse();  // 1 / (ZZZ_t0 ... ZZZ_(t1-1))
#pragma unroll 1
            for (uint32_t t = t1; t-- > t0;) {
                const F u = inv * before[t - t0];  // 1 / ZZZ_t
                inv = inv * zzz[t - t0];
                uint32_t* slot = bases + ((uint64_t)t * n + i) * Aff::WORDS;
                const Aff held = Aff::load(slot);
                const Aff out{held.x * u.sqr(), held.y * u};
                out.store(slot);
            }
        }
    }
};
