"""The perf/ scripts' argument parser: a bad argument is one line and exit 2, as the engine's own usage errors are.

argparse's `type=int` took '٣' and '1_000' (int() reads any Unicode digit and underscores), '-3' for a count,
and `type=float` took 1e400 (inf) and nan: a benchmark then ran for ever, or failed deep inside with a traceback.
Every number flag of these scripts is a count or an amount (repeats, proofs, milliseconds, MiB), so the Parser
reads `int` as a count (ASCII digits, 0 or more) and `float` as a finite amount (0 or more); a flag that needs
1 or more says so with `type=positive` (or `positive_float`).  Comma lists (count_list, amount_list, curve_list)
are checked whole at the parse, before a GPU script's device check, not item by item after the device's set-up
(list_of, choice_list, word_or and fields build a script's own: msm.py's THREADSxM[s], ntt_ab.py's plans; size
reads a memory size as the engine does); files to read, files and folders to write are checked there too
(input_file, output_file, output_dir), and run_main() turns the engine's own user errors (a wrong key) into its
one line.  Named script_args, not args: the scripts' own `args = ap.parse_args()` would hide a module of that name.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import stat
import sys
from pathlib import Path

_DIGITS = re.compile(r"[0-9]+")
_REAL = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_MAX = 1 << 63  # a count a C size or a numpy array takes; beyond it, a typo


def _shown(text: str, limit: int | None = 40) -> str:
    """The argument as the error shows it: escapes for what is not printable, a number cut where long (a path
    is shown whole: limit None)."""
    shown = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return repr(shown if limit is None or len(shown) <= limit else shown[:limit] + "...")


def _path(text: str) -> str:
    return _shown(text, None)


def count(text: str) -> int:
    """A whole number of things, 0 or more, in ASCII digits."""
    if not _DIGITS.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is no count (ASCII digits, 0 or more)")
    value = int(text.strip())
    if value >= _MAX:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is too large (below 2^63)")
    return value


def positive(text: str) -> int:
    """A count of at least one (repeats, runs, proofs: none of them leaves nothing to measure)."""
    value = count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is below 1")
    return value


def amount(text: str) -> float:
    """A finite amount, 0 or more (milliseconds, seconds, MiB), ASCII only: no inf, nan, '١' or '1_0'."""
    if not _REAL.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is no amount (a finite number, 0 or more)")
    value = float(text.strip())
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is too large (not a finite number)")
    return value


def positive_float(text: str) -> float:
    """An amount above 0 (a duration to measure over)."""
    value = amount(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not above 0")
    return value


def _items(text: str, what: str) -> list[str]:
    """A comma list's items; an empty list or an empty item ("1,,2") is refused (it was read as 0 or skipped)."""
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or "" in items:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is no comma list of {what}")
    return items


def _list_of(check, what: str, name: str):
    """A comma list's reader: each item held to `check`, the list handed on as a string, its items stripped and
    joined by commas (the scripts split it themselves, after the device check: " affine" matched no mode)."""
    def read(text: str) -> str:
        items = _items(text, what)
        for item in items:
            check(item)
        return ",".join(items)

    read.__name__ = name  # (argparse's word for the type)
    return read


list_of = _list_of  # a script's own comma list: list_of(check, "what its items are", "name")


def choice_list(choices, what: str, name: str, blank: bool = False):
    """A comma list of words, each one of `choices` (lock modes, sort kinds): a typo was matched literally
    (timed nothing) or refused deep in a run, after the device's set-up.  `blank`: "" is the script's default."""
    def check(item: str) -> None:
        if item not in choices:
            raise argparse.ArgumentTypeError(f"{_shown(item)} is no {what} (one of: {', '.join(choices)})")

    read = _list_of(check, f"{what}s (e.g. {','.join(list(choices)[:2])})", name)
    return optional(read) if blank else read


def optional(read):
    """A reader that also takes "" (the flag's default: none of them, the script's own value)."""
    def read_or_none(text: str) -> str:
        return "" if text == "" else read(text)

    read_or_none.__name__ = read.__name__
    return read_or_none


def word_or(word: str, check, name: str):
    """`word` itself ("full", "all", "whole", "base") or a value `check` takes, handed on as a string."""
    def read(text: str) -> str:
        if text.strip() == word:
            return word
        try:
            value = check(text.strip())
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"{e}, and not {word!r}") from None
        return value if isinstance(value, str) else text.strip()  # a list's reader hands on its own form

    read.__name__ = name
    return read


def fields(text: str, sep: str, checks, what: str) -> list:
    """An item's fields (SERIAL:WARPMAX:PERLANE, THREADSxM), each held to its check: the item is named whole
    in the refusal, with what it should be."""
    parts = text.split(sep)
    if len(parts) != len(checks):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is no {what}")
    try:
        return [check(part) for check, part in zip(checks, parts, strict=True)]
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is no {what}: {e}") from None


def size(text: str) -> str:
    """A memory size as the engine reads it (8GiB, 512MiB, 1.5G, 1000000), handed on as given."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from engine.config import parse_size  # noqa: PLC0415 - the engine's own grammar
    from engine.errors import EngineError  # noqa: PLC0415

    try:
        parse_size(text.strip(), "size")
    except EngineError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("size: ")) from None
    return text.strip()


count_list = _list_of(positive, "counts (e.g. 1,2,4)", "count_list")  # counts of at least one
whole_count_list = _list_of(count, "counts (e.g. 0,8)", "whole_count_list")  # 0 has a meaning (no wide passes)
amount_list = _list_of(amount, "amounts (e.g. 0,1.5)", "amount_list")  # finite, 0 or more ("0,15" ms)
positive_amount_list = _list_of(positive_float, "amounts above 0 (e.g. 0.25,2)", "positive_amount_list")  # sizes


def _curve_name(text: str) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from engine.algebra.curves import curve_by_name  # noqa: PLC0415 - the engine's own names and aliases

    try:
        return curve_by_name(text).name
    except KeyError as e:
        raise argparse.ArgumentTypeError(e.args[0]) from None


def curve_name(text: str) -> str:
    """A curve's name or alias (bn254, BLS12-381), handed on as the engine's name (bn128, bls12381): scripts
    name fixtures and files by it, and one matched names literally (an alias, or a typo, timed nothing)."""
    return _curve_name(text.strip())


def curve_list(text: str) -> str:
    """A comma list of curves, as curve_name() reads each, handed on as the engine's names joined by commas."""
    return ",".join(_curve_name(item) for item in _items(text, "curves (e.g. bn128,bls12381)"))


def _kind(path: str) -> str:
    """What a path that is there names, in a word or two ("a FIFO"), for the refusals below."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "not usable"
    for test, word in ((stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a file"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return word
    return "no plain file"


def input_file(text: str) -> str:
    """A file to read that is there and is no folder: checked before any device or key work starts, so that a
    typo is the usage line, not a traceback minutes later (or the GPU check's "no device", on a laptop)."""
    try:
        mode = os.stat(text).st_mode
    except (OSError, ValueError) as e:
        raise argparse.ArgumentTypeError(f"{_path(text)}: {getattr(e, 'strerror', None) or 'no such file'}") from None
    if stat.S_ISDIR(mode):
        raise argparse.ArgumentTypeError(f"{_path(text)} is a folder, not a file")
    return text


def output_file(text: str) -> str:
    """A file to write (JSON rows, a profile), in a folder that is there and itself no folder: refused here, not
    with a traceback after the whole measurement.  A FIFO or a device (`--json >(jq .)`, /dev/stdout) is
    written in place, as the engine's own outputs are (engine/file_writes.py)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty name is not a file")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{_path(text)}: its folder {_path(folder)} is not there")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{_path(text)} is a folder, not a file to write")
    return text


def output_dir(text: str) -> str:
    """A folder to write into, made where missing: one that is there must be a folder (a file or a FIFO of that
    name was FileExistsError, a traceback, after the first measurement)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty name is not a folder")
    path = os.path.abspath(text)
    while not os.path.lexists(path):  # the nearest part that is there must be a folder too
        path = os.path.dirname(path)
    if not os.path.isdir(path):
        where = "" if path == os.path.abspath(text) else f": {_path(path)}"
        raise argparse.ArgumentTypeError(f"{_path(text)}{where} is {_kind(path)}, not a folder")
    return text


def run_main(main, *args):
    """main(*args), with an error the engine reports to a user (a missing or malformed key, a bad setting) and an
    OSError on a named file as one line and the engine's exit code (2, an OSError's too), not a traceback; an
    ExceptionGroup of them (a TaskGroup's) as its first.  Other exceptions are bugs and keep their traceback."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from engine.errors import EngineError  # noqa: PLC0415 - the engine's own user-facing errors

    try:
        return main(*args)
    except BaseException as e:  # noqa: BLE001 - sorted below; everything else is raised again
        leaf = e
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        if isinstance(leaf, EngineError):
            code = leaf.exit_code
        elif isinstance(leaf, OSError) and leaf.filename is not None and not isinstance(leaf, BrokenPipeError):
            code = 2
        else:
            raise
        message = " ".join(str(leaf).split()) or type(leaf).__name__
        if not message.isprintable():
            message = message.encode("unicode_escape").decode("ascii")
        print(f"{Path(sys.argv[0]).name}: {message}", file=sys.stderr)
        raise SystemExit(code) from None


class Parser(argparse.ArgumentParser):
    """argparse with the scripts' number types and a one-line usage error (prog: error: ...; --help for the
    rest), exit 2."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.register("type", int, count)
        self.register("type", float, amount)

    def error(self, message: str):
        message = " ".join(message.split())  # argparse's own messages (a list of required flags) on one line
        if not message.isprintable():
            message = message.encode("unicode_escape").decode("ascii")
        sys.stderr.write(f"{self.prog}: error: {message} (--help: the flags)\n")
        raise SystemExit(2)
