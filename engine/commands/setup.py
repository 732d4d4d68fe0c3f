"""`python -m engine setup <circuit.r1cs> <circuit.zkey>`: a DEVELOPMENT Groth16 key, no ceremony needed.

The key is in snarkjs's .zkey layout, so our prover, `snarkjs groth16 prove`
and `snarkjs zkey export verificationkey` all accept it; its secrets were
drawn in this process, so it is for tests and benchmarks only.
"""
from __future__ import annotations

import argparse
import json
import sys

from engine.commands.outputs import check_outputs
from engine.config_flags import positive_int
from engine.progress import add_output_flags

HELP = "make a DEVELOPMENT Groth16 key (toxic waste known to whoever runs it) for an .r1cs"
DESCRIPTION = """\
Make a Groth16 proving key for an .r1cs directly, with fresh random tau, alpha,
beta, delta (gamma = 1, as snarkjs), in snarkjs's .zkey layout.

DEVELOPMENT KEY ONLY: the toxic waste is known to whoever ran this command, who
can forge proofs with it.  Use it to test and benchmark circuits of any size
without a powers-of-tau ceremony; never to protect anything.  For a real key
use a ceremony (snarkjs powersoftau + groth16 setup + zkey contribute).

The group work runs on the GPU when one exists (--backend auto), else on the
CPU in a process pool.
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "setup", help=HELP, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("r1cs", metavar="circuit.r1cs", help="the circuit (circom .r1cs)")
    p.add_argument("zkey", metavar="circuit.zkey", help="where to write the development proving key")
    p.add_argument("--curve", help="check that the circuit is over this curve (bn128/bn254 or bls12381); "
                   "by default the curve is the one of the .r1cs prime")
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto",
                   help="where the group work runs (default auto: the GPU when a CUDA device exists)")
    p.add_argument("--workers", type=positive_int, default=None, help="CPU processes (default: all cores)")
    add_output_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engine.progress import format_timings, make_progress
    from engine.groth16.setup import DEV_WARNING, select_setup_ops, setup_file

    check_outputs([("key", args.zkey)], [("circuit", args.r1cs)])
    ops = select_setup_ops(args.backend, workers=args.workers)
    prog = make_progress("setup", quiet=args.quiet, json=args.json)
    try:
        key = setup_file(args.r1cs, args.zkey, ops, curve=args.curve, progress=prog)
    finally:
        ops.close()
    summary = {
        "zkey": args.zkey, "curve": key.curve.name, "backend": ops.name, "domain": key.domain_size,
        "n_vars": key.n_vars, "n_public": key.n_public, "development_key": True, "warning": DEV_WARNING,
    }
    if args.json:
        print(json.dumps({"event": "result", **summary, "timings": prog.timings}))
        return 0
    print(f"wrote {args.zkey}: {key.curve.name}, domain 2^{key.log_domain}, {key.n_vars} wires, "
          f"{key.n_public} public signals ({ops.name})")
    print(f"WARNING: {DEV_WARNING}", file=sys.stderr)
    if args.verbose:
        print(format_timings(prog.timings))
    return 0
