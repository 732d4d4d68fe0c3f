// The Groth16 check on the device (spec §6), for one proof or a batch of one key's proofs.
//
// One proof: e(-pi_a, pi_b) e(L, gamma2) e(pi_c, delta2) == e(alpha1, beta2)^-1, the three
// Miller loops on three warps at once (pi_b's lines made on the fly, gamma2's and delta2's
// prepared per key), then one thread multiplies them and runs the final exponentiation
// against the key's target conj(e(alpha1, beta2)).
// A batch of n (random 128-bit rho_j from the host):
//   prod_j e(-rho_j pi_a_j, pi_b_j) e(sum rho_j L_j, gamma2) e(sum rho_j pi_c_j, delta2)
//   e((sum rho_j) alpha1, beta2) == 1: k + 3 Miller loops spread over the block's warps, one
// final exponentiation.
// Points at infinity make their pair contribute 1, as in engine/algebra/pairing.py.
#pragma once
#include "pairing.cuh"
#include "epilogue.cuh"

template <class PO, class A1, class A2>
struct groth16_check_ops {
    typedef typename PO::F12 F12;
    typedef typename PO::F2 F2;
    typedef typename PO::consts consts;
    static constexpr int W1 = A1::WORDS, W2 = A2::WORDS;

    static __device__ __forceinline__ F12 pair_fly(const consts& k, const A1& p, const A2& q) {
        if (p.is_inf() || q.is_inf()) return F12::one();
        return PO::miller_on_the_fly(k, p.x, p.y, F2{q.x.c0, q.x.c1}, F2{q.y.c0, q.y.c1});
    }
    static __device__ __forceinline__ F12 pair_prepared(const consts& k, const A1& p, const uint32_t* lines) {
        if (p.is_inf()) return F12::one();
        return PO::miller_prepared(k, p.x, p.y, lines);
    }

    // proof: pi_a, pi_b, pi_c, L (affine, Montgomery).  flag: 1 if the proof verifies, else 0.
    // One block of 96 threads: lanes 0-3 of each warp are one pairing's lane group.
    static __device__ void check(const uint32_t* cbuf, const uint32_t* proof, const uint32_t* gamma_lines,
                                 const uint32_t* delta_lines, const uint32_t* target, uint32_t* flag) {
        __shared__ uint32_t fs[3][F12::WORDS];
        const consts k = PO::make_consts(cbuf);
        const uint32_t tid = threadIdx.x;
        if ((tid & 31) < 4 && tid < 96) {
            const uint32_t w = tid >> 5;
            F12 f;
            if (w == 0) f = pair_fly(k, A1::load(proof).neg(), A2::load(proof + W1));
            else if (w == 1) f = pair_prepared(k, A1::load(proof + 2 * W1 + W2), gamma_lines);
            else f = pair_prepared(k, A1::load(proof + W1 + W2), delta_lines);
            if ((tid & 31) == 0) f.store(fs[w]);
        }
        __syncthreads();
        if (tid < 4) {
            F12 f = F12::load(fs[0]) * F12::load(fs[1]) * F12::load(fs[2]);
            const bool ok = PO::final_exp(k, f) == F12::load(target);
            if (tid == 0) *flag = ok ? 1u : 0u;
        }
    }

    // n proofs (pi_a, pi_b, pi_c each, affine), rho: n + 1 scalars of 8 words (the last one
    // sum rho_j mod r); the public-input side as n_ic scalars c_i = sum_j rho_j pub_ji (c_0 =
    // sum rho_j) against the key's IC points, so sum_j rho_j L_j = sum_i c_i IC_i.
    // work: (n + 3) * W1 words of scratch.  Block: a multiple of 32 threads, at least 64.
    static __device__ void batch_check(const uint32_t* cbuf, const uint32_t* proofs, const uint32_t* rho,
                                       uint32_t n, const uint32_t* ic, const uint32_t* ic_scalars, uint32_t n_ic,
                                       const uint32_t* alpha_table, const uint32_t* beta_lines,
                                       const uint32_t* gamma_lines, const uint32_t* delta_lines, uint32_t* work,
                                       uint32_t* flag) {
        typedef xyzz<decltype(A1::x)> X1;
        constexpr int PW = 2 * W1 + W2;  // words of one proof
        __shared__ uint32_t fs[32][F12::WORDS];
        __shared__ uint32_t sums[2][32][X1::WORDS];
        const consts k = PO::make_consts(cbuf);
        const uint32_t tid = threadIdx.x, nt = blockDim.x, warp = tid >> 5, nwarps = nt >> 5;
        // phase 1: -rho_j pi_a_j (affine, into work[j]); per-thread sums of rho_j pi_c_j and
        // c_i IC_i; (sum rho) alpha1 into work[n + 2]
        X1 acc_c = X1::inf(), acc_l = X1::inf();
#pragma unroll 1
        for (uint32_t t = tid; t < 2 * n + n_ic + 1; t += nt) {
            if (t < n) {
                X1 p = X1::from_affine(A1::load(proofs + (uint64_t)t * PW));
                var_base_mul(p, rho + 8ull * t).to_affine().neg().store(work + (uint64_t)t * W1);
            } else if (t < 2 * n) {
                const uint32_t j = t - n;
                acc_c.add(var_base_mul(X1::from_affine(A1::load(proofs + (uint64_t)j * PW + W1 + W2)), rho + 8ull * j));
            } else if (t < 2 * n + n_ic) {
                const uint32_t i = t - 2 * n;
                acc_l.add(var_base_mul(X1::from_affine(A1::load(ic + (uint64_t)i * W1)), ic_scalars + 8ull * i));
            } else {
                fixed_base_mul<A1, X1>(alpha_table, rho + 8ull * n).to_affine().store(work + (uint64_t)(n + 2) * W1);
            }
        }
        // reduce the per-thread sums: first within each warp's lane 0 slot, then across warps
        for (uint32_t l = 0; l < 32; l++) {  // lanes take turns adding into the warp's slots
            if ((tid & 31) == l) {
                if (l == 0) {
                    acc_c.store(sums[0][warp]);
                    acc_l.store(sums[1][warp]);
                } else {
                    X1 c = X1::load(sums[0][warp]), L = X1::load(sums[1][warp]);
                    c.add(acc_c), L.add(acc_l);
                    c.store(sums[0][warp]), L.store(sums[1][warp]);
                }
            }
            __syncwarp();
        }
        __syncthreads();
        if (tid == 0 || tid == 32) {  // blockDim >= 64
            const int which = tid == 0 ? 0 : 1;
            X1 acc = X1::load(sums[which][0]);
            for (uint32_t w = 1; w < nwarps; w++) acc.add(X1::load(sums[which][w]));
            acc.to_affine().store(work + (uint64_t)(n + which) * W1);  // n: pi_c sum, n + 1: L sum
        }
        __syncthreads();
        // phase 2: the n + 3 Miller loops, the lane group of each warp taking pairs in turn
        if ((tid & 31) < 4) {  // lanes 0-3: the warp's lane group
            F12 f = F12::one();
            for (uint32_t p = warp; p < n + 3; p += nwarps) {
                const A1 P = A1::load(work + (uint64_t)p * W1);
                if (p < n) f = f * pair_fly(k, P, A2::load(proofs + (uint64_t)p * PW + W1));
                else if (p == n) f = f * pair_prepared(k, P, delta_lines);
                else if (p == n + 1) f = f * pair_prepared(k, P, gamma_lines);
                else f = f * pair_prepared(k, P, beta_lines);
            }
            if ((tid & 31) == 0) f.store(fs[warp]);
        }
        __syncthreads();
        if (tid < 4) {
            F12 f = F12::load(fs[0]);
            for (uint32_t w = 1; w < nwarps && w < n + 3; w++) f = f * F12::load(fs[w]);
            const bool ok = PO::final_exp(k, f).is_one();
            if (tid == 0) *flag = ok ? 1u : 0u;
        }
    }
};
