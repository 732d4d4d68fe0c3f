// Radix-2 NTT over Fr in passes of up to 10 levels, each pass a shared-memory sub-transform.
//
// DIF (Gentleman-Sande) takes natural order to bit-reversed order; DIT (Cooley-Tukey) takes
// bit-reversed to natural.  The prover chains iNTT as DIF (with the coset factor g^j / n
// applied as its last pass writes) and NTT as DIT, so no bit-reversal pass is ever run.
// Twiddles come from one table tw[j] = w^j, j < n/2 (w^-j for the inverse), with w the
// table's root; a transform of size 2^k reads it at stride 2^(K-k) (K = the table's log).
#pragma once
#include "field.cuh"

template <class F>
struct ntt_kernels {
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

    // One pass over levels [l0, l0 + b) of a DIF transform of size 2^k.  A group is the 2^b
    // elements base + M * stride (stride = 2^(k - l0 - b)); blockDim.x = groups_per_block * 2^(b-1).
    // scale != null: multiply the element written at position p by scale[bitrev_k(p)].
    // Every division is by a power of two, so it is written as a shift.
    static __device__ __forceinline__ void dif_pass(uint32_t* data, const uint32_t* tw, uint32_t tw_stride,
                                                    uint32_t k, uint32_t l0, uint32_t b, const uint32_t* scale,
                                                    uint32_t* shm) {
        const uint32_t half = 1u << (b - 1), size = 1u << b;
        const uint32_t local_g = threadIdx.x >> (b - 1), t = threadIdx.x & (half - 1);
        const uint32_t gpb = blockDim.x >> (b - 1);
        const uint32_t g = blockIdx.x * gpb + local_g;
        const uint32_t ls = k - l0 - b;  // log2(stride)
        const uint32_t lo = g & ((1u << ls) - 1), hi = g >> ls;
        const uint64_t base = ((uint64_t)hi << (k - l0)) + lo;
        const uint32_t count = gpb * size;
        const uint32_t off = local_g * size;
        shm_store(shm, count, off + t, F::load(data + (base + ((uint64_t)t << ls)) * F::N));
        shm_store(shm, count, off + t + half, F::load(data + (base + ((uint64_t)(t + half) << ls)) * F::N));
        __syncthreads();
        for (uint32_t r = 0; r < b; r++) {
            const uint32_t lh = b - 1 - r, h = 1u << lh;  // butterfly distance in this level
            const uint32_t tl = t & (h - 1);
            const uint32_t m0 = ((t >> lh) << (lh + 1)) | tl, m1 = m0 + h;
            F x = shm_load(shm, count, off + m0), y = shm_load(shm, count, off + m1);
            F sum = x + y, d = x - y;
            const uint32_t e = ((tl << ls) + lo) << (l0 + r);
            if (e) d = d * F::load_ro(tw + (uint64_t)e * tw_stride * F::N);
            shm_store(shm, count, off + m0, sum);
            shm_store(shm, count, off + m1, d);
            __syncthreads();
        }
        for (uint32_t m = t; m < size; m += half) {
            const uint64_t pos = base + ((uint64_t)m << ls);
            F x = shm_load(shm, count, off + m);
            if (scale) x = x * F::load_ro(scale + (uint64_t)(__brev((uint32_t)pos) >> (32 - k)) * F::N);
            x.store(data + pos * F::N);
        }
    }

    // One pass over stages [s0, s0 + b) of a DIT transform of size 2^k: group = elements
    // base + M * 2^s0 with base = hi * 2^(s0+b) + lo, lo < 2^s0.
    static __device__ __forceinline__ void dit_pass(uint32_t* data, const uint32_t* tw, uint32_t tw_stride,
                                                    uint32_t k, uint32_t s0, uint32_t b, uint32_t* shm) {
        const uint32_t half = 1u << (b - 1), size = 1u << b;
        const uint32_t local_g = threadIdx.x >> (b - 1), t = threadIdx.x & (half - 1);
        const uint32_t gpb = blockDim.x >> (b - 1);
        const uint32_t g = blockIdx.x * gpb + local_g;
        const uint32_t lo = g & ((1u << s0) - 1), hi = g >> s0;
        const uint64_t base = ((uint64_t)hi << (s0 + b)) + lo;
        const uint32_t count = gpb * size;
        const uint32_t off = local_g * size;
        shm_store(shm, count, off + t, F::load(data + (base + ((uint64_t)t << s0)) * F::N));
        shm_store(shm, count, off + t + half, F::load(data + (base + ((uint64_t)(t + half) << s0)) * F::N));
        __syncthreads();
        for (uint32_t r = 0; r < b; r++) {
            const uint32_t h = 1u << r;
            const uint32_t tl = t & (h - 1);
            const uint32_t m0 = ((t >> r) << (r + 1)) | tl, m1 = m0 + h;
            F x = shm_load(shm, count, off + m0), y = shm_load(shm, count, off + m1);
            const uint32_t e = ((tl << s0) + lo) << (k - s0 - r - 1);
            if (e) y = y * F::load_ro(tw + (uint64_t)e * tw_stride * F::N);
            shm_store(shm, count, off + m0, x + y);
            shm_store(shm, count, off + m1, x - y);
            __syncthreads();
        }
        for (uint32_t m = t; m < size; m += half) {
            const uint64_t pos = base + ((uint64_t)m << s0);
            shm_load(shm, count, off + m).store(data + pos * F::N);
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
