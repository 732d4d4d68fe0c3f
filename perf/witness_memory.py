"""The witness under an address-space limit: wasmtime's default memories (4 GiB reserved each, no bounds checks)
against the bounded ones engine/witness/runtime.py takes below BOUNDED_MEMORY_BELOW (`ulimit -v`).

Circuit: tests/circuits/witness/merkle.circom (as perf/witness.py), compiled here with circom2 (needs node).
Each mode runs in its own process (the mode is the process's), warm: the module compiled and one witness
made first, then the median of --runs calculations.

Usage: python perf/witness_memory.py [--runs 15] [--limit-gib 8]
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from script_args import Parser, positive, positive_float, run_main

ROOT = Path(__file__).resolve().parents[1]
CIRCUIT = ROOT / "tests" / "circuits" / "witness" / "merkle.circom"
INPUT = ROOT / "tests" / "circuits" / "witness" / "merkle_input.json"

CHILD = """
import json, statistics, sys, time
sys.path.insert(0, {root!r})
from engine.witness import runtime
from engine.witness.calculator import WasmCircuit
inputs = json.load(open({inputs!r}))
circuit = WasmCircuit.load({wasm!r})
circuit.calculate(inputs)
times = []
for _ in range({runs}):
    t = time.perf_counter()
    circuit.calculate(inputs)
    times.append(time.perf_counter() - t)
mode = "bounded" if runtime.bounded_memory() else "default"
print(f"{{mode:8}} {{circuit.compiler}}: median {{statistics.median(times) * 1e3:.2f}} ms, min {{min(times) * 1e3:.2f}} ms")
"""


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=positive, default=15)
    ap.add_argument("--limit-gib", type=positive_float, default=8.0, help="RLIMIT_AS of the bounded run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        # circom2 runs under WASI: its includes resolve from the repository as the working directory
        subprocess.run([str(ROOT / "node_modules" / ".bin" / "circom2"), str(CIRCUIT.relative_to(ROOT)), "--wasm",
                        "--prime", "bn128", "-l", "node_modules", "-o", work], check=True, stdout=subprocess.DEVNULL,
                       cwd=ROOT)
        wasm = str(Path(work) / "merkle_js" / "merkle.wasm")
        code = CHILD.format(root=str(ROOT), inputs=str(INPUT), wasm=wasm, runs=args.runs)
        limit = int(args.limit_gib * (1 << 30))

        def limited() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        for preexec in (None, limited):
            subprocess.run([sys.executable, "-c", code], check=True, preexec_fn=preexec)


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
