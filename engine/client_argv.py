"""`python -m engine prove --server URL ...` read without argparse, when the line is a plain one.

The client's whole run is a few milliseconds of HTTP, and argparse with prove's parser (every engine
flag, gettext, locale) was 4 ms of its start here and about 8 ms on the H200's machine.  This reads
the lines a client is given as they stand: the flags below, each once or more (the last wins), values
after a space or '=', the files in one run.  Any other line (another or abbreviated flag, --help, a
value that starts with '-', an empty one, a bad choice or number, --json with --quiet, files split by
flags, the wrong number of files) gives None, and the full parser reads it as before, with argparse's
own messages.  tests/test_client_argv.py checks that both read every plain line alike.
"""
from __future__ import annotations

from engine.client_flags import LOCAL_ONLY, PRIORITIES, deadline_value

# flag -> attribute of the parsed arguments, as prove's parser names them
VALUED = {"--server": "server", "--token-file": "token_file", "--priority": "priority", "--deadline": "deadline",
          "--wasm": "wasm", "--input": "input"}
SWITCHES = {"--json": "json", "--quiet": "quiet", "--verbose": "verbose"}
# prove's other flags, at their defaults (prove_command refuses the local-only ones when given)
UNSET = (*LOCAL_ONLY, "key_cache_dir", "ray")


class ServerArgs:
    """The parsed line, with the attributes cli.main and the client read from argparse's Namespace."""

    def __init__(self, **values):
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"ServerArgs({self.__dict__!r})"

    @staticmethod
    def preload(args) -> list[str]:
        return ["engine.client"]

    @staticmethod
    def func(args) -> int:
        from engine.client_command import prove_command  # noqa: PLC0415 - the client's HTTP code, for this line only
        from engine.commands.outputs import check_outputs  # noqa: PLC0415

        wtns = None if args.wasm else args.files[0]
        # as prove's parser does (commands/prove.py): a proof written over the witness exited 0 here
        check_outputs([("proof", args.files[-2]), ("public signals", args.files[-1])],
                      [("key", args.zkey), ("witness", wtns), ("wasm", args.wasm), ("input signals", args.input)])
        return prove_command(args, wtns, args.files[-2], args.files[-1])


def read_prove_server(argv: list[str]) -> ServerArgs | None:
    if argv[:1] != ["prove"]:
        return None
    found: dict = {"server": None, "token_file": None, "priority": None, "deadline": None, "wasm": None,
                   "input": None, "json": False, "quiet": False, "verbose": False}
    positional: list[str] = []
    run_ended = False  # the files are one run: a flag between two of them is argparse's to read
    rest, i = argv[1:], 0
    while i < len(rest):
        arg = rest[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            if run_ended or not arg:  # an empty name: argparse's usage error (engine/commands/parsing.py)
                return None
            positional.append(arg)
            continue
        run_ended = bool(positional)
        name, eq, value = arg.partition("=")
        if name in SWITCHES and not eq:
            found[SWITCHES[name]] = True
        elif name in VALUED:
            if not eq:
                if i == len(rest):
                    return None
                value, i = rest[i], i + 1
            if not value or value.startswith("-"):
                return None
            if name == "--priority" and value not in PRIORITIES:
                return None  # each value is checked as argparse checks it, an overridden one too
            if name == "--deadline":
                value = deadline_value(value)
                if value is None:  # argparse names the problem
                    return None
            found[VALUED[name]] = value
        else:
            return None
    if found["server"] is None or (found["json"] and found["quiet"]):
        return None
    with_wasm = found["wasm"] is not None or found["input"] is not None
    if with_wasm and (found["wasm"] is None or found["input"] is None):
        return None
    if len(positional) != (3 if with_wasm else 4):
        return None
    return ServerArgs(command="prove", zkey=positional[0], files=positional[1:], engines=None,
                      **dict.fromkeys(UNSET), **found)
