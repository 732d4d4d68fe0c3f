// Regrouping passes of the binned bucket sort (after msm.cuh's bin count and bin passes).  Each reads an
// order grouped by key >> in_shift, every group already at its keys' final range, and writes one grouped
// by key >> out_shift at the same ranges; with out_shift = 0 that is the sorted order.  A block takes a
// slice of RG_SLICE entries of the order.  The slice's groups lie between those of its first and last
// entries (the input is grouped, in order), so for a dense vector a few hundred of them: the counting pass
// counts them in shared memory and adds each count to the group's with one global atomic; after the scan of
// those counts, the regrouping pass reserves each group's run in the slice at the group's cursor with one
// global atomic, stages the slice by group in shared memory and writes the runs out whole (msm_place, which
// this replaced, took a global atomic with a return for every entry: 2e8 at BN254 2^24, 7.2 ms against the
// two regroupings' 2.8 with their counts and scans).  Where a slice's groups span more than `local_max` (sparse vectors, whose groups are
// small), each entry takes its own atomic, lanes of one group sharing it.
#define RG_THREADS 512
#define RG_PER 8
#define RG_SLICE (RG_THREADS * RG_PER)
#define RG_LOCAL (2 * RG_THREADS)  // groups a slice's tables hold: two a thread in the scan

// This block's slice [p0, p1) of an order of *total entries grouped by key >> in_shift, its first output
// group `lo` and the output groups it may touch (`range`), and its keys (and entries), RG_PER a thread.
struct RegroupSlice {
    uint32_t p0, p1, lo, range;
    __device__ __forceinline__ bool load(const uint32_t* in_keys, const uint32_t* in_entries, uint32_t in_shift,
                                         uint32_t out_shift, const uint32_t* total, uint32_t* key, uint32_t* ent) {
        const uint32_t L = *total;
        p0 = blockIdx.x * RG_SLICE;
        if (p0 >= L) return false;  // the whole block
        p1 = min(p0 + RG_SLICE, L);
        const uint32_t ratio = in_shift - out_shift;
        lo = (in_keys[p0] >> in_shift) << ratio;
        range = (((in_keys[p1 - 1] >> in_shift) + 1) << ratio) - lo;
#pragma unroll
        for (int k = 0; k < RG_PER; k++) {
            const uint32_t p = p0 + k * RG_THREADS + threadIdx.x;
            key[k] = p < p1 ? in_keys[p] : 0;
            if (in_entries) ent[k] = p < p1 ? in_entries[p] : 0;
        }
        return true;
    }
    __device__ __forceinline__ bool has(int k) const { return p0 + k * RG_THREADS + threadIdx.x < p1; }
};

// A wide slice's entry: lanes of the warp with the same group g share one atomic on counters[g]; returns the
// lane's slot counters[g] + its rank among them (the regrouping's place; the count ignores it).
__device__ __forceinline__ uint32_t warp_group_add(uint32_t* counters, uint32_t g, uint32_t active) {
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t peers = __match_any_sync(active, g);
    const uint32_t leader = __ffs(peers) - 1;
    uint32_t base = 0;
    if (lane == leader) base = atomicAdd(&counters[g], __popc(peers));
    base = __shfl_sync(peers, base, leader);
    return base + __popc(peers & ((1u << lane) - 1));
}

// counts[g] += the slice's entries of output group g.
__device__ __forceinline__ void msm_regroup_count_pass(const uint32_t* in_keys, uint32_t in_shift, uint32_t out_shift,
                                                       uint32_t local_max, const uint32_t* total, uint32_t* counts,
                                                       uint32_t* count) {
    RegroupSlice sl;
    uint32_t key[RG_PER], ent[RG_PER];
    if (!sl.load(in_keys, nullptr, in_shift, out_shift, total, key, ent)) return;
    const uint32_t tid = threadIdx.x;
    if (sl.range > local_max) {  // wide slice: an atomic an entry (lanes of one group share it)
#pragma unroll
        for (int k = 0; k < RG_PER; k++) {
            const bool valid = sl.has(k);
            const uint32_t active = __ballot_sync(0xffffffffu, valid);
            if (valid) warp_group_add(counts, key[k] >> out_shift, active);
        }
        return;
    }
    for (uint32_t j = tid; j < RG_LOCAL; j += RG_THREADS) count[j] = 0;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < RG_PER; k++)
        if (sl.has(k)) atomicAdd(&count[(key[k] >> out_shift) - sl.lo], 1u);
    __syncthreads();
    for (uint32_t j = tid; j < sl.range; j += RG_THREADS)
        if (count[j]) atomicAdd(&counts[sl.lo + j], count[j]);
}

// The slice's entries to their output groups' runs: group g's next slots from cursor[g] (the scanned counts).
__device__ __forceinline__ void msm_regroup_pass(const uint32_t* in_keys, const uint32_t* in_entries,
                                                 uint32_t in_shift, uint32_t out_shift, uint32_t local_max,
                                                 const uint32_t* total, uint32_t* cursor, uint32_t* out_keys,
                                                 uint32_t* out_entries, uint32_t* shm) {
    uint32_t* count = shm;                     // the slice's entries a group, then the stage's cursors
    uint32_t* delta = shm + RG_LOCAL;          // a group's place in the output minus its place in the stage
    uint32_t* scan_shm = shm + 2 * RG_LOCAL;   // 32 words
    uint2* stage = reinterpret_cast<uint2*>(shm + 2 * RG_LOCAL + 32);  // RG_SLICE (key, entry) pairs
    RegroupSlice sl;
    uint32_t key[RG_PER], ent[RG_PER];
    if (!sl.load(in_keys, in_entries, in_shift, out_shift, total, key, ent)) return;
    const uint32_t tid = threadIdx.x, lo = sl.lo;
    if (sl.range > local_max) {  // wide slice: a reservation an entry (lanes of one group share it)
#pragma unroll
        for (int k = 0; k < RG_PER; k++) {
            const bool valid = sl.has(k);
            const uint32_t active = __ballot_sync(0xffffffffu, valid);
            if (!valid) continue;
            const uint32_t dst = warp_group_add(cursor, key[k] >> out_shift, active);
            out_entries[dst] = ent[k];
            if (out_keys) out_keys[dst] = key[k];
        }
        return;
    }
    for (uint32_t j = tid; j < RG_LOCAL; j += RG_THREADS) count[j] = 0;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < RG_PER; k++)
        if (sl.has(k)) atomicAdd(&count[(key[k] >> out_shift) - lo], 1u);
    __syncthreads();
    const uint32_t j0 = 2 * tid, c0 = count[j0], c1 = count[j0 + 1];
    uint32_t staged;
    const uint32_t first = block_exclusive_scan(c0 + c1, scan_shm, staged);  // has barriers: counts read
    if (c0) delta[j0] = atomicAdd(&cursor[lo + j0], c0) - first;
    if (c1) delta[j0 + 1] = atomicAdd(&cursor[lo + j0 + 1], c1) - (first + c0);
    count[j0] = first;
    count[j0 + 1] = first + c0;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < RG_PER; k++)
        if (sl.has(k)) {
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
