#!/usr/bin/env bash
# Session 32's closing figures, part 1 (scripts/final_h200.sh FINALS, OUT set there): the split form's
# products against the even/odd ones, and the fold tables' builds.
python3 perf/field_fq.py --blocks-per-sm 8 2>&1 | tail -10
python3 perf/tables.py --log-n 20 --builds plain,eo,split 2>&1 | tail -13
