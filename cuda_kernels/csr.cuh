// The CSR of A and B built on the device from a zkey's raw coeffs records (engine/backends/gpu/key.py,
// device_csr.py).  A record is 11 little-endian u32 words: matrix (0 A, 1 B), row, wire, value (8 words:
// c*R^2 mod r as snarkjs stores it).  snarkjs writes the records row by row, A's and B's terms of a row
// interleaved; our setup writes A's block then B's.  In both, each matrix's records come with rows
// ascending in file order, so a matrix's CSR is its records in file order, de-interleaved: an entry's
// place is the count of its matrix's records before it (a scan of the matrix flags), and
// row_ptr[r] = the count of the matrix's entries with row < r (a lower bound over its rows).  The result
// equals key.csr_from_coeffs's arrays byte for byte (tests/test_gpu_csr.py); a key whose rows are not
// ascending within a matrix takes the host build instead (read_zkey's scan tells).  Curve-independent.
//
//   csr_count       one block a tile of CSR_TILE records: how many are B's  -> tile_b[tile]
//   csr_scan_tiles  one block: tile_b exclusive-scanned in place, tile_b[tiles] = B's total
//   csr_split       each record to its matrix's wires/values/rows at its place
//   csr_row_ptr     row_ptr[0..domain] of one matrix from its (ascending) rows
#pragma once

#define CSR_RECORD_WORDS 11
#define CSR_TILE 256
#define CSR_SCAN_THREADS 1024

extern "C" __global__ void __launch_bounds__(CSR_TILE) csr_count(const uint32_t* records, uint32_t n,
                                                                 uint32_t* tile_b) {
    const uint64_t i = (uint64_t)blockIdx.x * CSR_TILE + threadIdx.x;
    const int is_b = i < n ? (records[i * CSR_RECORD_WORDS] != 0) : 0;
    const int count = __syncthreads_count(is_b);
    if (threadIdx.x == 0) tile_b[blockIdx.x] = (uint32_t)count;
}

extern "C" __global__ void __launch_bounds__(CSR_SCAN_THREADS) csr_scan_tiles(uint32_t* tile_b, uint32_t tiles) {
    __shared__ uint32_t sums[CSR_SCAN_THREADS];
    const uint32_t t = threadIdx.x;
    const uint64_t per = ((uint64_t)tiles + CSR_SCAN_THREADS - 1) / CSR_SCAN_THREADS;
    const uint64_t lo = (uint64_t)t * per;
    const uint64_t hi = lo + per < tiles ? lo + per : tiles;
    uint32_t own = 0;
    for (uint64_t k = lo; k < hi; ++k) own += tile_b[k];
    sums[t] = own;
    __syncthreads();
    for (uint32_t off = 1; off < CSR_SCAN_THREADS; off <<= 1) {  // inclusive scan of the segment sums
        const uint32_t v = t >= off ? sums[t - off] : 0;
        __syncthreads();
        sums[t] += v;
        __syncthreads();
    }
    uint32_t run = sums[t] - own;  // B's records before this thread's segment
    for (uint64_t k = lo; k < hi; ++k) {
        const uint32_t c = tile_b[k];
        tile_b[k] = run;
        run += c;
    }
    if (t == CSR_SCAN_THREADS - 1) tile_b[tiles] = sums[t];
}

// tile_b: csr_scan_tiles's output.  rows_a/rows_b: the matrices' rows in CSR order (for csr_row_ptr).
extern "C" __global__ void __launch_bounds__(CSR_TILE) csr_split(
        const uint32_t* records, uint32_t n, const uint32_t* tile_b,
        uint32_t* wires_a, uint32_t* values_a, uint32_t* rows_a,
        uint32_t* wires_b, uint32_t* values_b, uint32_t* rows_b) {
    __shared__ uint32_t warp_b[CSR_TILE / 32];
    const uint64_t i = (uint64_t)blockIdx.x * CSR_TILE + threadIdx.x;
    const bool live = i < n;
    const uint32_t* rec = records + i * CSR_RECORD_WORDS;
    const bool is_b = live && rec[0] != 0;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t ballot = __ballot_sync(0xffffffffu, is_b);
    if (lane == 0) warp_b[warp] = __popc(ballot);
    __syncthreads();
    if (!live) return;
    uint64_t before = tile_b[blockIdx.x] + __popc(ballot & ((1u << lane) - 1u));  // B's records before i
    for (uint32_t w = 0; w < warp; ++w) before += warp_b[w];
    const uint64_t j = is_b ? before : i - before;
    uint32_t* wires = is_b ? wires_b : wires_a;
    uint32_t* values = is_b ? values_b : values_a;
    uint32_t* rows = is_b ? rows_b : rows_a;
    wires[j] = rec[2];
    rows[j] = rec[1];
    uint4* out = reinterpret_cast<uint4*>(values + j * 8);  // 32 bytes a value: 16-byte aligned
    out[0] = make_uint4(rec[3], rec[4], rec[5], rec[6]);
    out[1] = make_uint4(rec[7], rec[8], rec[9], rec[10]);
}

// row_ptr[r] for r in 0..domain (domain + 1 threads): the first index whose row is >= r (nnz when every
// row is below r).  Rows without entries, runs of them anywhere included, need nothing special.
extern "C" __global__ void __launch_bounds__(256) csr_row_ptr(const uint32_t* rows, uint32_t nnz, uint32_t domain,
                                                              uint32_t* row_ptr) {
    const uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r > domain) return;
    uint32_t lo = 0, hi = nnz;
    while (lo < hi) {
        const uint32_t mid = lo + ((hi - lo) >> 1);
        if ((uint64_t)rows[mid] < r) lo = mid + 1;
        else hi = mid;
    }
    row_ptr[r] = lo;
}
