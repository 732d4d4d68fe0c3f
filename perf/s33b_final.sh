#!/usr/bin/env bash
# Session 33's closing figures, part 2: the bucket reduction's block size at proof sizes (msm_reduce_segments,
# msm.REDUCE_THREADS; G1 runs 256-thread blocks, i.e. 64 blocks at 2^16 on 132 SMs), phases per row.
python3 perf/msm.py --sizes 14,16,18,20 --curves bn128,bls12381 --reduce-threads 128,256 --breakdown --repeats 5 \
  2>&1 | grep "^|" | cut -c1-260
