// Regrouping passes of the binned bucket sort (msm.cuh's msm_bin first, then two of these instead of
// msm_place).  Each reads an order grouped by key >> in_shift, every group already at its keys' final
// range (the offsets of the count and scan), and writes one grouped by key >> out_shift at the same
// ranges; with out_shift = 0 that is the sorted order.  msm_place gives every entry a global atomic with
// a return on its bucket's cursor (2e8 at BN254 2^24); here a block takes a slice of the order, counts
// its groups in shared memory, reserves each group's run with one global atomic, stages the slice by
// group in shared memory and writes the runs out whole.  A slice's groups lie between those of its
// first and last entries (the input is grouped, in order); where that range is wider than the tables
// (`local_max`: sparse vectors, whose groups are small) each entry reserves its own slot, as msm_place.
#define RG_THREADS 512
#define RG_PER 8
#define RG_SLICE (RG_THREADS * RG_PER)
#define RG_LOCAL (2 * RG_THREADS)  // groups a slice's tables hold: two a thread in the scan

// Where group g's next `count` entries go: `fill` counts from the group's first slot
// (offsets[g << out_shift]) or, with `fill_is_cursor`, is that slot itself (the scan's cursors).
__device__ __forceinline__ uint32_t regroup_reserve(uint32_t* fill, bool fill_is_cursor, const uint32_t* offsets,
                                                    uint32_t g, uint32_t out_shift, uint32_t count) {
    return (fill_is_cursor ? 0u : offsets[g << out_shift]) + atomicAdd(&fill[g], count);
}

__device__ __forceinline__ void msm_regroup_pass(const uint32_t* in_keys, const uint32_t* in_entries,
                                                 uint32_t in_shift, uint32_t out_shift, uint32_t local_max,
                                                 const uint32_t* offsets, uint32_t K, uint32_t* fill,
                                                 bool fill_is_cursor, uint32_t* out_keys, uint32_t* out_entries,
                                                 uint32_t* shm) {
    uint32_t* count = shm;                     // the slice's entries a group, then the stage's cursors
    uint32_t* delta = shm + RG_LOCAL;          // a group's place in the output minus its place in the stage
    uint32_t* scan_shm = shm + 2 * RG_LOCAL;   // 32 words
    uint2* stage = reinterpret_cast<uint2*>(shm + 2 * RG_LOCAL + 32);  // RG_SLICE (key, entry) pairs
    const uint32_t total = offsets[K];
    const uint32_t p0 = blockIdx.x * RG_SLICE;
    if (p0 >= total) return;  // the whole block
    const uint32_t p1 = min(p0 + RG_SLICE, total);
    const uint32_t ratio = in_shift - out_shift;
    const uint32_t lo = (in_keys[p0] >> in_shift) << ratio;
    const uint32_t range = (((in_keys[p1 - 1] >> in_shift) + 1) << ratio) - lo;
    const uint32_t tid = threadIdx.x;
    uint32_t key[RG_PER], ent[RG_PER];
#pragma unroll
    for (int k = 0; k < RG_PER; k++) {
        const uint32_t p = p0 + k * RG_THREADS + tid;
        key[k] = p < p1 ? in_keys[p] : 0;
        ent[k] = p < p1 ? in_entries[p] : 0;
    }
    if (range > local_max) {  // wide slice: a reservation an entry (lanes of one group share it)
        const uint32_t lane = tid & 31;
#pragma unroll
        for (int k = 0; k < RG_PER; k++) {
            const bool valid = p0 + k * RG_THREADS + tid < p1;
            const uint32_t active = __ballot_sync(0xffffffffu, valid);
            if (!valid) continue;
            const uint32_t g = key[k] >> out_shift;
            const uint32_t peers = __match_any_sync(active, g);
            const uint32_t leader = __ffs(peers) - 1;
            uint32_t base = 0;
            if (lane == leader) base = regroup_reserve(fill, fill_is_cursor, offsets, g, out_shift, __popc(peers));
            base = __shfl_sync(peers, base, leader);
            const uint32_t dst = base + __popc(peers & ((1u << lane) - 1));
            out_entries[dst] = ent[k];
            if (out_keys) out_keys[dst] = key[k];
        }
        return;
    }
    for (uint32_t j = tid; j < RG_LOCAL; j += RG_THREADS) count[j] = 0;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < RG_PER; k++)
        if (p0 + k * RG_THREADS + tid < p1) atomicAdd(&count[(key[k] >> out_shift) - lo], 1u);
    __syncthreads();
    const uint32_t j0 = 2 * tid, c0 = count[j0], c1 = count[j0 + 1];
    uint32_t staged;
    const uint32_t first = block_exclusive_scan(c0 + c1, scan_shm, staged);  // has barriers: counts read
    if (c0) delta[j0] = regroup_reserve(fill, fill_is_cursor, offsets, lo + j0, out_shift, c0) - first;
    if (c1) delta[j0 + 1] = regroup_reserve(fill, fill_is_cursor, offsets, lo + j0 + 1, out_shift, c1) - (first + c0);
    count[j0] = first;
    count[j0 + 1] = first + c0;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < RG_PER; k++)
        if (p0 + k * RG_THREADS + tid < p1) {
            const uint32_t at = atomicAdd(&count[(key[k] >> out_shift) - lo], 1u);
            stage[at] = make_uint2(key[k], ent[k]);
        }
    __syncthreads();
    for (uint32_t j = tid; j < staged; j += RG_THREADS) {  // a group's run: consecutive j, consecutive slots
        const uint2 e = stage[j];
        const uint32_t dst = delta[(e.x >> out_shift) - lo] + j;
        out_entries[dst] = e.y;
        if (out_keys) out_keys[dst] = e.x;
    }
}
