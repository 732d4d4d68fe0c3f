#!/usr/bin/env bash
# Session 40's plan for a device call (carry [".whl", ".kcache"]), run by session 41 in two calls within the
# per-call limit: perf/s41a_h200.sh (the inlined builds against the CPU, the MSMs in two rounds) and
# perf/s41b_h200.sh (batch-affine against XYZZ, the 2^20 proofs with each G1 build).  Both, one after the other:
#   OUT=/tmp/out bash perf/s40_h200.sh
set -u
bash perf/s41a_h200.sh
bash perf/s41b_h200.sh
