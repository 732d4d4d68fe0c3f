// Host driver for the device pairing code (cuda_kernels/tower.cuh, pairing.cuh) over
// host_field.hpp: reads a constants buffer and commands on stdin (hex numbers, Montgomery
// form, one Fq value per number), writes results on stdout.  Built by g++ in
// tests/test_gpu_pairing.py with -include params.cuh (FQ_P) and -DHOST_XI0=.. -DHOST_D_TWIST=..
#include "host_field.hpp"
#include "field.cuh"
#include "pairing.cuh"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

typedef host_fp<FQ_P> F;
typedef pairing_ops<fp2g<F>, HOST_XI0, HOST_D_TWIST> PO;
typedef PO::F2 F2;
typedef PO::F12 F12;
constexpr int N = F::N;

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
                    PO::lines(k, xq, yq, [&](int li, const PO::line& l) { l.store(lines.data() + (size_t)li * PO::line::WORDS); });
                    f = f * PO::miller_prepared(k, xp, yp, lines.data());
                }
            }
            wr12(PO::final_exp(k, f));
        } else {
            fprintf(stderr, "unknown command %s\n", cmd);
            return 2;
        }
        fflush(stdout);
    }
    return 0;
}
