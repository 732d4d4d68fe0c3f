// The binned bucket sort (engine/backends/gpu/msm_sort.py): the bucket sort's count and placement
// with shared-memory atomics instead of one global atomic an entry (BN254 G1 2^24, 2e8 entries:
// the global count 2.5 ms, the global cursors' placement 7.2 ms).  Four launches:
//   msm_bin_count: blocks of MSM_BINS scalars histogram their pairs' coarse bins (key >> shift) in
//                  shared memory, one global atomic a nonzero (block, bin) into bin_count;
//   msm_bin_scan:  one block: bin_start = exclusive scan of bin_count (bin_start[bins] = total),
//                  bin_count zeroed for the next pass's fill counters;
//   msm_bin_runs:  msm.cuh's bin pass: each block's pairs grouped by bin, written out as runs in the
//                  bin's range from bin_start[bin] (the binned order: bin_keys, bin_entries);
//   msm_bin_sort:  a block a bin: a counting sort of its 2^shift keys in shared memory, which writes
//                  the bin's keys' offsets (the direct count's scan, exactly) and places the entries.
// Keys and entries as in msm.cuh's layout; a bucket's entries in another order than the direct
// placement's (an atomic order both), which the accumulation does not mind.
#pragma once
#include "msm.cuh"

#define MSM_SORT_THREADS 1024
#define MSM_SORT_UNROLL 4  // entries a thread loads before its atomics (memory-level parallelism)
#define MSM_NO_KEY 0xffffffffu

// Pass 1: this block's pairs in each coarse bin, added to bin_count[bin] (grid (blocks, batch)).
__device__ __forceinline__ void msm_bin_count_pass(const uint32_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                                   uint32_t fold, uint32_t batch_keys, uint32_t shift,
                                                   uint32_t* bin_count, uint32_t* hist) {
    uint32_t s[8], i, key0;
    const bool valid = thread_scalar(scalars, n, batch_keys, s, i, key0);
    const uint32_t B = 1u << (c - 1), tid = threadIdx.x;
    hist[tid] = 0;
    __syncthreads();
    uint32_t carry = 0;
    for (uint32_t w = 0; w < windows; w++) {
        const int32_t d = window_digit(s, w, c, carry);
        if (valid && d != 0) atomicAdd(&hist[digit_key(key0, w, fold, B, d) >> shift], 1u);
    }
    __syncthreads();
    if (hist[tid]) atomicAdd(&bin_count[tid], hist[tid]);
}

// Pass 2 (one block of MSM_BINS threads): bin_start[0..bins] from the counts; the counts zeroed,
// msm_bin_runs's fill counters.
__device__ __forceinline__ void msm_bin_scan_pass(uint32_t* bin_count, uint32_t bins, uint32_t* bin_start,
                                                  uint32_t* shm) {
    const uint32_t t = threadIdx.x;
    const uint32_t v = t < bins ? bin_count[t] : 0;
    uint32_t total;
    const uint32_t first = block_exclusive_scan(v, shm, total);
    if (t < bins) bin_start[t] = first;
    if (t == 0) bin_start[bins] = total;
    bin_count[t] = 0;
}

// The bin's pairs from j0 on that this thread takes (MSM_NO_KEY past the bin's end), as local keys.
__device__ __forceinline__ void msm_sort_load(const uint32_t* bin_keys, uint32_t j0, uint32_t hi, uint32_t key_lo,
                                              uint32_t* t) {
#pragma unroll
    for (int u = 0; u < MSM_SORT_UNROLL; u++) {
        const uint32_t j = j0 + u * blockDim.x + threadIdx.x;
        t[u] = j < hi ? bin_keys[j] - key_lo : MSM_NO_KEY;
    }
}

// Pass 4: block b sorts bin b, pairs [bin_start[b], bin_start[b+1]) of the binned order, by its
// 2^shift local keys t = key - (b << shift), in `cnt` (2^shift words of dynamic shared memory):
// count (lanes of a warp with one key share an atomic: a skewed bin, such as all-ones scalars'
// key 0, does not serialise on one counter), a block-wide exclusive scan that also writes the keys'
// offsets, then place with the counters as cursors.  `passes` > 1 places the keys in that many
// sub-ranges one after another (the pairs read again each time): fewer slots written at once, for
// the L2 to merge.
__device__ __forceinline__ void msm_bin_sort_pass(const uint32_t* bin_keys, const uint32_t* bin_entries,
                                                  const uint32_t* bin_start, uint32_t bins, uint32_t K,
                                                  uint32_t shift, uint32_t passes, uint32_t* offsets,
                                                  uint32_t* sorted, uint32_t* cnt, uint32_t* scan_shm) {
    const uint32_t b = blockIdx.x, tid = threadIdx.x, lane = tid & 31;
    const uint32_t size = 1u << shift, key_lo = b << shift;
    const uint32_t lo = bin_start[b], hi = bin_start[b + 1];
    const uint32_t stride = MSM_SORT_UNROLL * blockDim.x;
    for (uint32_t t = tid; t < size; t += blockDim.x) cnt[t] = 0;
    __syncthreads();
    for (uint32_t j0 = lo; j0 < hi; j0 += stride) {
        uint32_t t[MSM_SORT_UNROLL];
        msm_sort_load(bin_keys, j0, hi, key_lo, t);
#pragma unroll
        for (int u = 0; u < MSM_SORT_UNROLL; u++) {
            const bool hit = t[u] != MSM_NO_KEY;
            const uint32_t active = __ballot_sync(0xffffffffu, hit);
            if (hit) {
                const uint32_t peers = __match_any_sync(active, t[u]);
                if (lane == __ffs(peers) - 1) atomicAdd(&cnt[t[u]], __popc(peers));
            }
        }
    }
    __syncthreads();
    // thread tid scans counters [first, last): consecutive keys, so one block scan orders them all
    const uint32_t per = (size + blockDim.x - 1) / blockDim.x;
    const uint32_t first = min(tid * per, size), last = min(first + per, size);
    uint32_t sum = 0;
    for (uint32_t t = first; t < last; t++) sum += cnt[t];
    uint32_t total;
    uint32_t run = block_exclusive_scan(sum, scan_shm, total);
    const uint32_t keys_here = min(size, K - key_lo);  // the last bin may end before 2^shift keys
    for (uint32_t t = first; t < last; t++) {
        const uint32_t v = cnt[t];
        cnt[t] = run;
        if (t < keys_here) offsets[key_lo + t] = lo + run;
        run += v;
    }
    if (b == bins - 1 && tid == 0) offsets[K] = hi;
    __syncthreads();
    for (uint32_t part = 0; part < passes; part++) {
        for (uint32_t j0 = lo; j0 < hi; j0 += stride) {
            uint32_t t[MSM_SORT_UNROLL], e[MSM_SORT_UNROLL];
            msm_sort_load(bin_keys, j0, hi, key_lo, t);
#pragma unroll
            for (int u = 0; u < MSM_SORT_UNROLL; u++) {
                const bool mine = t[u] != MSM_NO_KEY && (uint32_t)(((uint64_t)t[u] * passes) >> shift) == part;
                e[u] = mine ? bin_entries[j0 + u * blockDim.x + tid] : 0;
                if (!mine) t[u] = MSM_NO_KEY;
            }
#pragma unroll
            for (int u = 0; u < MSM_SORT_UNROLL; u++) {
                const bool hit = t[u] != MSM_NO_KEY;
                const uint32_t active = __ballot_sync(0xffffffffu, hit);
                if (hit) {
                    const uint32_t peers = __match_any_sync(active, t[u]);
                    const uint32_t leader = __ffs(peers) - 1;
                    uint32_t at = 0;
                    if (lane == leader) at = atomicAdd(&cnt[t[u]], __popc(peers));
                    at = __shfl_sync(peers, at, leader);
                    sorted[lo + at + __popc(peers & ((1u << lane) - 1))] = e[u];
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(MSM_BINS) msm_bin_count(const uint32_t* scalars, uint32_t n, uint32_t c,
                                                                      uint32_t windows, uint32_t fold,
                                                                      uint32_t batch_keys, uint32_t shift,
                                                                      uint32_t* bin_count) {
    __shared__ uint32_t hist[MSM_BINS];
    msm_bin_count_pass(scalars, n, c, windows, fold, batch_keys, shift, bin_count, hist);
}
extern "C" __global__ void __launch_bounds__(MSM_BINS) msm_bin_scan(uint32_t* bin_count, uint32_t bins,
                                                                     uint32_t* bin_start) {
    __shared__ uint32_t shm[32];
    msm_bin_scan_pass(bin_count, bins, bin_start, shm);
}
// blocks of MSM_BINS threads, dynamic shared memory for the stage (msm_sort.bin_shared_bytes)
extern "C" __global__ void __launch_bounds__(MSM_BINS) msm_bin_runs(const uint32_t* scalars, uint32_t n, uint32_t c,
                                                                     uint32_t windows, uint32_t fold,
                                                                     uint32_t batch_keys, uint32_t shift,
                                                                     const uint32_t* bin_start, uint32_t* bin_fill,
                                                                     uint32_t* bin_keys, uint32_t* bin_entries) {
    extern __shared__ uint32_t shm[];
    msm_bin_runs_pass(scalars, n, c, windows, fold, batch_keys, shift, bin_start, 0, bin_fill, bin_keys, bin_entries,
                      shm);
}
// a block of MSM_SORT_THREADS a bin, 2^shift words of dynamic shared memory
extern "C" __global__ void __launch_bounds__(MSM_SORT_THREADS, 2) msm_bin_sort(
    const uint32_t* bin_keys, const uint32_t* bin_entries, const uint32_t* bin_start, uint32_t bins, uint32_t K,
    uint32_t shift, uint32_t passes, uint32_t* offsets, uint32_t* sorted) {
    extern __shared__ uint32_t cnt[];
    __shared__ uint32_t scan_shm[32];
    msm_bin_sort_pass(bin_keys, bin_entries, bin_start, bins, K, shift, passes, offsets, sorted, cnt, scan_shm);
}
