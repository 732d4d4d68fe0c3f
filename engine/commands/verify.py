"""`python -m engine verify <verification_key.json> <public.json> <proof.json>` (as `snarkjs groth16 verify`).

Prints "OK!" and exits 0 for a valid proof, prints "Invalid proof" and exits 1
for one that is not (with the reason on stderr where it is more than the pairing
check: a point off its curve); unreadable or inconsistent files are a one-line error
with exit 2 (a proof of another curve, a public.json of another length, a key
point off its curve or outside its subgroup, ...).
"""
from __future__ import annotations

import argparse
import sys

from engine.errors import MismatchError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "verify",
        help="verify a Groth16 proof",
        description="Verify proof.json against verification_key.json and public.json as "
        "`snarkjs groth16 verify` does: prints OK! (exit 0) or Invalid proof (exit 1).",
    )
    p.add_argument("vkey", metavar="verification_key.json")
    p.add_argument("public", metavar="public.json")
    p.add_argument("proof", metavar="proof.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engine.formats.json import read_proof, read_public, read_vkey
    from engine.groth16.verifier import checked_key, proof_problem, verify

    vk = checked_key(read_vkey(args.vkey), args.vkey)
    public = read_public(args.public, vk.curve)
    proof = read_proof(args.proof, vk.curve, against=args.vkey)
    if len(public) != vk.n_public:
        raise MismatchError(
            f"{args.public}: has {len(public)} public signals but {args.vkey} expects nPublic = {vk.n_public}"
        )
    proof.public = public
    if verify(vk, public, proof):
        print("OK!")
        return 0
    print("Invalid proof")
    problem = proof_problem(vk, proof)  # snarkjs too says why ("Proof commitments are not valid.")
    if problem is not None:
        print(f"{args.proof}: {problem}", file=sys.stderr)
    return 1
