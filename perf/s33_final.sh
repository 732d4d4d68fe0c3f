#!/usr/bin/env bash
# Session 33's closing figures, part 1 (carry .ntt_ab from `python perf/ntt_ab.py build .ntt_ab --variants eo3,mo4`):
# the two twiddle forms of the final kernels side by side at the sizes around BN254's switch (2^20 Shoup, 2^21 on
# Montgomery), then perf/ntt.py on the defaults (ntt.SHOUP_MAX_LOG) for both curves.
[ -d .ntt_ab ] && python3 perf/ntt_ab.py run .ntt_ab --sizes 20,21,22,24 --repeats 7 2>&1 | tail -8
python3 perf/ntt.py --sizes 16,18,20,21,22,24,26 --repeats 7 2>&1 | grep "^|"
