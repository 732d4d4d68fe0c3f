"""`python -m engine witness <circuit.wasm> <input.json> <witness.wtns>` (as `snarkjs wtns calculate`).

Runs circom's witness calculator in-process (engine.witness.calculator) and writes
a .wtns byte-identical to snarkjs's.  Nothing is written when the inputs or
the circuit are wrong.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging

from engine.commands.outputs import check_outputs
from engine.errors import WitnessGenerationError
from engine.progress import add_output_flags, format_timings, make_progress

WTNS_N8 = 32  # .wtns files here hold 32-byte elements (bn128, bls12381)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "witness",
        help="compute a witness (.wtns) from circuit.wasm and input.json",
        description="Compute the witness of a circom 2 circuit (its <name>_js/<name>.wasm) for input.json "
        "and write it as a .wtns file, byte-identical to `snarkjs wtns calculate`.",
    )
    p.add_argument("wasm", metavar="circuit.wasm", help="circom's compiled witness calculator")
    p.add_argument("input", metavar="input.json", help="input signals: numbers, decimal or 0x-hex strings, arrays")
    p.add_argument("output", metavar="witness.wtns", help="where to write the witness")
    add_output_flags(p)
    p.set_defaults(func=run, preload=preload)


def preload(args: argparse.Namespace) -> list[str]:
    """Modules `run` imports, loaded while a signal still ends the start cleanly (cli.main): a SIGTERM inside
    numpy's C init, imported in `run`, was swallowed there and failed as an ImportError traceback (exit 1)."""
    return ["numpy", "engine.witness.calculator", "engine.formats.wtns"]


def run(args: argparse.Namespace) -> int:
    from engine.witness.calculator import WasmCircuit, parse_inputs

    check_outputs([("witness", args.output)], [("wasm", args.wasm), ("input signals", args.input)])

    progress = make_progress("witness", quiet=args.quiet, json=args.json)
    try:
        with progress.timed("load circuit", 0.0):
            circuit = WasmCircuit.load(args.wasm, quick=True)  # one witness: compile time dominates
        if circuit.n8 != WTNS_N8:
            raise WitnessGenerationError(
                f"{args.wasm}: {circuit.n8}-byte field elements (prime {circuit.prime:#x}) cannot be written "
                f"as .wtns here: this engine writes {WTNS_N8}-byte ones (primes below 2^256; it proves bn128 "
                "and bls12381 circuits)"
            )
        with progress.timed("read inputs", 0.2):
            inputs = parse_inputs(args.input)
        with progress.timed("calculate", 0.3), circuit_log_shown(progress, quiet=args.quiet):
            values = circuit.calculate(inputs, source=args.input)
        with progress.timed("write", 0.9):
            write_witness(args.output, circuit.prime, values)
    finally:
        progress.done()
    if args.json:
        curve = circuit.curve.name if circuit.curve else None
        print(json.dumps({"event": "result", "wtns": args.output, "curve": curve, "n_witness": circuit.n_witness,
                          "timings": progress.timings}))
    elif args.verbose:
        print(format_timings(progress.timings))
    return 0


@contextlib.contextmanager
def circuit_log_shown(progress, *, quiet: bool):
    """The circuit's own log() lines while the block runs, which snarkjs prints too (`wtns calculate`, `groth16
    fullprove`): on stderr here (stdout is for --json; with --json as JSON lines, {"event": "log", "text": ...},
    as every line there is); none with --quiet.  Shared with `prove --wasm`, which showed none."""
    if quiet:
        yield
        return
    circuit_log = logging.getLogger("engine.witness.calculator")
    handler = _JsonLog(progress)  # above a terminal's bar too (Progress.log)
    level = circuit_log.level
    handler.setFormatter(logging.Formatter("%(message)s"))
    circuit_log.addHandler(handler)
    if circuit_log.getEffectiveLevel() > logging.INFO:
        circuit_log.setLevel(logging.INFO)
    try:
        yield
    finally:
        circuit_log.removeHandler(handler)
        circuit_log.setLevel(level)


class _JsonLog(logging.Handler):
    """A circuit's log line through the progress (Progress.log): a line on stderr, above a terminal's bar, or
    with --json the {"event": "log", "text": ...} line."""

    def __init__(self, progress) -> None:
        super().__init__()
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.progress.log(self.format(record))
        except Exception:  # noqa: BLE001 - never what fails the command (it runs inside the circuit's call;
            pass  # a reader that left ends it at the next progress line, with 141)


def write_witness(path: str, prime: int, values) -> None:
    """Write the .wtns: whole or not at all (engine/file_writes.py). It used to delete the path after a
    failed write, which took an older witness with it, or /dev/full itself."""
    from engine.formats import write_wtns

    write_wtns(path, prime, values)
