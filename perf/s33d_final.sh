#!/usr/bin/env bash
# Session 33's closing figures, part 4: the MSMs at 2^24 (G1 both curves, BN254 G2) on the final kernels.
python3 perf/msm.py --sizes 24 --curves bn128,bls12381 --g2 --repeats 5 2>&1 | grep "^|" | cut -c1-200
