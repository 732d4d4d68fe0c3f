// Host driver for the device pairing code (cuda_kernels/tower.cuh, pairing.cuh) over
// host_field.hpp: reads a constants buffer and commands on stdin (hex numbers, Montgomery
// form, one Fq value per number), writes results on stdout.  Built by g++ in
// tests/test_gpu_pairing.py with -include params.cuh (FQ_P) and -DHOST_XI0=.. -DHOST_D_TWIST=..
#include "host_field.hpp"
#include "field.cuh"
#include "pairing.cuh"
#include "curve_warp.cuh"
#include "inverse.cuh"

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

typedef host_fp<FQ_P> F;
typedef pairing_ops<fp2g<F>, HOST_XI0, HOST_D_TWIST> PO;
typedef PO::F2 F2;
typedef PO::F12 F12;
constexpr int N = F::N;
typedef fp2<F> G2F;
typedef xyzz_warp<F> W1;
typedef xyzz_warp<G2F> W2;

static bool read_hex(uint32_t* limbs, int n) {
    char buf[512];
    if (scanf("%511s", buf) != 1) return false;
    std::string s(buf);
    for (int j = 0; j < n; j++) limbs[j] = 0;
    int bit = 0;
    for (int i = (int)s.size() - 1; i >= 0 && bit < 32 * n; i--, bit += 4) {
        char c = s[i];
        uint32_t d = c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
        limbs[bit / 32] |= d << (bit % 32);
    }
    return true;
}
static F rd() {
    F x;
    read_hex(x.v, N);
    return x;
}
static F2 rd2() {
    F a = rd();
    F b = rd();
    return {a, b};
}
static F12 rd12() {
    F12 r;
    F2* c[6] = {&r.c0.c0, &r.c0.c1, &r.c0.c2, &r.c1.c0, &r.c1.c1, &r.c1.c2};
    for (auto p : c) *p = rd2();
    return r;
}
static void wr(const F& x) {
    for (int j = N - 1; j >= 0; j--) printf("%08x", x.v[j]);
    printf(" ");
}
static void wr12(const F12& r) {
    const F2* c[6] = {&r.c0.c0, &r.c0.c1, &r.c0.c2, &r.c1.c0, &r.c1.c1, &r.c1.c2};
    for (auto p : c) wr(p->c0), wr(p->c1);
    printf("\n");
}

int main() {
    int nwords;
    if (scanf("%d", &nwords) != 1) return 1;
    std::vector<uint32_t> cbuf(nwords);
    for (int i = 0; i < nwords; i++) read_hex(&cbuf[i], 1);
    const PO::consts k = PO::make_consts(cbuf.data());
    char cmd[32];
    while (scanf("%31s", cmd) == 1) {
        std::string c(cmd);
        if (c == "mul") {
            F12 a = rd12(), b = rd12();
            wr12(a * b);
        } else if (c == "sqr") {
            wr12(rd12().sqr());
        } else if (c == "cyc") {
            wr12(rd12().cyc_sqr());
        } else if (c == "inv") {
            wr12(rd12().inverse());
        } else if (c == "frob") {
            int p;
            if (scanf("%d", &p) != 1) return 1;
            wr12(PO::frob(k, rd12(), p));
        } else if (c == "fe") {
            wr12(PO::final_exp(k, rd12()));
        } else if (c == "pairs" || c == "pairs_prepared") {
            // n pairs (xp yp, xq0 xq1 yq0 yq1, all-zero = infinity): FE of the product
            int n;
            if (scanf("%d", &n) != 1) return 1;
            F12 f = F12::one();
            for (int i = 0; i < n; i++) {
                F xp = rd(), yp = rd();
                F2 xq = rd2(), yq = rd2();
                bool p_inf = xp.is_zero() && yp.is_zero(), q_inf = xq.is_zero() && yq.is_zero();
                if (p_inf || q_inf) continue;
                if (c == "pairs") {
                    f = f * PO::miller_on_the_fly(k, xp, yp, xq, yq);
                } else {
                    std::vector<uint32_t> lines((size_t)k.n_lines() * PO::line::WORDS);
                    PO::lines(k, xq, yq, F::one(), F::one(), [&](int li, const PO::line& l) { l.store(lines.data() + (size_t)li * PO::line::WORDS); });
                    f = f * PO::miller_prepared(k, xp, yp, lines.data());
                }
            }
            wr12(PO::final_exp(k, f));
        } else if (c == "pair2" || c == "pair2_prepared") {
            // one pair (as "pairs"), the final phase's way: two threads stand for its two warps,
            // one making the lines into the ring and squaring in the final exponentiation, the
            // other taking the lines and multiplying the powers of x in (pairing.cuh); prepared:
            // Q's lines made first (as a key's), the line maker scaling them by P on the way
            F xp = rd(), yp = rd();
            F2 xq = rd2(), yq = rd2();
            const bool inf = (xp.is_zero() && yp.is_zero()) || (xq.is_zero() && yq.is_zero());
            std::vector<uint32_t> lines((size_t)k.n_lines() * PO::line::WORDS);
            if (c == "pair2_prepared" && !inf)
                PO::lines(k, xq, yq, F::one(), F::one(), [&](int li, const PO::line& l) { l.store(lines.data() + (size_t)li * PO::line::WORDS); });
            std::vector<uint32_t> words(PO::RING_WORDS + PO::DUO_WORDS + 4, 0u);
            uint32_t* ring = words.data() + (4 - (reinterpret_cast<uintptr_t>(words.data()) / 4) % 4) % 4;
            uint32_t* duo = ring + PO::RING_WORDS;
            std::thread producer([&] {
                PO::host_producer() = true;
                if (!inf && c == "pair2") PO::produce_lines(k, xp, yp, xq, yq, ring);
                if (!inf && c == "pair2_prepared") PO::produce_prepared(k, xp, yp, lines.data(), ring);
                PO::final_exp(k, PO::duo_wait(duo), duo);
            });
            const F12 f = inf ? F12::one() : PO::consume_lines(k, ring);
            PO::duo_post(duo, f);
            const F12 r = PO::final_exp(k, f, duo);
            producer.join();
            wr12(r);
        } else if (c == "g1mul" || c == "g2mul") {
            // a point (affine, all-zero = infinity) and a plain 8-word scalar: k P, affine
            uint32_t kk[8];
            if (c == "g1mul") {
                F x = rd(), y = rd();
                read_hex(kk, 8);
                const affine<F> r = W1::var_base_mul(xyzz<F>::from_affine({x, y}), kk).to_affine();
                wr(r.x), wr(r.y);
            } else {
                F2 x = rd2(), y = rd2();
                read_hex(kk, 8);
                const affine<G2F> r = W2::var_base_mul(xyzz<G2F>::from_affine({{x.c0, x.c1}, {y.c0, y.c1}}), kk).to_affine();
                wr(r.x.c0), wr(r.x.c1), wr(r.y.c0), wr(r.y.c1);
            }
            printf("\n");
        } else if (c == "xi") {
            // Fq2 values: each one times xi (tower.cuh's mul_xi: BN254's one-reduction 9x -/+ y)
            int n;
            if (scanf("%d", &n) != 1) return 1;
            for (int i = 0; i < n; i++) {
                const F2 r = PO::F6::mul_xi(rd2());
                wr(r.c0), wr(r.c1);
            }
            printf("\n");
        } else if (c == "finv" || c == "fdinv") {
            // Fq values: each one's inverse by the binary algorithm or the divsteps (0 -> 0)
            int n;
            if (scanf("%d", &n) != 1) return 1;
            for (int i = 0; i < n; i++) {
                const F x = rd();
                wr(c == "finv" ? inverse_binary(x) : inverse_divsteps(x));
            }
            printf("\n");
        } else if (c == "g1aff" || c == "g2aff") {
            // an XYZZ point (x, y, zz, zzz) made from an affine one with z = 3: its tail_affine
            const bool two = c == "g2aff";
            F x[2], y[2];
            x[0] = rd(), x[1] = two ? rd() : F::zero(), y[0] = rd(), y[1] = two ? rd() : F::zero();
            const F three = F::one() + F::one() + F::one(), nine = three * three, z27 = nine * three;
            if (two) {
                const G2F zz = {nine, F::zero()}, zzz = {z27, F::zero()};
                const bool inf = x[0].is_zero() && x[1].is_zero() && y[0].is_zero() && y[1].is_zero();
                xyzz<G2F> p = inf ? xyzz<G2F>::inf()
                                  : xyzz<G2F>{G2F{x[0], x[1]} * zz, G2F{y[0], y[1]} * zzz, zz, zzz};
                const affine<G2F> a = tail_affine(p);
                wr(a.x.c0), wr(a.x.c1), wr(a.y.c0), wr(a.y.c1);
            } else {
                const bool inf = x[0].is_zero() && y[0].is_zero();
                xyzz<F> p = inf ? xyzz<F>::inf() : xyzz<F>{x[0] * nine, y[0] * z27, nine, z27};
                const affine<F> a = tail_affine(p);
                wr(a.x), wr(a.y);
            }
            printf("\n");
        } else if (c == "g1add") {
            // P, Q affine: P + Q by the XYZZ addition and by the mixed one (P's XYZZ form with
            // ZZ = 4, ZZZ = 8, so that the formulas see non-trivial Z)
            F px = rd(), py = rd(), qx = rd(), qy = rd();
            xyzz<F> p = xyzz<F>::from_affine({px, py}), q = xyzz<F>::from_affine({qx, qy});
            if (!p.is_inf()) {
                const F two = F::one() + F::one(), four = two + two, eight = four + four;
                p = {px * four, py * eight, four, eight};
            }
            xyzz<F> s1 = p, s2 = p;
            W1::add(s1, q);
            W1::add(s2, affine<F>{qx, qy});
            const affine<F> a1 = s1.to_affine(), a2 = s2.to_affine();
            wr(a1.x), wr(a1.y), wr(a2.x), wr(a2.y);
            printf("\n");
        } else {
            fprintf(stderr, "unknown command %s\n", cmd);
            return 2;
        }
        fflush(stdout);
    }
    return 0;
}
