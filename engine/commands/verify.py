"""`python -m engine verify <verification_key.json> <public.json> <proof.json>` (as `snarkjs groth16 verify`).

Prints "OK!" and exits 0 for a valid proof, prints "Invalid proof" and exits 1
for one that is not (with the reason on stderr where it is more than the pairing
check: a point off its curve); unreadable or inconsistent files are a one-line error
with exit 2 (a proof of another curve, a public.json of another length, a key
point off its curve or outside its subgroup, ...).  `--quiet` leaves out the OK! line, `--json` gives the
verdict as a JSON result line (and an error as a JSON line on stderr), as every other command does.
"""
from __future__ import annotations

import argparse
import json
import os
import stat
import sys

from engine.errors import FormatError, MismatchError
from engine.paths import shown


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "verify",
        help="verify a Groth16 proof",
        description="Verify proof.json against verification_key.json and public.json as "
        "`snarkjs groth16 verify` does: prints OK! (exit 0) or Invalid proof (exit 1).  A file it cannot read, or "
        "files that do not belong together (another curve, another number of public signals), is one error line "
        "(exit 2); so is a number not below its field's prime.",
    )
    p.add_argument("vkey", metavar="verification_key.json")
    p.add_argument("public", metavar="public.json")
    p.add_argument("proof", metavar="proof.json")
    from engine.progress import add_output_flags  # noqa: PLC0415

    add_output_flags(p, quiet="no OK! line for a valid proof (the exit code says it); Invalid proof and errors "
                     "still print", json="the verdict as one JSON line on stdout ({\"valid\": ...}; exit 0 or 1 as "
                     "without it), an error as a JSON line on stderr",
                     verbose="the elapsed time of every stage, on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """--quiet and --json as every other command takes them (they were usage errors); without them the output is
    snarkjs's.  --json's verdict is a result line ({"valid": false} with exit 1), not an error line: the files
    were read, and the proof is not one of them."""
    from engine.formats.json import read_proof, read_public, read_vkey
    from engine.groth16.verifier import checked_key, proof_problem, verify
    from engine.commands.outputs import refuse_dash
    from engine.progress import format_timings, make_progress

    refuse_dash([("verification key", args.vkey), ("public signals", args.public), ("proof", args.proof)])
    for path, what in ((args.vkey, "verification_key.json"), (args.public, "public.json"), (args.proof, "proof.json")):
        _refuse_binary(path, what)
    progress = make_progress("verify", quiet=True, json=args.json)  # no bar: snarkjs's output is one line
    with progress.timed("read", 0.0):
        vk = checked_key(read_vkey(args.vkey), args.vkey)
        public = read_public(args.public, vk.curve)
        proof = read_proof(args.proof, vk.curve, against=args.vkey)
    if len(public) != vk.n_public:
        raise MismatchError(
            f"{args.public}: has {len(public)} public signals but {args.vkey} expects nPublic = {vk.n_public}"
        )
    proof.public = public
    with progress.timed("verify", 0.5):
        valid = verify(vk, public, proof)
        problem = None if valid else proof_problem(vk, proof)  # snarkjs too says why ("Proof commitments are ...")
    progress.done()
    if args.json:
        print(json.dumps({"event": "result", "valid": valid, "problem": problem, "curve": vk.curve.name,
                          "public_signals": vk.n_public, "timings": progress.timings}))
        return 0 if valid else 1
    if args.verbose:
        print(format_timings(progress.timings), file=sys.stderr)  # stdout stays snarkjs's one line
    if valid:
        if not args.quiet:
            print("OK!")
        return 0
    print("Invalid proof")
    if problem is not None:
        print(f"{shown(args.proof)}: {problem}", file=sys.stderr)
    return 1


def _refuse_binary(path: str, what: str) -> None:
    """A .zkey (or another binary file) where a JSON file goes, named as such from its first bytes: the JSON
    reader said "not UTF-8" after reading all of it, many GiB for a large key.  A pipe is left to that reader,
    which alone may consume it; a file that cannot be opened too, which says why."""
    from engine.formats.json_text import BINARY_KINDS  # noqa: PLC0415 - the readers' own list

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # before any open: a named pipe's writer must meet one reader
            return
        with open(path, "rb") as f:
            kind = BINARY_KINDS.get(f.read(4))
    except (OSError, ValueError):
        return
    if kind is not None:
        hint = " (`python -m engine export-vkey` writes one from it)" if kind == ".zkey" and what.startswith("ver") \
            else ""
        raise FormatError(path, f"is a {kind} file, not a {what}{hint}")
