// The Groth16 check on the device (spec §6), for one proof or a batch of one key's proofs.
//
// One proof: e(-pi_a, pi_b) e(L, gamma2) e(pi_c, delta2) == e(alpha1, beta2)^-1, the three
// Miller loops side by side in the final phase (pi_b's lines made on the fly, gamma2's and
// delta2's prepared per key), then the product and the final exponentiation against the
// key's target.  The epilogue (the proof's points) is assembled
// by the same phases.
// A batch of n (random 128-bit rho_j from the host):
//   prod_j e(-rho_j pi_a_j, pi_b_j) e(sum rho_j L_j, gamma2) e(sum rho_j pi_c_j, delta2)
//   e((sum rho_j) alpha1, beta2) == 1: k + 3 Miller loops spread over the block's warps, one
// final exponentiation.
// Points at infinity make their pair contribute 1, as in engine/algebra/pairing.py.
#pragma once
#include "pairing.cuh"
#include "epilogue.cuh"
#include "curve_warp.cuh"
#include "inverse.cuh"

// ENDO::BETA: G1's endomorphism constant (params.py's G1_ENDO_P), for the mid phase's GLV halves.
template <class PO, class A1, class A2, class ENDO>
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

    // ---- one proof, in three phases (one block each), ordered by the pipeline's streams:
    //   early (beside evaluate/NTT/MSMs: needs only the witness, r, s): the table products
    //     r delta1, s alpha1, rs delta1, r beta1, s delta2; L = IC_0 + sum pub_i IC_i
    //   mid (beside the B2 MSM: needs A, B1, C, H): s A, r B1 (each as two GLV halves on two
    //     warps); pi_a and pi_c
    //   final (after the B2 MSM): pi_b; the Miller loops of (-pi_a, pi_b) (pi_b's lines made
    //     on the fly), (L, gamma2) and (pi_c, delta2) side by side; their product, the final
    //     exponentiation, the flag.
    // `results`: the five MSM sums (XYZZ, slots of slot_words: A, B1, B2, C, H), then `out`:
    // pi_a, pi_b, pi_c, L (affine) and the flag word (4 words), then the scratch the phases
    // hand on: the five table products (XYZZ), then the mid phase's s A + r B1 (XYZZ).
    typedef xyzz<decltype(A1::x)> X1;
    typedef xyzz<decltype(A2::x)> X2;
    typedef xyzz_warp<decltype(A1::x)> WX1;  // the same points, a whole warp per product
    typedef xyzz_warp<decltype(A2::x)> WX2;
    static constexpr uint32_t WARP_IC_MAX = 4;  // up to this many public inputs: a warp per IC product
    static constexpr int MAX_WARPS = F2::BATCH_WARPS;  // the batches' scratch: 8 warps a block

    // The phases' and the batched check's shared arrays, carved from one pool: they run in one
    // kernel (kernels.cu's groth16_pairing), whose static shared memory would otherwise be
    // their sum.
    static constexpr int EARLY_WORDS = 64 * X1::WORDS + W1, MID_WORDS = 4 * X1::WORDS + W1;
    static constexpr int BATCH_WORDS = MAX_WARPS * (F12::WORDS + 2 * X1::WORDS);
    // the final phase's ring, the duo (its value slots shared with the prepared pairs' two rings) and the
    // hold (tail_final)
    static constexpr int FINAL_SHARED = PO::DUO_WORDS - 4 > 2 * PO::RING_WORDS ? PO::DUO_WORDS - 4 : 2 * PO::RING_WORDS;
    static constexpr int FINAL_WORDS = PO::RING_WORDS + 4 + FINAL_SHARED + 4 + 2 * F12::WORDS;
    static constexpr int POOL_WORDS_1 = EARLY_WORDS > BATCH_WORDS ? EARLY_WORDS : BATCH_WORDS;
    static constexpr int POOL_WORDS = POOL_WORDS_1 > FINAL_WORDS ? POOL_WORDS_1 : FINAL_WORDS;
    static_assert(MID_WORDS <= POOL_WORDS, "the pool holds every phase's arrays");
    static __device__ __forceinline__ uint32_t* pool() {
        __shared__ __align__(16) uint32_t words[POOL_WORDS];
        return words;
    }
    struct tail_args {
        const uint32_t* consts;
        uint32_t* results;
        uint32_t slot_words;
        const uint32_t* witness;  // plain, 8 words a value, then r, s, rs mod r, s's and r's GLV
                                  // halves (|k1| words 0-3, |k2| 4-7), their sign bits (epilogue.py)
        uint32_t n_wires, n_public;
        const uint32_t* tables;  // byte tables of delta1, alpha1, beta1 (G1), delta2 (G2), IC_1.. (ic_table)
        const uint32_t* points;  // alpha1, beta1 (G1), beta2 (G2), IC_0..IC_n (G1), affine
        const uint32_t* gamma_lines;
        const uint32_t* delta_lines;
        const uint32_t* target;  // e(alpha1, beta2)^-1

        __device__ __forceinline__ uint32_t* out() const { return results + 5ull * slot_words; }
        __device__ __forceinline__ uint32_t* flag() const { return out() + 3 * W1 + W2; }
        __device__ __forceinline__ uint32_t* fixed1(int i) const { return flag() + 4 + i * X1::WORDS; }
        __device__ __forceinline__ uint32_t* fixed2() const { return fixed1(4); }  // G2: two G1 slots
        __device__ __forceinline__ uint32_t* glv_sum() const { return fixed1(6); }  // the mid phase's s A + r B1
        __device__ __forceinline__ const uint32_t* scalar(int i) const { return witness + 8ull * n_wires + 8 * i; }
        // which = 0: s (its product by A), 1: r (by B1)
        __device__ __forceinline__ const uint32_t* glv(int which) const { return scalar(3 + which); }
        __device__ __forceinline__ uint32_t glv_signs(int which) const { return scalar(5)[which]; }
        __device__ __forceinline__ const uint32_t* ic(uint32_t i) const { return points + 2 * W1 + W2 + i * W1; }
        // IC_i's byte table (1 <= i <= n_public <= WARP_IC_MAX), after delta2's
        __device__ __forceinline__ const uint32_t* ic_table(uint32_t i) const {
            return tables + (uint64_t)FB_ROWS * (3 * W1 + W2 + (i - 1) * W1);
        }
        __device__ __forceinline__ const uint32_t* slot(int i) const { return results + (uint64_t)i * slot_words; }
    };

    // 128 threads: warp 0 the four G1 table products (a thread each), warp 1 the G2 one (the
    // whole warp), warps 2-3 the IC products (up to WARP_IC_MAX public inputs: from their byte
    // tables, a warp each, in turn; beyond, double-and-add, a thread each); then L.  (L's Miller loop runs in the final phase, beside
    // pi_b's: at small sizes the early and mid phases, one after the other on the side stream,
    // were the proof's longest chain.)
    static __device__ void tail_early(const tail_args& a) {
        uint32_t(*var_l)[X1::WORDS] = reinterpret_cast<uint32_t(*)[X1::WORDS]>(pool());
        const uint32_t tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
        const uint32_t* tab1 = a.tables;
        if (warp == 0 && lane < 4) {  // r delta1, s alpha1, rs delta1, r beta1
            const uint32_t* tab = tab1 + (uint64_t)(lane == 1 ? 1 : lane == 3 ? 2 : 0) * FB_ROWS * W1;
            const int k = lane == 0 || lane == 3 ? 0 : lane == 1 ? 1 : 2;
            fixed_base_mul<A1, X1>(tab, a.scalar(k)).store(a.fixed1(lane));
        } else if (warp == 1) {  // s delta2
            const X2 p = WX2::fixed_base_mul(tab1 + 3ull * FB_ROWS * W1, a.scalar(1));
            if (lane == 0) p.store(a.fixed2());
        } else if (warp >= 2 && a.n_public <= WARP_IC_MAX) {  // IC_i's byte table (epilogue.py's ic_tables)
            X1 acc = X1::inf();
#pragma unroll 1
            for (uint32_t i = warp - 1; i <= a.n_public; i += 2)
                WX1::add(acc, WX1::fixed_base_mul(a.ic_table(i), a.witness + 8ull * i));
            (lane == 0 ? acc : X1::inf()).store(var_l[tid - 64]);
        } else if (warp >= 2) {
            const uint32_t v = tid - 64;
            X1 acc = X1::inf();
#pragma unroll 1
            for (uint32_t i = v + 1; i <= a.n_public; i += 64)
                acc.add(var_base_mul(X1::from_affine(A1::load(a.ic(i))), a.witness + 8ull * i));
            acc.store(var_l[v]);
        }
        __syncthreads();
        if (tid == 0) {
            X1 acc = X1::from_affine(A1::load(a.ic(0)));
            for (uint32_t v = 0; v < 64; v++) acc.add(X1::load(var_l[v]));  // unused lanes hold infinity
            tail_affine(acc).store(a.out() + 2 * W1 + W2);
        }
    }

    static __device__ __forceinline__ decltype(A1::x) beta() {
        decltype(A1::x) b;
#pragma unroll
        for (int j = 0; j < decltype(A1::x)::N; j++) b.v[j] = ENDO::BETA[j];
        return b;
    }

    // 128 threads: warps 0, 1 the GLV halves of s A, warps 2, 3 those of r B1 (a warp each:
    // 128-bit scalars, half the doublings of one warp's 256-bit product); their sum s A + r B1
    // into the scratch; then (`join`) pi_a and pi_c.  (pi_c's Miller loop runs in the final
    // phase.)  A small proof runs the products as soon as A, B1 exist (its A, B1, C MSMs go
    // first) and the join once H does too, as a launch of its own (op 5).
    static __device__ void tail_mid(const tail_args& a, bool join) {
        uint32_t(*var_c)[X1::WORDS] = reinterpret_cast<uint32_t(*)[X1::WORDS]>(pool());
        const uint32_t tid = threadIdx.x, warp = tid >> 5, which = warp >> 1, half = warp & 1;
        if (warp < 4) {
            const X1 prod = WX1::glv_half_mul(X1::load(a.slot(which)), a.glv(which) + 4 * half, half != 0,
                                              ((a.glv_signs(which) >> half) & 1u) != 0, beta());
            if ((tid & 31) == 0) prod.store(var_c[warp]);
        }
        __syncthreads();
        if (tid == 0) {  // s A + r B1
            X1 acc = X1::load(var_c[0]);
            for (int w = 1; w < 4; w++) acc.add(X1::load(var_c[w]));
            acc.store(a.glv_sum());
        }
        if (join) tail_join(a);  // thread 0 reads back what it wrote
    }

    // pi_a (thread 32) and pi_c (thread 0), from the MSM sums, the early phase's table products
    // and the mid phase's s A + r B1; with `products` (op 6), s A and r B1 came from MSMs of s w over A
    // and r w over B1 (launch.py): s A in the scratch's slot, r B1 in B1's result slot.
    static __device__ void tail_join(const tail_args& a, bool products = false) {
        const uint32_t tid = threadIdx.x;
        if (tid == 32) {  // pi_a = alpha1 + A + r delta1
            X1 acc = X1::load(a.slot(0));
            acc.add(A1::load(a.points));
            acc.add(X1::load(a.fixed1(0)));
            tail_affine(acc).store(a.out());
        } else if (tid == 0) {  // pi_c = C + H + s alpha1 + rs delta1 + r beta1 + s A + r B1
            X1 acc = X1::load(a.slot(3));
            acc.add(X1::load(a.slot(4)));
            for (int i = 1; i < 4; i++) acc.add(X1::load(a.fixed1(i)));
            acc.add(X1::load(a.glv_sum()));
            if (products) acc.add(X1::load(a.slot(1)));
            tail_affine(acc).store(a.out() + W1 + W2);
        }
    }
    static __device__ __forceinline__ A2 join_b(const tail_args& a) {  // pi_b = beta2 + B2 + s delta2
        X2 acc = X2::load(a.slot(2));
        acc.add(A2::load(a.points + 2 * W1));
        acc.add(X2::load(a.fixed2()));
        return tail_affine(acc);
    }

    // pi_b alone (thread 0), as soon as B2 and the early phase's s delta2 exist: a small proof runs it on
    // B2's stream, beside the H MSM and the mid phase, so that the final phase's line maker starts at once.
    static __device__ void tail_pi_b(const tail_args& a) {
        if (threadIdx.x == 0) join_b(a).store(a.out() + W1);
    }

    // 192 threads, six warps: each of the three pairs on two, a line maker and a consumer.  Warp 1
    // makes pi_b (unless `pi_b_given`: tail_pi_b made it), then the lines of (-pi_a, pi_b) into the ring
    // (pairing.cuh's two-warp Miller loop), which warp 0 consumes; warps 3 and 5 load the prepared lines
    // of gamma2 and delta2 and scale them by L and pi_c on the way (pairing.cuh's produce_prepared), which
    // warps 2 and 4 consume, so that every pair waits on one chain of squarings and products by lines.
    // Warp 4 hands its f to warp 2, warp 2 the product of the two to warp 0 (the hold: [0] warp 4's
    // value posted, [1] the product posted; from word 4 warp 4's value, then the product).  Then warp 0
    // hands f to warp 1 and both run the final exponentiation, the powers of x on the two (the duo).
    // The ring's hand-on word: 1 = pi_b's lines come, 2 = a point at infinity (the pair contributes 1).
    // The prepared pairs' rings lie over the duo's value slots (its four counters apart): both are done
    // with them before warp 2 posts the product, and the duo's slots are written only after warp 0 has
    // waited for it (so the kernel's static shared memory stays within 48 KiB on BLS12-381).
    static __device__ void tail_final(const tail_args& a, bool pi_b_given = false) {
        const uint32_t tid = threadIdx.x, warp = tid >> 5;
        uint32_t* ring = pool();
        uint32_t *duo = ring + PO::RING_WORDS, *hold = duo + 4 + FINAL_SHARED;
        uint32_t* prepared_ring[2] = {duo + 4, duo + 4 + PO::RING_WORDS};
        if (tid < 4) ring[tid] = duo[tid] = prepared_ring[0][tid] = prepared_ring[1][tid] = hold[tid] = 0;
        __syncthreads();
        const consts k = consts_of(a);
        if (warp >= 6) return;
        if (warp >= 2) {  // the prepared pairs: warps 2/3 (L, gamma2), 4/5 (pi_c, delta2)
            uint32_t* pring = prepared_ring[(warp >> 1) - 1];
            const A1 p = A1::load(warp < 4 ? a.out() + 2 * W1 + W2 : a.out() + W1 + W2);
            if (warp & 1) {
                if (!p.is_inf()) PO::produce_prepared(k, p.x, p.y, warp < 4 ? a.gamma_lines : a.delta_lines, pring);
                return;
            }
            const F12 f = p.is_inf() ? F12::one() : PO::consume_lines(k, pring);
            if (warp == 4) {
                f.store(hold + 4);
                F2::poke(hold, 1);
                return;
            }
            F2::wait_for(hold, 1);
            const F12 m = f * F12::load(hold + 4);
            m.store(hold + 4 + F12::WORDS);
            F2::poke(hold + 1, 1);
            return;
        }
        const A1 p = A1::load(a.out()).neg();
        if (warp == 1) {
            const A2 pi_b = pi_b_given ? A2::load(a.out() + W1) : join_b(a);
            if (tid == 32 && !pi_b_given) pi_b.store(a.out() + W1);
            const bool inf = p.is_inf() || pi_b.is_inf();
            PO::ring_post(ring, inf ? 2u : 1u);
            if (!inf) PO::produce_lines(k, p.x, p.y, F2{pi_b.x.c0, pi_b.x.c1}, F2{pi_b.y.c0, pi_b.y.c1}, ring);
            PO::final_exp(k, PO::duo_wait(duo), duo);
            return;
        }
        PO::ring_wait(ring);
        F12 f = F2::peek(ring + 2) == 1u ? PO::consume_lines(k, ring) : F12::one();
        F2::wait_for(hold + 1, 1);
        f = f * F12::load(hold + 4 + F12::WORDS);
        PO::duo_post(duo, f);
        const bool ok = PO::final_exp(k, f, duo) == F12::load(a.target);
        if (tid == 0) *a.flag() = ok ? 1u : 0u;
    }
    static __device__ __forceinline__ consts consts_of(const tail_args& a) { return PO::make_consts(a.consts); }

    // n proofs (pi_a, pi_b, pi_c each, affine), rho: n + 1 scalars of 8 words (the last one
    // sum rho_j mod r); the public-input side as n_ic scalars c_i = sum_j rho_j pub_ji (c_0 =
    // sum rho_j) against the key's IC points, so sum_j rho_j L_j = sum_i c_i IC_i.
    // work: (n + 3) * W1 words of scratch.  Block: a multiple of 32 threads, 64 to 256.
    static __device__ void batch_check(const uint32_t* cbuf, const uint32_t* proofs, const uint32_t* rho,
                                       uint32_t n, const uint32_t* ic, const uint32_t* ic_scalars, uint32_t n_ic,
                                       const uint32_t* alpha_table, const uint32_t* beta_lines,
                                       const uint32_t* gamma_lines, const uint32_t* delta_lines, uint32_t* work,
                                       uint32_t* flag) {
        constexpr int PW = 2 * W1 + W2;  // words of one proof
        uint32_t(*fs)[F12::WORDS] = reinterpret_cast<uint32_t(*)[F12::WORDS]>(pool());
        uint32_t(*sums)[MAX_WARPS][X1::WORDS] =
            reinterpret_cast<uint32_t(*)[MAX_WARPS][X1::WORDS]>(pool() + MAX_WARPS * F12::WORDS);
        const consts k = PO::make_consts(cbuf);
        const uint32_t tid = threadIdx.x, nt = blockDim.x, warp = tid >> 5, nwarps = nt >> 5;
        // phase 1: -rho_j pi_a_j (affine, into work[j]); per-thread sums of rho_j pi_c_j and
        // c_i IC_i; (sum rho) alpha1 into work[n + 2]
        X1 acc_c = X1::inf(), acc_l = X1::inf();
#pragma unroll 1
        for (uint32_t t = tid; t < 2 * n + n_ic + 1; t += nt) {
            if (t < n) {
                X1 p = X1::from_affine(A1::load(proofs + (uint64_t)t * PW));
                tail_affine(var_base_mul(p, rho + 8ull * t)).neg().store(work + (uint64_t)t * W1);
            } else if (t < 2 * n) {
                const uint32_t j = t - n;
                acc_c.add(var_base_mul(X1::from_affine(A1::load(proofs + (uint64_t)j * PW + W1 + W2)), rho + 8ull * j));
            } else if (t < 2 * n + n_ic) {
                const uint32_t i = t - 2 * n;
                acc_l.add(var_base_mul(X1::from_affine(A1::load(ic + (uint64_t)i * W1)), ic_scalars + 8ull * i));
            } else {
                tail_affine(fixed_base_mul<A1, X1>(alpha_table, rho + 8ull * n)).store(work + (uint64_t)(n + 2) * W1);
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
            tail_affine(acc).store(work + (uint64_t)(n + which) * W1);  // n: pi_c sum, n + 1: L sum
        }
        __syncthreads();
        // phase 2: the n + 3 Miller loops, each warp taking pairs in turn
        {
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
        if (tid < 32) {
            F12 f = F12::load(fs[0]);
            for (uint32_t w = 1; w < nwarps && w < n + 3; w++) f = f * F12::load(fs[w]);
            const bool ok = PO::final_exp(k, f).is_one();
            if (tid == 0) *flag = ok ? 1u : 0u;
        }
    }
};
