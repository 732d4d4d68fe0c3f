"""cuda_kernels/msm_buckets.cuh compiled by g++ on the host: the bucket of every position, and
the walks forward and back, against a Python reference on offsets with long empty runs (a batch
of 0/1 witnesses) and random ones.  Skipped where no C++ compiler is installed."""
from __future__ import annotations

import bisect
import random
import shutil
import subprocess
from pathlib import Path

import pytest

HEADER = Path(__file__).resolve().parent.parent / "cuda_kernels" / "msm_buckets.cuh"
CXX = shutil.which("g++") or shutil.which("c++")

# reads K and K+1 offsets on stdin; prints, for every position p < L: bucket_at from 0, the
# forward walk's bucket (bucket_after from the previous position's) and the backward walk's
# (bucket_before from the next position's, lo = the first position's bucket)
HARNESS = r"""
#include <cstdint>
#include <cstdio>
#include <vector>
#include "msm_buckets.cuh"
int main() {
    uint32_t K;
    if (scanf("%u", &K) != 1) return 1;
    std::vector<uint32_t> off(K + 1);
    for (auto& v : off) if (scanf("%u", &v) != 1) return 1;
    const uint32_t L = off[K];
    std::vector<uint32_t> fwd(L), bwd(L);
    uint32_t k = 0;
    for (uint32_t p = 0; p < L; p++) fwd[p] = k = bucket_after(off.data(), K, k, p);
    const uint32_t lo = L ? bucket_at(off.data(), 0, K, 0) : 0;
    k = L ? bucket_at(off.data(), 0, K, L - 1) : 0;
    for (uint32_t p = L; p-- > 0;) bwd[p] = k = bucket_before(off.data(), lo, k, p);
    for (uint32_t p = 0; p < L; p++) printf("%u %u %u\n", bucket_at(off.data(), 0, K, p), fwd[p], bwd[p]);
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    if CXX is None:
        pytest.skip("no C++ compiler on this machine")
    d = tmp_path_factory.mktemp("buckets")
    (d / "h.cpp").write_text(HARNESS)
    exe = d / "h"
    subprocess.run([CXX, "-std=c++17", "-O1", "-I", str(HEADER.parent), str(d / "h.cpp"), "-o", str(exe)],
                   check=True)
    return exe


def run(exe, counts: list[int]) -> list[tuple[int, int, int]]:
    off = [0]
    for c in counts:
        off.append(off[-1] + c)
    text = f"{len(counts)}\n" + " ".join(map(str, off)) + "\n"
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout
    return [tuple(int(v) for v in line.split()) for line in out.splitlines()], off


@pytest.mark.parametrize("shape", ["witness batch", "random", "one bucket", "last bucket", "first only"])
def test_bucket_walks_match_python(harness, shape):
    rng = random.Random(shape)
    K = 4096
    if shape == "witness batch":  # ten vectors: a big bucket of ones, then 2^k empty buckets
        counts = [0] * K
        for j in range(8):
            counts[j * (K // 8)] = rng.randrange(50, 300)
            counts[j * (K // 8) + rng.randrange(1, K // 8)] = rng.randrange(1, 3)
    elif shape == "random":
        counts = [rng.choice([0, 0, 1, 2, 5]) for _ in range(K)]
    elif shape == "one bucket":
        counts = [0] * K
        counts[K // 2] = 1000
    elif shape == "last bucket":
        counts = [0] * (K - 1) + [17]
    else:
        counts = [9] + [0] * (K - 1)
    rows, off = run(harness, counts)
    assert len(rows) == off[-1]
    for p, (at, fwd, bwd) in enumerate(rows):
        expect = bisect.bisect_right(off, p) - 1  # largest k with off[k] <= p
        assert (at, fwd, bwd) == (expect, expect, expect), p
        assert counts[expect] > 0
