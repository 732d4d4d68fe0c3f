// The CSR of one matrix (A or B) of a zkey's coeffs section, built on the device from the section's
// raw records (engine/backends/gpu/key.py, device_csr.py).  A record is 11 little-endian u32 words:
// matrix, row, wire, value (8 words: c*R^2 mod r as snarkjs stores it).  snarkjs and our setup write
// each matrix as one block of records with rows ascending; for such a block (start, nnz) the CSR is
// the block itself, de-interleaved, plus row_ptr[r] = the number of the block's entries with row < r.
// The result equals key.csr_from_coeffs's arrays byte for byte (tests/test_gpu_csr.py); a key whose
// coeffs are in any other order takes the host build instead.  Curve-independent.
#pragma once

#define CSR_RECORD_WORDS 11

// wires[i] = the block's record i's wire, values[8i..8i+8] = its value words.
extern "C" __global__ void __launch_bounds__(256) csr_split(const uint32_t* records, uint32_t start, uint32_t nnz,
                                                            uint32_t* wires, uint32_t* values) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nnz) return;
    const uint32_t* rec = records + ((uint64_t)start + i) * CSR_RECORD_WORDS;
    wires[i] = rec[2];
    uint4 lo = make_uint4(rec[3], rec[4], rec[5], rec[6]);
    uint4 hi = make_uint4(rec[7], rec[8], rec[9], rec[10]);
    uint4* out = reinterpret_cast<uint4*>(values + i * 8);  // 32 bytes a value: 16-byte aligned
    out[0] = lo;
    out[1] = hi;
}

// row_ptr[r] for r in 0..domain (domain + 1 threads): the first index of the block whose row is >= r
// (a lower bound by binary search over the block's ascending rows; nnz when every row is below r).
// Rows without entries, and runs of them at either end or inside, need nothing special.
extern "C" __global__ void __launch_bounds__(256) csr_row_ptr(const uint32_t* records, uint32_t start, uint32_t nnz,
                                                              uint32_t domain, uint32_t* row_ptr) {
    const uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r > domain) return;
    uint32_t lo = 0, hi = nnz;
    const uint32_t* rows = records + (uint64_t)start * CSR_RECORD_WORDS + 1;
    while (lo < hi) {
        const uint32_t mid = lo + ((hi - lo) >> 1);
        if ((uint64_t)rows[(uint64_t)mid * CSR_RECORD_WORDS] < r) lo = mid + 1;
        else hi = mid;
    }
    row_ptr[r] = lo;
}
