#!/usr/bin/env bash
# Session 35: the small transforms' pass plan, 10 / 8 / 6 / 5 levels a pass at most (perf/ntt.py --max-pass-levels),
# BN254 2^12-2^20, queued ms / iNTT+coset ms, two alternating rounds.  Carry [".whl", ".kcache"].
. perf/s31_env.sh > /dev/null
for round in 1 2; do for L in 10 8 6 5; do
  echo "== levels $L round $round"
  python3 perf/ntt.py --sizes 12,13,14,15,16,17,18,19,20 --curves bn128 --repeats 9 --max-pass-levels $L 2>&1 | python3 -c "
import sys, ast
rows = [ast.literal_eval(l) for l in sys.stdin if l.startswith('{')]
print(' '.join(f\"{r['log2 n']}:{r['passes']}:{r['NTT queued ms']}/{r['iNTT+coset ms']}\" for r in rows))
"
done; done
