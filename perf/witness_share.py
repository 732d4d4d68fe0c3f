"""Share of 0, 1 and other small values in the witnesses of real circom circuits.

    python perf/witness_share.py [--json out.json] [--keep DIR]

The A, B1, C and B2 MSMs of a proof take the whole witness as scalars; a zero adds
nothing and a small value lands in one bucket of the lowest window only (one entry
instead of W), so these shares decide what the witness MSMs cost.  Circuits: the
sudoku example, the circuits of tests/circuits, and three built here from circomlib
(node_modules): a chain of Poseidon hashes, a Poseidon Merkle-path check, SHA-256 of
a 512-bit message.  Each is compiled with circom2 (BN254), its witness computed by
engine.witness and counted.  "small" is 2 <= v < 2^16, "-small" is r - v for such v
(r - 1 included); "full" is everything else.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpu_common import table  # noqa: E402  (perf/ is on sys.path when run as a script)

from engine.algebra.curves import BN254  # noqa: E402
from engine.witness.calculator import WasmCircuit  # noqa: E402
from script_args import Parser, output_dir, output_file, run_main  # noqa: E402
from engine.file_writes import write_file  # noqa: E402 - whole or not at all

POSEIDON_CHAIN = """pragma circom 2.0.0;
include "circomlib/circuits/poseidon.circom";
template Chain(N) {
    signal input x;
    signal output y;
    component h[N];
    for (var i = 0; i < N; i++) {
        h[i] = Poseidon(2);
        h[i].inputs[0] <== i == 0 ? x : h[i - 1].out;
        h[i].inputs[1] <== i;
    }
    y <== h[N - 1].out;
}
component main = Chain(64);
"""

MERKLE = """pragma circom 2.0.0;
include "circomlib/circuits/poseidon.circom";
template MerklePath(D) {
    signal input leaf;
    signal input siblings[D];
    signal input bits[D];
    signal output root;
    component h[D];
    signal cur[D + 1];
    signal left[D];
    cur[0] <== leaf;
    for (var i = 0; i < D; i++) {
        bits[i] * (bits[i] - 1) === 0;
        left[i] <== bits[i] * (siblings[i] - cur[i]) + cur[i];
        h[i] = Poseidon(2);
        h[i].inputs[0] <== left[i];
        h[i].inputs[1] <== siblings[i] + cur[i] - left[i];
        cur[i + 1] <== h[i].out;
    }
    root <== cur[D];
}
component main = MerklePath(20);
"""

SHA256 = """pragma circom 2.0.0;
include "circomlib/circuits/sha256/sha256.circom";
component main = Sha256(512);
"""


def built_circuits(rng: random.Random, work: Path) -> list[tuple[str, Path, dict]]:
    r = BN254.r
    made = [
        ("poseidon chain x64", POSEIDON_CHAIN, {"x": str(rng.randrange(r))}),
        ("poseidon merkle depth 20", MERKLE, {"leaf": str(rng.randrange(r)),
                                              "siblings": [str(rng.randrange(r)) for _ in range(20)],
                                              "bits": [str(rng.randrange(2)) for _ in range(20)]}),
        ("sha256 512-bit message", SHA256, {"in": [str(rng.randrange(2)) for _ in range(512)]}),
    ]
    out = []
    for name, src, inputs in made:
        stem = name.split()[0] + "_" + name.split()[1]
        (work / f"{stem}.circom").write_text(src)
        out.append((name, work / f"{stem}.circom", inputs))
    out.append(("sudoku (examples)", REPO / "examples" / "sudoku.circom",
                json.loads((REPO / "examples" / "bn128" / "input.json").read_text())))
    for c in sorted((REPO / "tests" / "circuits").glob("*.circom")):
        inp = c.with_suffix(".input.json")
        out.append((f"tests/circuits/{c.name}", c, json.loads(inp.read_text())))
    return out


def compile_wasm(circuit: Path, work: Path) -> Path:
    circom = REPO / "node_modules" / ".bin" / "circom2"
    subprocess.run([str(circom), str(circuit), "--wasm", "--prime", "bn128", "-l", str(REPO / "node_modules"),
                    "-o", str(work)], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return work / f"{circuit.stem}_js" / f"{circuit.stem}.wasm"


def shares(witness: np.ndarray, r: int) -> dict:
    """Fractions of the witness's values by kind (rows of little-endian u64 limbs)."""
    w = np.ascontiguousarray(witness, dtype=np.uint64)
    high_zero = (w[:, 1:] == 0).all(axis=1)
    lo = w[:, 0]
    zero = high_zero & (lo == 0)
    one = high_zero & (lo == 1)
    small = high_zero & (lo >= 2) & (lo < 1 << 16)
    neg = r - np.array([int.from_bytes(row.tobytes(), "little") for row in w], dtype=object)
    neg_small = np.array([0 < v < 1 << 16 for v in neg], dtype=bool)
    n = len(w)
    return {"wires": n, "zero": round(float(zero.sum()) / n, 4), "one": round(float(one.sum()) / n, 4),
            "small": round(float(small.sum()) / n, 4), "-small": round(float(neg_small.sum()) / n, 4),
            "full": round(1 - float((zero | one | small | neg_small).sum()) / n, 4)}


def main() -> None:
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=output_file, help="write the rows here too")
    ap.add_argument("--keep", type=output_dir, help="build in this directory (kept) instead of a temporary one")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows = []
        for name, circuit, inputs in built_circuits(rng, work):
            wasm = compile_wasm(circuit, work)
            witness = WasmCircuit.load(wasm).calculate(inputs)
            rows.append({"circuit": name, **shares(witness, BN254.r)})
            print(rows[-1], flush=True)
    print(table(rows, ["circuit", "wires", "zero", "one", "small", "-small", "full"]))
    if args.json:
        write_file(args.json, json.dumps(rows, indent=1))


if __name__ == "__main__":
    import pipe_exit  # `| head`: quietly 141, not a BrokenPipeError traceback
    pipe_exit.install()
    run_main(main)
