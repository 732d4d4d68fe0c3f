// Optimal-ate pairing for BN254 and BLS12-381 over tower.cuh, the same values as
// engine/algebra/pairing.py (snarkjs's pairing: see that module for which power of the
// reduced pairing it is).
//
// Everything that differs between the curves but is data comes from the host in one
// constants buffer (engine/backends/gpu/verify.py builds it from the Curve): the loop's
// operation codes, the NAF of the curve parameter x, the twist's 3b, the twist-Frobenius
// constants and the Fq12 Frobenius constants.  What shapes the code is template data:
// XI0 (xi = XI0 + u) and the twist type (D for BN254, M for BLS12-381).
//
// A line of the loop is kept unnormalised as (ly, lx, lc): its value at P is
// ly yP + lx xP w + lc w^3 (D) or lc + lx xP v + ly yP v w (M); the Fq2 factor that
// normalising would remove lies in a proper subfield and dies in the final
// exponentiation, so prepared lines (a key's gamma2, delta2, beta2) and the lines of a
// proof's pi_b, made on the fly, go through the same code.  ly = 0 marks a vertical line,
// which contributes 1 (as in the Python reference).  The lines made on the fly come with ly
// and lx already multiplied by yP and xP (in the batches of the step that makes them);
// prepared lines are made with xP = yP = 1 and scaled when they are used.
//
// All of it runs on a whole warp (fp2_group.cuh's batches): launch 32 threads a pairing.
#pragma once
#include "tower.cuh"
#include "fp2_group.cuh"

// Layout of the constants buffer (32-bit words).  Fq2 values, Montgomery, from word 0:
//   [0] 3b' of the twist, [1..4] the twist Frobenius constants (x and y of pi(Q), x and y
//   of pi^2(Q)), [5..10] / [11..16] / [17..22] the Fq12 Frobenius constants for q, q^2, q^3.
// Then int32 words: n_ops, the loop codes, n_naf, the NAF digits of |x| (least significant
// first), x < 0.  Loop codes: 9 = square f, 0 = double T, 1 / -1 = add +-Q, 2 = add pi(Q),
// 3 = add -pi^2(Q) (BN only).  The first step's square is omitted (f = 1 then).
namespace pairing_layout {
constexpr int B3 = 0, TWIST_FROB = 1, GAMMA = 5, N_FQ2 = 23;
constexpr int SQUARE = 9;
}  // namespace pairing_layout

// F2: the tower's Fq2 (fp2_group.cuh's fp2g: its batches take the whole warp).
template <class F2_, int XI0, bool D_TWIST>
struct pairing_ops {
    typedef F2_ F2;
    typedef decltype(F2::c0) F;
    typedef fp6<F2, XI0> F6;
    typedef fp12<F6> F12;
    typedef typename F2::batch batch;
    static constexpr int W2 = F2::WORDS;
    static __device__ __forceinline__ F2 embed(const F& x) { return {x, F::zero()}; }

    struct consts {
        const uint32_t* fq2;
        const int32_t* ints;
        __device__ __forceinline__ F2 get(int i) const { return F2::load(fq2 + i * W2); }
        __device__ __forceinline__ int n_ops() const { return ints[0]; }
        __device__ __forceinline__ int op(int i) const { return ints[1 + i]; }
        __device__ __forceinline__ int n_naf() const { return ints[1 + n_ops()]; }
        __device__ __forceinline__ int naf(int i) const { return ints[2 + n_ops() + i]; }
        __device__ __forceinline__ bool x_neg() const { return ints[2 + n_ops() + n_naf()] != 0; }
        // number of lines of the loop (every code but SQUARE)
        __device__ __forceinline__ int n_lines() const {
            int n = 0;
            for (int i = 0; i < n_ops(); i++) n += op(i) != pairing_layout::SQUARE;
            return n;
        }
    };
    static __device__ __forceinline__ consts make_consts(const uint32_t* buf) {
        return {buf, reinterpret_cast<const int32_t*>(buf + pairing_layout::N_FQ2 * W2)};
    }

    struct line {
        F2 ly, lx, lc;
        __device__ __forceinline__ bool vertical() const { return ly.is_zero(); }
        static __device__ __forceinline__ line load(const uint32_t* p) {
            return {F2::load(p), F2::load(p + W2), F2::load(p + 2 * W2)};
        }
        __device__ __forceinline__ void store(uint32_t* p) const {
            ly.store(p), lx.store(p + W2), lc.store(p + 2 * W2);
        }
        static constexpr int WORDS = 3 * W2;
    };

    // ---- T on the twist in homogeneous projective coordinates (x = X/Z, y = Y/Z)
    struct tpoint {
        F2 X, Y, Z;
        bool inf;
    };
    // 2T scaled by 4 (no halvings); the tangent line (ly yP, lx xP, lc).  Three batches:
    //   B = Y^2, Z^2, YZ, A = XY, X^2;  E = 3b' Z^2, Z3 = 4B H, ly yP, lx xP;
    //   X3 = 2A (B - 3E), E^2, (B + 3E)^2.
    static __device__ __noinline__ line dbl(tpoint& T, const F2& b3, const F& xp, const F& yp) {
        batch bt;
        bt.put(0, T.Y, T.Y), bt.put(1, T.Z, T.Z), bt.put(2, T.Y, T.Z), bt.put(3, T.X, T.Y), bt.put(4, T.X, T.X);
        bt.run(5);
        const F2 B = bt.get(0), Z2 = bt.get(1), H = bt.get(2).dbl(), A = bt.get(3), X2 = bt.get(4);
        bt.put(0, b3, Z2), bt.put(1, B.dbl().dbl(), H), bt.put(2, H.neg(), embed(yp)), bt.put(3, X2.dbl() + X2, embed(xp));
        bt.run(4);
        const F2 E = bt.get(0), Z3 = bt.get(1);
        const line l = {bt.get(2), bt.get(3), E - B};
        const F2 Fv = E.dbl() + E;
        bt.put(0, A.dbl(), B - Fv), bt.put(1, E, E), bt.put(2, B + Fv, B + Fv);
        bt.run(3);
        const F2 E4 = bt.get(1).dbl().dbl();
        T.X = bt.get(0), T.Y = bt.get(2) - E4.dbl() - E4, T.Z = Z3;  // Y3 = (B+F)^2 - 12 E^2
        if (Z3.is_zero()) T.inf = true;
        return l;
    }
    // T + (x2, y2); a vertical line (T = -Q) leaves T at infinity and returns ly = 0.  Four
    // batches: y2 Z, x2 Z;  C = theta^2, D = lam^2, theta x2, lam y2, ly yP, lx xP;
    // E = D lam, F = Z C, G = X D;  theta (G - H), Y E, lam H, Z E.
    static __device__ __noinline__ line add(tpoint& T, const F2& x2, const F2& y2, const F2& b3, const F& xp,
                                            const F& yp) {
        batch bt;
        bt.put(0, y2, T.Z), bt.put(1, x2, T.Z);
        bt.run(2);
        const F2 theta = T.Y - bt.get(0), lam = T.X - bt.get(1);
        if (lam.is_zero()) {
            if (theta.is_zero()) return dbl(T, b3, xp, yp);
            T.inf = true;
            return {F2::zero(), F2::zero(), F2::zero()};
        }
        bt.put(0, theta, theta), bt.put(1, lam, lam), bt.put(2, theta, x2), bt.put(3, lam, y2);
        bt.put(4, lam, embed(yp)), bt.put(5, theta.neg(), embed(xp));
        bt.run(6);
        const F2 C = bt.get(0), D = bt.get(1);
        const line l = {bt.get(4), bt.get(5), bt.get(2) - bt.get(3)};
        bt.put(0, D, lam), bt.put(1, T.Z, C), bt.put(2, T.X, D);
        bt.run(3);
        const F2 E = bt.get(0), G = bt.get(2);
        const F2 H = E + bt.get(1) - G.dbl();
        bt.put(0, theta, G - H), bt.put(1, T.Y, E), bt.put(2, lam, H), bt.put(3, T.Z, E);
        bt.run(4);
        T.X = bt.get(2), T.Y = bt.get(0) - bt.get(1), T.Z = bt.get(3);
        return l;
    }

    // Every line of the loop for Q (affine, not infinity), in order, handed to emit(index,
    // line), its ly and lx multiplied by yP and xP (1 and 1 for prepared lines).
    template <class Emit>
    static __device__ void lines(const consts& k, const F2& xq, const F2& yq, const F& xp, const F& yp, Emit&& emit) {
        const F2 b3 = k.get(pairing_layout::B3);
        F2 px[4], py[4];  // the points the additions use: Q, -Q, pi(Q), -pi^2(Q)
        px[0] = xq, py[0] = yq;
        px[1] = xq, py[1] = yq.neg();
        if constexpr (D_TWIST) {
            batch bt;
            bt.put(0, F2{xq.c0, xq.c1.neg()}, k.get(pairing_layout::TWIST_FROB));
            bt.put(1, F2{yq.c0, yq.c1.neg()}, k.get(pairing_layout::TWIST_FROB + 1));
            bt.put(2, xq, k.get(pairing_layout::TWIST_FROB + 2));
            bt.put(3, yq.neg(), k.get(pairing_layout::TWIST_FROB + 3));
            bt.run(4);
            px[2] = bt.get(0), py[2] = bt.get(1), px[3] = bt.get(2), py[3] = bt.get(3);
        }
        tpoint T = {xq, yq, F2::one(), false};
        int li = 0;
#pragma unroll 1
        for (int i = 0; i < k.n_ops(); i++) {
            const int op = k.op(i);
            if (op == pairing_layout::SQUARE) continue;
            const int which = op == 1 ? 0 : op == -1 ? 1 : op;  // index into px, py
            line l = {F2::zero(), F2::zero(), F2::zero()};
            if (T.inf) {  // doubling keeps infinity; an addition restarts at the point added
                if (op != 0) T = {px[which], py[which], F2::one(), false};
            } else if (op == 0) {
                l = dbl(T, b3, xp, yp);
            } else {
                l = add(T, px[which], py[which], b3, xp, yp);
            }
            emit(li++, l);
        }
    }

    // f times a line already multiplied by (yP, xP).
    static __device__ __forceinline__ F12 mul_scaled_line(const F12& f, const line& l) {
        if constexpr (D_TWIST) return f.mul_line_d(l.ly, l.lx, l.lc);
        else return f.mul_line_m(l.ly, l.lx, l.lc);
    }
    static __device__ __forceinline__ F12 mul_scaled_line_in(const F12& f, const line& l) {
        if constexpr (D_TWIST) return f.mul_line_d_in(l.ly, l.lx, l.lc);
        else return f.mul_line_m_in(l.ly, l.lx, l.lc);
    }
    // f times a prepared line: ly yP, lx xP in one batch first.
    static __device__ __forceinline__ F12 mul_line(const F12& f, const line& l, const F& xp, const F& yp) {
        batch bt;
        bt.put(0, l.ly, embed(yp)), bt.put(1, l.lx, embed(xp));
        bt.run(2);
        return mul_scaled_line_in(f, {bt.get(0), bt.get(1), l.lc});
    }

    // The Miller function of one pair (P affine G1, lines of Q given by get_line(index)).  A
    // squaring followed by a line shares its batch with that line's scaling by (yP, xP).
    template <class GetLine>
    static __device__ __noinline__ F12 miller(const consts& k, const F& xp, const F& yp, GetLine&& get_line) {
        F12 f = F12::one();
        int li = 0;
        const int n = k.n_ops();
#pragma unroll 1
        for (int i = 0; i < n; i++) {
            if (k.op(i) == pairing_layout::SQUARE) {
                if (i + 1 < n && k.op(i + 1) != pairing_layout::SQUARE) {
                    const line l = get_line(li++);
                    i++;
                    batch bt;
                    F12::put_sqr(bt, f);
                    bt.put(18, l.ly, embed(yp)), bt.put(19, l.lx, embed(xp));
                    bt.run(20);
                    const line scaled = {bt.get(18), bt.get(19), l.lc};
                    f = F12::get_mul(bt);
                    if (!l.vertical()) f = mul_scaled_line_in(f, scaled);
                } else {
                    f = F12::sqr_in(f);
                }
                continue;
            }
            const line l = get_line(li++);
            if (!l.vertical()) f = mul_line(f, l, xp, yp);
        }
        return f;
    }
    // With prepared lines (a key's G2 points).
    static __device__ __noinline__ F12 miller_prepared(const consts& k, const F& xp, const F& yp, const uint32_t* prepared) {
        return miller(k, xp, yp, [prepared](int i) { return line::load(prepared + (uint64_t)i * line::WORDS); });
    }
    // With Q's lines made on the fly, each used as soon as it is made.
    static __device__ __noinline__ F12 miller_on_the_fly(const consts& k, const F& xp, const F& yp, const F2& xq, const F2& yq) {
        F12 f = F12::one();
        int op_i = 0;
        // lines() skips SQUARE codes; squarings are applied here before each line's step
        lines(k, xq, yq, xp, yp, [&](int, const line& l) {
            while (k.op(op_i) == pairing_layout::SQUARE) {
                f = f.sqr();
                op_i++;
            }
            op_i++;
            if (!l.vertical()) f = mul_scaled_line(f, l);
        });
        return f;
    }

    // ---- the Miller loop of one pair on two warps of a block: the producer warp makes Q's
    // lines (the twist's steps, ly and lx scaled by yP and xP) into a ring of RING_LINES in
    // shared memory, the consumer warp squares f and multiplies the lines in as they come, so
    // the twist's steps leave the chain (it waits on a squaring and a product by a line a
    // step, not on the step too).  Ring words: [0] lines made, [1] lines taken, [2] a word
    // the caller hands on between the warps (ring_post / ring_wait), lines from word 4.  The
    // caller zeroes words 0-2 and syncs the block before either warp starts.
    static constexpr int RING_LINES = 16, RING_WORDS = 4 + RING_LINES * line::WORDS;
    static __device__ __forceinline__ void ring_post(uint32_t* ring, uint32_t v) { F2::poke(ring + 2, v); }
    static __device__ __forceinline__ void ring_wait(uint32_t* ring) { F2::wait_for(ring + 2, 1); }
    static __device__ __noinline__ void produce_lines(const consts& k, const F& xp, const F& yp, const F2& xq,
                                                      const F2& yq, uint32_t* ring) {
        lines(k, xq, yq, xp, yp, [ring](int i, const line& l) {
            if (i >= RING_LINES) F2::wait_for(ring + 1, (uint32_t)(i - RING_LINES + 1));  // its slot taken
            l.store(ring + 4 + (i % RING_LINES) * line::WORDS);
            F2::poke(ring, (uint32_t)(i + 1));
        });
    }
    // A prepared pair's lines into the ring for consume_lines, ly and lx scaled by yP and xP on the way,
    // so that the consumer's chain is the squarings and the products by lines only (as for lines on the
    // fly) and the lines' loads are off it.
    static __device__ __noinline__ void produce_prepared(const consts& k, const F& xp, const F& yp,
                                                         const uint32_t* prepared, uint32_t* ring) {
        int li = 0;
        const int n = k.n_ops();
#pragma unroll 1
        for (int i = 0; i < n; i++) {
            if (k.op(i) == pairing_layout::SQUARE) continue;
            const line l = line::load(prepared + (uint64_t)li * line::WORDS);
            batch bt;
            bt.put(0, l.ly, embed(yp)), bt.put(1, l.lx, embed(xp));
            bt.run(2);
            if (li >= RING_LINES) F2::wait_for(ring + 1, (uint32_t)(li - RING_LINES + 1));  // its slot taken
            line{bt.get(0), bt.get(1), l.lc}.store(ring + 4 + (li % RING_LINES) * line::WORDS);
            li++;
            F2::poke(ring, (uint32_t)li);
        }
    }
    static __device__ __noinline__ F12 consume_lines(const consts& k, uint32_t* ring) {
        F12 f = F12::one();
        int li = 0;
        const int n = k.n_ops();
#pragma unroll 1
        for (int i = 0; i < n; i++) {
            if (k.op(i) == pairing_layout::SQUARE) {
                f = F12::sqr_in(f);
                continue;
            }
            F2::wait_for(ring, (uint32_t)(li + 1));
            const line l = line::load(ring + 4 + (li % RING_LINES) * line::WORDS);
            li++;
            F2::poke(ring + 1, (uint32_t)li);
            if (!l.vertical()) f = mul_scaled_line_in(f, l);
        }
        return f;
    }

    // ---- f^x on two warps of a block (the final phase's final exponentiation): the producer
    // warp squares (s_0 = f, s_(i+1) = s_i^2, NAF digits d_i of |x| from the least significant)
    // and hands s_i^(d_i) on through the duo's ring for each d_i != 0; the consumer multiplies
    // them together.  So the chain waits on the squarings and one product, not on a product a
    // digit too.  Duo words: [0] powers made, [1] taken, [2] results posted, [3] the caller's
    // hand-on word (duo_post / duo_wait); from word 4 DUO_SLOTS powers, then the result.  The
    // counts run on over the calls of one final exponentiation (call c's powers are numbered
    // from c * weight).  Both warps run the rest of the exponentiation alike, on the same values.
    static constexpr int DUO_SLOTS = 8, DUO_WORDS = 4 + (DUO_SLOTS + 1) * F12::WORDS;
    static __device__ __forceinline__ uint32_t* duo_value(uint32_t* duo, int i) { return duo + 4 + i * F12::WORDS; }
    static __device__ __forceinline__ bool duo_producer() {
#ifdef __CUDA_ARCH__
        return (threadIdx.x >> 5) == 1;
#else
        return host_producer();
#endif
    }
#ifndef __CUDA_ARCH__
    // the host's stand-in for "this is warp 1" (tests run the two warps as two threads)
    static bool& host_producer() {
        static thread_local bool producer = false;
        return producer;
    }
#endif
    static __device__ __noinline__ F12 cyc_exp_x_duo(const consts& k, const F12& f, uint32_t* duo, uint32_t call) {
        const int n = k.n_naf();
        uint32_t weight = 0;
        for (int i = 0; i < n; i++) weight += k.naf(i) != 0;
        uint32_t j = call * weight;
        if (duo_producer()) {
            F12 s = f;
#pragma unroll 1
            for (int i = 0; i < n; i++) {
                if (i > 0) s = F12::cyc_sqr_in(s);
                const int d = k.naf(i);
                if (d == 0) continue;
                if (j >= DUO_SLOTS) F2::wait_for(duo + 1, j - DUO_SLOTS + 1);  // its slot taken
                (d == 1 ? s : s.conj()).store(duo_value(duo, j % DUO_SLOTS));
                F2::poke(duo, ++j);
            }
            F2::wait_for(duo + 2, call + 1);
            return F12::load(duo_value(duo, DUO_SLOTS));
        }
        F12 acc = F12::one();
#pragma unroll 1
        for (uint32_t t = 0; t < weight; t++, j++) {
            F2::wait_for(duo, j + 1);
            const F12 x = F12::load(duo_value(duo, j % DUO_SLOTS));
            F2::poke(duo + 1, j + 1);
            acc = t == 0 ? x : F12::mul_in(acc, x);
        }
        if (k.x_neg()) acc = acc.conj();
        acc.store(duo_value(duo, DUO_SLOTS));
        F2::poke(duo + 2, call + 1);
        return acc;
    }
    static __device__ __forceinline__ void duo_post(uint32_t* duo, const F12& f) {
        f.store(duo_value(duo, DUO_SLOTS));
        F2::poke(duo + 3, 1);
    }
    static __device__ __forceinline__ F12 duo_wait(uint32_t* duo) {
        F2::wait_for(duo + 3, 1);
        return F12::load(duo_value(duo, DUO_SLOTS));
    }

    // ---- final exponentiation (see engine/algebra/pairing.py for the chains)
    // f^x (x the curve parameter, signed) for f in the cyclotomic subgroup.
    static __device__ __noinline__ F12 cyc_exp_x(const consts& k, const F12& f) {
        const F12 fc = f.conj();
        const int n = k.n_naf();
        F12 acc = k.naf(n - 1) == 1 ? f : fc;
#pragma unroll 1
        for (int i = n - 2; i >= 0; i--) {
            acc = acc.cyc_sqr();
            const int d = k.naf(i);
            if (d == 1) acc = acc * f;
            else if (d == -1) acc = acc * fc;
        }
        return k.x_neg() ? acc.conj() : acc;
    }
    static __device__ __noinline__ F12 frob(const consts& k, const F12& f, int power) {
        F2 g[6];
        for (int i = 0; i < 6; i++) g[i] = k.get(pairing_layout::GAMMA + 6 * (power - 1) + i);
        return f.frob(g, power & 1);
    }
    // Out of line (like the Miller loops): each gets its own registers, not a share of a kernel's.
    // duo: null on one warp; else both warps of a block call it with the same f, the powers
    // of x on the two (cyc_exp_x_duo), the duo's words zeroed by the caller.
    static __device__ __noinline__ F12 final_exp(const consts& k, F12 f, uint32_t* duo = nullptr) {
        uint32_t calls = 0;
        auto cyc_exp_x = [&k, duo, &calls](const consts&, const F12& g) {
            return duo ? cyc_exp_x_duo(k, g, duo, calls++) : pairing_ops::cyc_exp_x(k, g);
        };
        f = f.conj() * f.inverse();  // easy part: (q^6 - 1)(q^2 + 1)
        f = frob(k, f, 2) * f;
        if constexpr (D_TWIST) {  // BN: the chain for 2u(6u^2+3u+1) (q^4 - q^2 + 1)/r
            F12 fu = cyc_exp_x(k, f);
            F12 fu2 = cyc_exp_x(k, fu);
            F12 fu3 = cyc_exp_x(k, fu2);
            F12 a = (fu3.cyc_sqr() * fu3).cyc_sqr();
            F12 b = fu2.cyc_sqr() * fu2;
            F12 fu_2 = fu.cyc_sqr();
            F12 l1 = ((a * b) * fu_2).cyc_sqr();
            F12 l3 = l1 * f.conj();
            F12 l2 = l1 * fu_2;
            F12 l0 = (l2 * b.cyc_sqr()) * f;
            return (l0 * frob(k, l1, 1)) * (frob(k, l2, 2) * frob(k, l3, 3));
        } else {  // BLS12: 3 (q^4 - q^2 + 1)/r = (x-1)^2 (x+q) (x^2+q^2-1) + 3, then conjugate
            F12 a = cyc_exp_x(k, f) * f.conj();
            a = cyc_exp_x(k, a) * a.conj();
            a = cyc_exp_x(k, a) * frob(k, a, 1);
            F12 b = (cyc_exp_x(k, cyc_exp_x(k, a)) * frob(k, a, 2)) * a.conj();
            return (b * (f.cyc_sqr() * f)).conj();
        }
    }
};
