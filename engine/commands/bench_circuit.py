"""`python -m engine bench-circuit --constraints N --curve C <dir>`: a synthetic circuit and its witness.

Writes <dir>/<name>.r1cs and <dir>/<name>.wtns (engine.groth16.bench_circuit says
what the circuit holds); pair with `python -m engine setup` for a key.
"""
from __future__ import annotations

import argparse
import json

from engine.commands.setup import quiet_prints_nothing
from engine.paths import shown
from engine.progress import add_output_flags

DESCRIPTION = """\
Write a satisfiable synthetic circuit (.r1cs) of exactly N constraints and a
witness (.wtns) for it: boolean decompositions, bit logic, multiplications
with additions folded into linear combinations, multiplexers, and a few public
signals, in proportions like those of ordinary circom code.  The same
arguments and --seed give the same files.

The key's domain is 2^(floor(log2(N + public)) + 1): for a domain of exactly
2^k use N = 2^k - public - 1.
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench-circuit", help="write a synthetic benchmark circuit (.r1cs) and its witness (.wtns)",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("directory", help="output directory (created if missing)")
    p.add_argument("--constraints", type=int, required=True, metavar="N", help="number of constraints")
    p.add_argument("--curve", default="bn128", help="bn128/bn254 (default) or bls12381")
    p.add_argument("--public", type=int, default=2, metavar="N",
                   help="public signals: ceil(N/2) outputs, the rest inputs (default 2)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--name", default="bench", help="file name stem (default bench)")
    add_output_flags(p)
    quiet_prints_nothing(p)
    p.set_defaults(func=run, preload=preload)


def preload(args: argparse.Namespace) -> list[str]:
    """Modules `run` imports, loaded while a signal still ends the start cleanly (cli.main): a SIGTERM inside
    numpy's C init was swallowed there and failed as an ImportError traceback (exit 1)."""
    return ["numpy", "engine.groth16.bench_circuit"]


def run(args: argparse.Namespace) -> int:
    from engine.groth16.bench_circuit import write_bench_circuit
    from engine import interrupts
    from engine.errors import EngineError
    from engine.progress import format_timings, make_progress

    prog = make_progress("bench-circuit", quiet=args.quiet, json=args.json)
    interrupts.made_directories(directories_to_make(args.directory))
    try:
        r1cs_path, wtns_path, bench = write_bench_circuit(
            args.directory, args.curve, args.constraints, n_public=args.public, seed=args.seed, name=args.name,
            progress=prog,
        )
    except ValueError as exc:
        interrupts.remove_made_directories()
        raise EngineError(str(exc)) from None
    except BaseException:  # Ctrl-C, a stop signal, a full disk: DIR was left created and empty (its line says so)
        prog.done()  # (a terminal's bar cleared: the line was written on its end)
        interrupts.remove_made_directories()
        raise
    interrupts.made_directories([])  # they hold the outputs now
    r = bench.r1cs
    k = max(1, (r.n_constraints + r.n_public).bit_length())
    terms = int(r.a.row_ptr[-1] + r.b.row_ptr[-1] + r.c.row_ptr[-1])
    summary = {"r1cs": r1cs_path, "wtns": wtns_path, "curve": r.curve.name, "constraints": r.n_constraints,
               "wires": r.n_wires, "public": r.n_public, "terms": terms, "domain": 1 << k, "mix": bench.mix}
    if args.json:
        print(json.dumps({"event": "result", **summary, "timings": prog.timings}))
        return 0
    if not args.quiet:  # --quiet: nothing on success, as `prove --quiet`
        print(f"wrote {shown(r1cs_path)} and {shown(wtns_path)}: {r.curve.name}, {r.n_constraints} constraints, "
              f"{r.n_wires} wires, {terms} terms, {r.n_public} public signals; a key's domain is 2^{k}")
    if args.verbose:
        print(format_timings(prog.timings))
    return 0


def directories_to_make(directory) -> list[str]:
    """The directories os.makedirs(directory) would create, outermost first, named as the user's path names them
    (`new/deeper`: new, new/deeper); none where it exists, or is no path at all (write_bench_circuit's error)."""
    import os  # noqa: PLC0415

    try:
        path = os.fsdecode(directory)
    except TypeError:
        return []
    head, made = path, []
    while head and not os.path.lexists(head):
        parent, tail = os.path.split(head)
        if tail not in ("", ".", ".."):
            made.append(head)
        if parent == head:
            break
        head = parent
    return made[::-1]
