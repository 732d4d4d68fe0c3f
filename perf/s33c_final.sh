#!/usr/bin/env bash
# Session 33's closing figures, part 3: the MSMs at 2^16-2^20 with G1's segments in blocks of 128 (msm.REDUCE_THREADS).
python3 perf/msm.py --sizes 16,18,20 --curves bn128,bls12381 --g2 --repeats 5 2>&1 | grep "^|" | cut -c1-200
