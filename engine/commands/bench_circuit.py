"""`python -m engine bench-circuit --constraints N --curve C <dir>`: a synthetic circuit and its witness.

Writes <dir>/<name>.r1cs and <dir>/<name>.wtns (engine.groth16.bench_circuit says
what the circuit holds); pair with `python -m engine setup` for a key.
"""
from __future__ import annotations

import argparse
import json
import os

from engine.commands.setup import quiet_prints_nothing
from engine.config_flags import quoted_value, whole_number
from engine.paths import shown, what_is
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
    p.add_argument("--constraints", type=bench_size, required=True, metavar="N", help="number of constraints")
    p.add_argument("--curve", default="bn128", help="bn128/bn254 (default) or bls12381")
    p.add_argument("--public", type=bench_size, default=2, metavar="N",
                   help="public signals: ceil(N/2) outputs, the rest inputs (default 2)")
    p.add_argument("--seed", type=bench_seed, default=0, help="random seed (default 0)")
    p.add_argument("--name", default="bench", help="file name stem (default bench)")
    add_output_flags(p)
    quiet_prints_nothing(p)
    p.set_defaults(func=run, preload=preload)


# Beyond this a size is refused as typed, cut: no key's domain comes near (2^31 at most), a --constraints of 400
# digits was an OverflowError traceback (engine/groth16/bench_circuit.py's plan() makes it a float), and a --public
# of thousands of digits was repeated in full.  The ranges below it are check_request's.
FAR = 1 << 63


def bench_size(text: str) -> int:
    """--constraints, --public: a whole number in ASCII digits (int() took '٨٠' as 80 and '1_0' as 10)."""
    value = whole_number(text)
    if value >= FAR:
        raise argparse.ArgumentTypeError(f"{quoted_value(text)} is more than any circuit holds (2^63 or more; a key's "
                                         "domain is at most 2^31)")
    if value <= -FAR:
        raise argparse.ArgumentTypeError(f"{quoted_value(text)} is negative")
    return value


def bench_seed(text: str) -> int:
    """--seed: a whole number in ASCII digits, as large as numpy takes (any size); a negative one of thousands of
    digits is refused here, cut (check_request repeated it in full)."""
    value = whole_number(text)
    if value <= -FAR:
        raise argparse.ArgumentTypeError(f"{quoted_value(text)} is negative")
    return value


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
    check_request(args)  # before any directory is made: a typo'd --curve made DIR and removed it again
    try:
        make_directories(args.directory, args.name)
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


def check_request(args: argparse.Namespace) -> None:
    """The arguments' own errors (engine.groth16.bench_circuit.check_request's), said before any directory is
    made, so that a refused request touches nothing on disk."""
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415
    from engine.errors import EngineError  # noqa: PLC0415
    from engine.groth16.bench_circuit import check_request as check  # noqa: PLC0415

    try:
        curve = curve_by_name(args.curve)
    except KeyError as exc:
        raise EngineError(str(exc.args[0])) from None
    try:
        check(curve, args.constraints, args.public, args.seed, args.name)
    except ValueError as exc:
        raise EngineError(str(exc)) from None


# Plans made again where a parent went away between two mkdirs (a run beside this one removed the folder it had
# made, once; each run removes only its own): more than this many such runs at once is not a race but a fight.
MAKE_TRIES = 8


def make_directories(directory, name: str = "bench") -> list[str]:
    """Make DIR and its missing parents, outermost first, and keep for the clean-up (engine/interrupts.py's
    made_directories) only those this run's own mkdir created.  os.makedirs could not say which it made, so the
    list was planned beforehand: two runs making one new folder both counted it as theirs, and the first to fail
    removed it under the other, whose outputs then had no folder.  One that another run makes first is not ours
    (FileExistsError), and is never removed by this run.  (Ctrl-C between a mkdir and its note leaves that empty
    directory behind: better than removing another run's.)  An error names what DIR or a parent is instead."""
    from engine import interrupts  # noqa: PLC0415

    made: list[str] = []
    interrupts.made_directories(made)  # (none yet: not an earlier run's in this process either)
    for _ in range(MAKE_TRIES):
        for path in directories_to_make(directory):
            try:
                os.mkdir(path)
            except FileExistsError:  # a run beside this one made it (or it is no directory: said below)
                continue
            except FileNotFoundError as exc:
                if os.path.lexists(os.path.dirname(path) or os.curdir):  # there, but a broken link (or the like)
                    raise _make_error(directory, exc) from None
                break  # a parent went away (another run's clean-up): plan again
            except OSError as exc:
                raise _make_error(directory, exc) from None
            made.append(path)
            interrupts.made_directories(made)
        else:
            break
    refuse_no_directory(directory, name)
    return made


def refuse_no_directory(directory, name: str) -> None:
    """DIR exists but is no directory: an error that says what it is (a FIFO was "a file")."""
    from engine.errors import InputFileError  # noqa: PLC0415

    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise InputFileError(directory, f"is {what_is(directory)}, not a directory: {name}.r1cs and {name}.wtns are "
                                        "written into a directory")


def _make_error(directory, exc: OSError) -> Exception:
    """mkdir's refusal, naming the parent that is not a directory where that was it (ENOTDIR, or ENOENT under a
    broken link)."""
    from engine.errors import InputFileError  # noqa: PLC0415

    if isinstance(exc, (NotADirectoryError, FileNotFoundError)):
        parent = os.path.dirname(os.fsdecode(directory))
        while parent and not os.path.lexists(parent):
            parent = os.path.dirname(parent)
        if parent and not os.path.isdir(parent):
            return InputFileError(directory, f"cannot create the output directory: {shown(parent)} is "
                                             f"{what_is(parent)}, not a directory")
    return InputFileError(directory, f"cannot create the output directory: {exc.strerror or exc}")


def directories_to_make(directory) -> list[str]:
    """The directories os.makedirs(directory) would create, outermost first, named as the user's path names them
    (`new/deeper`: new, new/deeper); none where it exists, or is no path at all (write_bench_circuit's error)."""
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
