"""`python -m engine`: the command line.

Each subcommand lives in `engine/commands/<name>.py` and exposes
`register(subparsers)`, which adds its parser and sets `func` (args -> exit
code).  This file only parses, dispatches, and turns engine errors into one
line on stderr with a non-zero exit: never a traceback for a user's mistake.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# subcommand name -> module under engine.commands
COMMANDS = {
    "prove": "prove",
    "verify": "verify",
    "info": "info",
    "export-vkey": "export_vkey",
    "witness": "witness",
    "setup": "setup",
    "bench-circuit": "bench_circuit",
    "serve": "serve",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m engine",
        description="Groth16 prover for circom/snarkjs circuits (BN254 and BLS12-381), on GPU or CPU.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in COMMANDS.items():
        try:
            mod = importlib.import_module(f"engine.commands.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"engine.commands.{module}":
                raise
            continue  # a command not built yet
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from engine.errors import EngineError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("error: out of host memory", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
