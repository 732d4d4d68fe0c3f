// Times sppark's NTT (github.com/supranational/sppark, its ntt/ntt.cuh) on the device, so that issue 15's
// ratio to it is measured in the same run as perf/ntt.py.  A benchmark harness, not part of the engine:
// built by perf/sppark_ntt.sh against sppark's and blst's sources (carried in .sppark/), one binary per field.
//
//   sppark_ntt LO HI REPEATS     forward NTTs of 2^LO .. 2^HI random elements, already on the device
//
// For each size and each input/output order sppark offers without a bit-reversal pass (NR: Gentleman-Sande,
// RN: Cooley-Tukey; NN adds one, shown for reference), the median of REPEATS runs after two warm-ups, timed
// by CUDA events on sppark's stream (as perf/ntt.py times ours), and the wall clock of the best order's
// call through to its completion.
#if defined(FEATURE_BLS12_381)
#include <ff/bls12-381.hpp>
#elif defined(FEATURE_BN254)
#include <ff/alt_bn128.hpp>
#else
#error "define FEATURE_BN254 or FEATURE_BLS12_381"
#endif
#include <ntt/ntt.cuh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

static void check(cudaError_t err, const char* what) {
    if (err != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(err));
        std::exit(1);
    }
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char** argv) {
    const int lo = argc > 1 ? std::atoi(argv[1]) : 16, hi = argc > 2 ? std::atoi(argv[2]) : 26;
    const int repeats = argc > 3 ? std::atoi(argv[3]) : 7;
    const gpu_t& gpu = select_gpu(0);
    stream_t& stream = gpu;
    const size_t most = size_t(1) << hi;
    // random elements below 2^253 (below either scalar field's modulus), made once and reused
    std::vector<uint64_t> host(most * 4);
    std::mt19937_64 rng(15);
    for (size_t i = 0; i < host.size(); i++) host[i] = (i % 4 == 3) ? rng() >> 3 : rng();
    fr_t* data = nullptr;
    check(cudaMalloc(&data, most * sizeof(fr_t)), "cudaMalloc");
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    const NTT::InputOutputOrder orders[3] = {NTT::InputOutputOrder::NR, NTT::InputOutputOrder::RN,
                                             NTT::InputOutputOrder::NN};
    std::printf("| log2 n | NR (GS) ms | RN (CT) ms | NN ms | best, wall ms |\n|---|---|---|---|---|\n");
    for (int lg = lo; lg <= hi; lg++) {
        const size_t n = size_t(1) << lg;
        double ms[3];
        for (int o = 0; o < 3; o++) {
            std::vector<double> times;
            for (int r = 0; r < repeats + 2; r++) {
                check(cudaMemcpy(data, host.data(), n * sizeof(fr_t), cudaMemcpyHostToDevice), "cudaMemcpy");
                check(cudaEventRecord(start, stream), "cudaEventRecord");
                NTT::Base_dev_ptr(stream, data, lg, orders[o], NTT::Direction::forward, NTT::Type::standard);
                check(cudaEventRecord(stop, stream), "cudaEventRecord");
                check(cudaEventSynchronize(stop), "cudaEventSynchronize");
                float t = 0;
                check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
                if (r >= 2) times.push_back(t);
            }
            ms[o] = median(times);
        }
        const int best = ms[0] <= ms[1] ? 0 : 1;
        std::vector<double> walls;
        for (int r = 0; r < repeats; r++) {
            check(cudaMemcpy(data, host.data(), n * sizeof(fr_t), cudaMemcpyHostToDevice), "cudaMemcpy");
            const auto t0 = std::chrono::steady_clock::now();
            NTT::Base_dev_ptr(stream, data, lg, orders[best], NTT::Direction::forward, NTT::Type::standard);
            stream.sync();
            walls.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::printf("| %d | %.3f | %.3f | %.3f | %.3f |\n", lg, ms[0], ms[1], ms[2], median(walls));
        std::fflush(stdout);
    }
    check(cudaFree(data), "cudaFree");
    return 0;
}
