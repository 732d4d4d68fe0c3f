// A host stand-in for cuda_kernels/field.cuh's fp<P>: the same interface and the same
// Montgomery representation (R = 2^(32N)), in plain C++ (mont_c64.cuh's product), so the
// tower and pairing headers compile with g++ and are checked against the Python reference
// without a GPU.  Used only by tests (tests/test_gpu_pairing.py).
#pragma once
// every standard header first: the macros below must not reach them (libstdc++ spells
// attributes as __noinline__ in places)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define GROTH16_STDINT
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
struct uint4 {
    uint32_t x, y, z, w;
};
inline uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return {a, b, c, d}; }
template <class T>
inline T __ldg(const T* p) { return *p; }

#include "mont_c64.cuh"

template <class P>
struct host_fp {
    static constexpr int N = P::N;
    static constexpr int WORDS = N;
    static constexpr bool SPLIT = false;  // fp2's product over the split pieces is the device's only
    uint32_t v[N];

    static host_fp zero() {
        host_fp r;
        for (int j = 0; j < N; j++) r.v[j] = 0;
        return r;
    }
    static host_fp one() {
        host_fp r;
        for (int j = 0; j < N; j++) r.v[j] = P::ONE[j];
        return r;
    }
    bool is_zero() const {
        uint32_t x = 0;
        for (int j = 0; j < N; j++) x |= v[j];
        return x == 0;
    }
    bool operator==(const host_fp& o) const {
        for (int j = 0; j < N; j++)
            if (v[j] != o.v[j]) return false;
        return true;
    }
    bool operator!=(const host_fp& o) const { return !(*this == o); }
    static bool geq_mod(const uint32_t* t) {
        for (int j = N - 1; j >= 0; j--) {
            if (t[j] != P::MOD[j]) return t[j] > P::MOD[j];
        }
        return true;
    }
    friend host_fp operator+(const host_fp& a, const host_fp& b) {
        host_fp r;
        uint64_t c = 0;
        for (int j = 0; j < N; j++) {
            c += (uint64_t)a.v[j] + b.v[j];
            r.v[j] = (uint32_t)c;
            c >>= 32;
        }
        if (c || geq_mod(r.v)) {  // p < 2^(32N-1): c is always 0, kept for clarity
            uint64_t br = 0;
            for (int j = 0; j < N; j++) {
                uint64_t x = (uint64_t)r.v[j] - P::MOD[j] - br;
                r.v[j] = (uint32_t)x;
                br = (x >> 32) & 1;
            }
        }
        return r;
    }
    friend host_fp operator-(const host_fp& a, const host_fp& b) {
        host_fp r;
        uint64_t br = 0;
        for (int j = 0; j < N; j++) {
            uint64_t x = (uint64_t)a.v[j] - b.v[j] - br;
            r.v[j] = (uint32_t)x;
            br = (x >> 32) & 1;
        }
        if (br) {
            uint64_t c = 0;
            for (int j = 0; j < N; j++) {
                c += (uint64_t)r.v[j] + P::MOD[j];
                r.v[j] = (uint32_t)c;
                c >>= 32;
            }
        }
        return r;
    }
    friend host_fp operator*(const host_fp& a, const host_fp& b) {
        host_fp r;
        mont_mul_c64<P>(r.v, a.v, b.v);
        return r;
    }
    static host_fp mul_inline(const host_fp& a, const host_fp& b) { return a * b; }
    host_fp& operator+=(const host_fp& b) { return *this = *this + b; }
    host_fp& operator-=(const host_fp& b) { return *this = *this - b; }
    host_fp& operator*=(const host_fp& b) { return *this = *this * b; }
    host_fp sqr() const { return *this * *this; }
    host_fp dbl() const { return *this + *this; }
    host_fp neg() const { return zero() - *this; }
    host_fp inverse() const {
        host_fp acc = one();
        for (int w = N - 1; w >= 0; w--)
            for (int bit = 31; bit >= 0; bit--) {
                acc = acc.sqr();
                if ((P::MODM2[w] >> bit) & 1) acc = acc * *this;
            }
        return acc;
    }
    static host_fp load(const uint32_t* p) {
        host_fp r;
        for (int j = 0; j < N; j++) r.v[j] = p[j];
        return r;
    }
    static host_fp load_ro(const uint32_t* p) { return load(p); }
    void store(uint32_t* p) const {
        for (int j = 0; j < N; j++) p[j] = v[j];
    }
};
