"""`python -m engine export-vkey <circuit.zkey> <verification_key.json>` (as `snarkjs zkey export verificationkey`).

The output is byte-identical to snarkjs's, vk_alphabeta_12 included.
"""
from __future__ import annotations

import argparse

from engine.commands.outputs import check_outputs


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export-vkey",
        help="write the verification key of a Groth16 zkey",
        description="Write verification_key.json for a Groth16 .zkey, byte-identical to "
        "`snarkjs zkey export verificationkey`.",
    )
    p.add_argument("zkey", metavar="circuit.zkey", help="the Groth16 proving key")
    p.add_argument("vkey", metavar="verification_key.json", help="where to write the verification key")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engine.formats import read_zkey
    from engine.formats.json import write_vkey
    from engine.groth16.verifier import vk_from_zkey

    check_outputs([("verification key", args.vkey)], [("key", args.zkey)])
    vk = vk_from_zkey(read_zkey(args.zkey))
    write_vkey(args.vkey, vk)
    return 0
