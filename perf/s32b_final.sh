#!/usr/bin/env bash
# Session 32's closing figures, part 2: MSMs with each curve's new default builds (G1 split on both curves,
# BLS12-381's G2 split) against the former defaults (BN254 eo; BLS12-381 G1 mixed_eo, G2 eo), one call.
cols() { grep "^|" | cut -d'|' -f2-5,13-14,23-28; }
python3 perf/msm.py --sizes 20,24 --curves bn128 --repeats 5 --combos eo:auto,default:auto 2>&1 | cols
python3 perf/msm.py --sizes 20,24 --curves bls12381 --repeats 5 --combos mixed_eo:auto,default:auto 2>&1 | cols
python3 perf/msm.py --sizes 20 --curves bls12381 --g2-only --g2-curves bls12381 --repeats 5 \
  --combos eo:auto,default:auto 2>&1 | cols
