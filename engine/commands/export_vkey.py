"""`python -m engine export-vkey <circuit.zkey> <verification_key.json>` (as `snarkjs zkey export verificationkey`).

The output is byte-identical to snarkjs's, vk_alphabeta_12 included.
"""
from __future__ import annotations

import argparse
import json

from engine.commands.outputs import check_outputs
from engine.progress import add_output_flags


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export-vkey",
        help="write the verification key of a Groth16 zkey",
        description="Write verification_key.json for a Groth16 .zkey, byte-identical to "
        "`snarkjs zkey export verificationkey`.",
    )
    p.add_argument("zkey", metavar="circuit.zkey", help="the Groth16 proving key")
    p.add_argument("vkey", metavar="verification_key.json", help="where to write the verification key")
    add_output_flags(p)
    p._option_string_actions["--quiet"].help = "nothing printed on success (as without it; taken as by every command)"
    p._option_string_actions["--json"].help = "the result (and an error) as a JSON line"
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """--quiet and --json as every other command has them (they were usage errors): the result as one JSON line,
    errors as JSON lines (cli.report), --verbose the stages' times."""
    from engine.formats import read_zkey
    from engine.formats.json import write_vkey
    from engine.groth16.verifier import vk_from_zkey
    from engine.progress import format_timings, make_progress

    check_outputs([("verification key", args.vkey)], [("key", args.zkey)])
    progress = make_progress("export-vkey", quiet=args.quiet, json=args.json)
    try:
        with progress.timed("read key", 0.0):
            key = read_zkey(args.zkey)
        with progress.timed("write", 0.8):
            vk = vk_from_zkey(key)
            write_vkey(args.vkey, vk)
    finally:
        progress.done()
    out = _result_stream(args.vkey)
    if args.json:
        print(json.dumps({"event": "result", "vkey": args.vkey, "curve": vk.curve.name, "public_signals": vk.n_public,
                          "timings": progress.timings}), file=out)
    elif args.verbose:
        print(format_timings(progress.timings), file=out)
    return 0


def _result_stream(vkey: str):
    """stdout, unless the key itself went there (`export-vkey --json k.zkey /dev/stdout > vk.json`): then stderr,
    so that the key's file stays the key alone."""
    import io  # noqa: PLC0415
    import os  # noqa: PLC0415
    import sys  # noqa: PLC0415

    try:
        a, b = os.stat(vkey), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return sys.stdout
    return sys.stderr if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) else sys.stdout
