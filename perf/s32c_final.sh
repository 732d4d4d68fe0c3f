#!/usr/bin/env bash
# Session 32's closing figures, part 3: warm whole proofs with the new default builds and with the former
# ones (GROTH16_MSM_PRODUCTS), in turns, on scripts/final_h200.sh's keys (its "prove" step made them).
for round in 1 2; do
  for abi in default old; do
    env=""; [ $abi = old ] && env="GROTH16_MSM_PRODUCTS=g1=eo,g2=eo"
    echo "round $round, BN254, $abi builds"
    env $env python3 perf/prove.py --log-constraints 16,20 --curves bn128 --backend gpu --repeats 5 \
      --workdir /tmp/fin/pp 2>&1 | grep "^|"
    [ $abi = old ] && env="GROTH16_MSM_PRODUCTS=g1=mixed_eo,g2=eo"
    echo "round $round, BLS12-381, $abi builds"
    env $env python3 perf/prove.py --log-constraints 20 --curves bls12381 --backend gpu --repeats 5 \
      --workdir /tmp/fin/pp 2>&1 | grep "^|"
  done
done
