"""`python -m engine setup <circuit.r1cs> <circuit.zkey>`: a DEVELOPMENT Groth16 key, no ceremony needed.

The key is in snarkjs's .zkey layout, so our prover, `snarkjs groth16 prove`
and `snarkjs zkey export verificationkey` all accept it; its secrets were
drawn in this process, so it is for tests and benchmarks only.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys

from engine.commands.outputs import check_outputs
from engine.config_flags import positive_int
from engine.paths import shown
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
    quiet_prints_nothing(p, "summary, no development-key warning")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engine.progress import format_timings, make_progress
    from engine.groth16.setup import DEV_WARNING, select_setup_ops, setup_file

    check_outputs([("key", args.zkey)], [("circuit", args.r1cs)])
    _check_workers(args.workers)
    notes = io.StringIO() if args.json else sys.stderr  # --json: its notes as JSON warning lines, as every line
    ops = select_setup_ops(args.backend, workers=args.workers, notes=notes)
    if args.json:
        import warnings  # noqa: PLC0415 - cli shows a warning as one JSON line under --json

        for line in notes.getvalue().splitlines():
            warnings.warn(line.removeprefix("note: "), stacklevel=2)
    prog = make_progress("setup", quiet=args.quiet, json=args.json)
    try:
        key = setup_file(args.r1cs, args.zkey, ops, curve=args.curve, progress=prog)
    except BaseException:
        prog.done()  # a terminal's bar cleared: the error or `interrupted` line was written on its end
        raise
    finally:
        ops.close()
    out = _summary_stream(args.zkey)
    summary = {
        "zkey": args.zkey, "curve": key.curve.name, "backend": ops.name, "domain": key.domain_size,
        "n_vars": key.n_vars, "n_public": key.n_public, "development_key": True, "warning": DEV_WARNING,
    }
    if args.json:
        print(json.dumps({"event": "result", **summary, "timings": prog.timings}), file=out)
        return 0
    if not args.quiet:  # --quiet: nothing on success, as `prove --quiet` (--verbose still asks for the timings)
        print(f"wrote {shown(args.zkey)}: {key.curve.name}, domain 2^{key.log_domain}, {key.n_vars} wires, "
              f"{key.n_public} public signals ({ops.name})", file=out)
        print(f"WARNING: {DEV_WARNING}", file=sys.stderr)
    if args.verbose:
        print(format_timings(prog.timings), file=out)
    return 0


def quiet_prints_nothing(parser, what: str = "summary") -> None:
    """--quiet's help for a command that prints a summary (`prove --quiet` prints none either): nothing at all."""
    parser._option_string_actions["--quiet"].help = f"nothing printed on success (no progress bar, no {what}); " \
        "errors still are"


def _check_workers(workers: int | None) -> None:
    """Refuse a --workers count far past the CPUs: each is a fork of this process, all started at once."""
    from engine.errors import EngineError  # noqa: PLC0415
    from engine.groth16.setup_points import MAX_WORKERS_PER_CPU  # noqa: PLC0415
    from scheduler.setup_pool import default_workers  # noqa: PLC0415

    cpus = default_workers()
    if workers is not None and workers > MAX_WORKERS_PER_CPU * cpus:
        raise EngineError(f"--workers {workers}: more than {MAX_WORKERS_PER_CPU} processes per CPU this process may "
                          f"use ({cpus}) only slow the setup down; give at most {MAX_WORKERS_PER_CPU * cpus}")


def _summary_stream(zkey: str):
    """stdout, unless the key itself went there (`setup c.r1cs /dev/stdout > k.zkey`, `| ...`): then stderr.
    The summary was written over the key's first bytes, or after its end."""
    try:
        a, b = os.stat(zkey), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # no real stdout (captured, closed)
        return sys.stdout
    return sys.stderr if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) else sys.stdout
