#!/usr/bin/env bash
# s16http's figures for the closing device call (about 45 s; BN254 kernels ready, the environment of
# scripts/final_h200.sh: cwd the repo root, PYTHONPATH, GROTH16_KERNEL_CACHE): what HTTP adds at p50 to a 2^14
# proof (issue 16, target <= 1 ms), in paired rounds (30 proofs in-process, then 30 through HTTP with the
# client's spin off and at its default 3 ms, three times over, one warm engine each side), the instant engine
# asleep 15 ms a proof (the wire and the service alone), and the CLI client's whole proof against the warm
# server (target <= 60 ms), as the README installs it when .cw/ holds the engine's wheel (pip wheel --no-deps .).
#   OUT=/tmp/out bash perf/s16http_final.sh      (the whole perf/serve.py log: $OUT/s16http_serve.log)
# S16_SERVE_ARGS adds perf/serve.py flags (later ones win: --rounds 5 --spins 0,3,8), S16_TIMEOUT its limit (58 s).
set -u
K=${W:-/tmp}/s16hf
mkdir -p "$K" "$OUT"
venv=""
wheel=$(ls .cw/*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] && venv="--client-venv $K/cv --client-wheel $wheel"
timeout ${S16_TIMEOUT:-58} python3 perf/serve.py --backend gpu --log-constraints 14 --repeats 30 --rounds 3 --spins 0,3 \
  --no-rates --instant-delay-ms 15 --workdir "$K/sv" $venv ${S16_SERVE_ARGS:-} >"$OUT/s16http_serve.log" 2>&1
echo "perf/serve.py exit $? after ${SECONDS} s"
grep -v '^{"python"' "$OUT/s16http_serve.log"  # the tables (the first line is the whole record, JSON)
rm -rf "$K"
