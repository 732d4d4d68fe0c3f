"""The command line's argparse parser class: its help's width found without importing shutil."""
from __future__ import annotations

import argparse
import os
import re
import sys


def env_columns() -> int:
    """$COLUMNS as a width, 0 where it is unset or not a number > 0."""
    try:
        return max(int(os.environ.get("COLUMNS", "")), 0)
    except ValueError:
        return 0


def terminal_columns() -> int:
    """shutil.get_terminal_size()'s columns ($COLUMNS, else stdout's terminal, else 80), without shutil."""
    columns = env_columns()
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


_SIZED: dict[type, type] = {}


def sized(formatter: type) -> type:
    """`formatter` with its width found by terminal_columns().  argparse makes a formatter for every
    add_argument (to check the metavar), and with no width given it imports shutil (and bz2, lzma,
    fnmatch with it): 1.6 ms of the CLI client's ~35 ms here, 2.6 ms on the H200's machine."""
    if formatter not in _SIZED:
        def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
            formatter.__init__(self, prog, indent_increment, max_help_position,
                               terminal_columns() - 2 if width is None else width)
        _SIZED[formatter] = type(formatter.__name__, (formatter,), {"__init__": __init__})
    return _SIZED[formatter]


class Parser(argparse.ArgumentParser):
    """argparse's parser with sized() formatters; its subcommands' parsers are Parsers too.  A line with --json
    gets its usage error as the CLI's one JSON error line, not argparse's usage text."""

    _json_errors = False

    def __init__(self, *args, formatter_class: type = argparse.HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=sized(formatter_class), **kwargs)

    _flags: list = []

    def parse_known_args(self, args=None, namespace=None):
        given = sys.argv[1:] if args is None else list(args)
        flags = given[:given.index("--")] if "--" in given else given
        self._json_errors = "--json" in flags
        self._flags = flags
        parsed, extras = super().parse_known_args(args, namespace)
        self._refuse_empty_names(parsed)
        return parsed, extras

    def _refuse_empty_names(self, parsed: argparse.Namespace) -> None:
        """An empty file name (`''`, an unset shell variable) is a usage error naming the argument: `prove --config
        ''` and `--r1cs ''` were read as not given (a proof without its configuration or its check, exit 0), and
        `info ''` said "no such file", naming nothing.  Every positional argument is a file (or a choice), and so
        is every option whose metavar is FILE or a file's name (circuit.r1cs); folders' are their commands' to judge
        (`--key-cache-dir ''` is the default, bench-circuit's directory says what "" would be)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) or action.choices is not None:  # noqa: SLF001
                continue
            metavar = action.metavar if isinstance(action.metavar, str) else ""
            if action.option_strings and not (metavar == "FILE" or "." in metavar):
                continue
            if (metavar or action.dest) in ("DIR", "directory"):  # a folder's: its command names an empty one
                continue
            value = getattr(parsed, action.dest, None)
            if value == "" or (isinstance(value, list) and "" in value):
                name = max(action.option_strings, key=len) if action.option_strings else metavar or action.dest
                self.error(f"argument {name}: an empty name is not a file")

    def parse_args(self, args=None, namespace=None):
        """An argument the command does not take is the command's usage error (with the flags it takes), not the
        top level's `usage: python -m engine [-h] COMMAND ...`."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            (self._command_parser(parsed) or self).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> "argparse.ArgumentParser | None":
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001 - argparse's only handle on it
                return action.choices.get(getattr(parsed, action.dest, None))
        return None

    def error(self, message: str):
        message += self._dash_hint()
        if self._json_errors:
            import json  # noqa: PLC0415

            self.exit(2, json.dumps({"event": "error", "error": "UsageError", "message": message, "exit_code": 2})
                      + "\n")
        from engine.paths import escaped  # noqa: PLC0415

        super().error(escaped(message))  # an argument's newline or escape sequence: one line, not the terminal's

    def _dash_hint(self) -> str:
        """A file named with a leading "-" (`info -k.zkey`) is read as an unknown option, and the error was "the
        following arguments are required: file": say what happened and how to give it."""
        for i, arg in enumerate(self._flags):
            if not isinstance(arg, str) or not arg.startswith("-") or arg.startswith("--") or arg == "-":
                continue
            if arg in self._option_string_actions or self._negative_number_matcher.match(arg):
                continue
            if _number(arg):  # `--idle-timeout -1.5e3` (or -inf): argparse reads only -1 and -1.5 as numbers,
                before = self._flags[i - 1] if i else ""  # and the hint below took it for a file's name
                flag = before if before in self._option_string_actions else "--flag"
                return f" ({arg} was read as an option: write {flag}={arg})"
            if "." in arg or "/" in arg or os.path.lexists(arg):
                return (f' ({arg} was read as an option: give a file whose name starts with "-" as ./{arg}, '
                        "or after --)")
        return ""


# a number as the commands' number flags take one: ASCII digits, a decimal point, an exponent, inf, nan (float()
# also reads '١' and '1_000', which they refuse: config_flags.whole_number, serve's seconds, client_flags' deadline);
# a pattern compiled on first use (an error's), not at every command's start
_NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)"


def _number(text: str) -> bool:
    """Whether `text` is written as the commands' number flags take one (-1.5e3, -inf: a flag's value, given
    where argparse reads an option); '-1_000' and '-١' are no number of theirs, and are not said to be one."""
    return re.fullmatch(_NUMBER, text, re.ASCII | re.IGNORECASE) is not None
