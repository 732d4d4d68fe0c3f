#!/usr/bin/env bash
# The lead's closing figures of session 26, second part (a FINALS entry of scripts/final_h200.sh, after its
# "prove" step): the tail's phases in the proof and again alone (perf/final_phase.py), BN254 2^13; the 2^13
# proof on one time line.  (At f8cea3f it ran both with GROTH16_FINAL_WIDE=1 and =0, since removed.)
set -u
d=${W:-/tmp/fin}/pp/bn128_2^13
[ -e "$d/bench.zkey" ] || exit 1
timeout 15 python3 perf/final_phase.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 9 2>&1 | tail -9
timeout 12 python3 perf/proof_timeline.py --zkey "$d/bench.zkey" --wtns "$d/bench.wtns" --repeats 15 2>&1 | tail -22
