// Finding the bucket of a sorted entry from the bucket offsets (non-decreasing, offsets[0] = 0):
// pure integer code, shared by the XYZZ pass and the affine rounds, and compiled by g++ in
// tests/test_msm_buckets_host.py (no CUDA there).  A walk to the next bucket must not step
// over empty buckets one at a time: a batch of mostly-0/1 witnesses leaves 2^(c-1) empty
// buckets between one vector's bucket of ones and the next's.
#pragma once
#ifndef __CUDACC__
#define __device__
#define __forceinline__ inline
#endif

// Largest k in [lo, hi) with offsets[k] <= pos; the caller knows offsets[lo] <= pos.
__device__ __forceinline__ uint32_t bucket_at(const uint32_t* offsets, uint32_t lo, uint32_t hi, uint32_t pos) {
    while (hi - lo > 1) {
        const uint32_t mid = lo + ((hi - lo) >> 1);
        if (offsets[mid] <= pos) lo = mid;
        else hi = mid;
    }
    return lo;
}

// The bucket of pos given k, the bucket of an earlier position (offsets[k] <= pos): k itself
// while pos is still inside it, else a binary search over the buckets after it.
__device__ __forceinline__ uint32_t bucket_after(const uint32_t* offsets, uint32_t K, uint32_t k, uint32_t pos) {
    return offsets[k + 1] > pos ? k : bucket_at(offsets, k + 1, K, pos);
}

// The bucket of pos given k, the bucket of a later position, and lo, the bucket of an
// earlier one (offsets[lo] <= pos): k while pos is inside it, else a search in [lo, k).
__device__ __forceinline__ uint32_t bucket_before(const uint32_t* offsets, uint32_t lo, uint32_t k, uint32_t pos) {
    return offsets[k] <= pos ? k : bucket_at(offsets, lo, k, pos);
}
