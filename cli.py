"""`python -m engine`: the command line.

Each subcommand lives in `engine/commands/<name>.py` and exposes
`register(subparsers)`, which adds its parser and sets `func` (args -> exit
code).  This file only parses, dispatches, and turns engine errors into one
line on stderr (a JSON object with --json) with a non-zero exit: never a
traceback for a user's mistake; Ctrl-C prints `interrupted` and exits 130 (SIGTERM, SIGHUP, SIGQUIT: `interrupted
by SIGTERM`, 128 + the signal: engine/interrupts.py).
"""
from __future__ import annotations

import importlib
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

# subcommand name -> module under engine.commands
COMMANDS = {
    "prove": "prove",
    "verify": "verify",
    "info": "info",
    "export-vkey": "export_vkey",
    "witness": "witness",
    "setup": "setup",
    "bench-circuit": "bench_circuit",
    "cache": "cache",
    "serve": "serve",
}


# Set by main: the command said it leaves nothing open for the interpreter's teardown (args.left_clean), so
# engine/__main__ may end the process without it.
left_clean = False
# Set by main: the line asks for --json (for the errors reported before its arguments are parsed, or without them)
json_line = False


def build_parser(only: str | None = None) -> "argparse.ArgumentParser":
    """The whole command line, or (`only`) the top level with that one subcommand: the parsers of the
    others are never built, nor their modules imported."""
    from engine.commands.parsing import Parser  # noqa: PLC0415 - argparse: not on `prove --server`'s path

    class CliParser(Parser):  # (its subcommands' parsers are of its class: argparse's parser_class)
        def _print_message(self, message, file=None):
            """argparse's, but a reader of stdout that left is not dropped: under `python -u` (no buffer to flush
            later) `--help | head` exited 0 where the buffered command exits 141 (engine/__main__)."""
            if message:
                file = file or sys.stderr
                try:
                    file.write(message)
                except BrokenPipeError:
                    if file is sys.stdout:
                        raise
                except (AttributeError, OSError):
                    pass

    parser = CliParser(
        prog=program_name(),
        description="Groth16 prover for circom/snarkjs circuits (BN254 and BLS12-381), on GPU or CPU.",
    )
    parser.add_argument("--version", nargs=0, action=_version_action(), help="print the engine's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in COMMANDS.items():
        if only is not None and name != only:
            continue
        try:
            mod = importlib.import_module(f"engine.commands.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"engine.commands.{module}":
                raise
            continue  # a command not built yet
        mod.register(sub)
    return parser


def program_name() -> str:
    """The name the command was run as, for usage lines: the installed script's (`groth16-engine`: it showed
    `python -m engine`), which imports engine.__main__ (`python -m engine` runs it as __main__ instead) or, an
    older install's, calls this main from its own __main__; else
    `python -m engine` (main() called by another program, a test's, names that program's argv[0] no more)."""
    import os  # noqa: PLC0415 - loaded with the interpreter

    script = "engine.__main__" in sys.modules or getattr(sys.modules.get("__main__"), "main", None) is main
    name = os.path.basename(sys.argv[0]) if script and sys.argv and sys.argv[0] else ""
    return "python -m engine" if name in ("", "-c", "-m", "__main__.py") else name


def _version_action():
    """argparse's "version" action, with the version read only when --version is given (every command builds
    this parser; importlib.metadata costs a cold start milliseconds)."""
    import argparse  # noqa: PLC0415 - build_parser's caller has loaded it

    class Version(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            print(f"groth16-engine {version()}")
            parser.exit()

    return Version


def version() -> str:
    """The installed distribution's version; pyproject.toml's beside this file where it is not installed (a
    checkout on sys.path).  Read only for --version: importlib.metadata is not on any command's path."""
    try:
        from importlib.metadata import PackageNotFoundError, version as installed  # noqa: PLC0415
    except ImportError:  # pragma: no cover - every supported Python has it
        installed, PackageNotFoundError = None, Exception
    if installed is not None:
        try:
            return installed("groth16-engine")
        except PackageNotFoundError:
            pass
    import os  # noqa: PLC0415
    import re  # noqa: PLC0415

    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyproject.toml"), encoding="utf-8") as f:
            found = re.search(r'(?m)^version\s*=\s*"([^"]+)"', f.read())
    except OSError:
        found = None
    return found.group(1) if found else "unknown"


def only_command(argv: list[str]) -> str | None:
    """The subcommand to build alone: `prove --server URL ...` (the service's client, whose whole run
    is a few milliseconds of HTTP) needs prove's parser and no other."""
    if argv[:1] == ["prove"] and any(a == "--server" or a.startswith("--server=") for a in argv[1:]):
        return "prove"
    return None


def named_command(argv: list[str]) -> str | None:
    """The subcommand a line starts with, whose parser alone reads it (the others' parsers and modules are
    not built: 25 ms of a cold `prove` here); None (the whole parser) for anything else, such as --help."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def quick_args(argv: list[str]):
    """`prove --server`'s arguments read without argparse when the line is plain (engine/client_argv.py);
    None for every other line, which the parser reads."""
    if only_command(argv) != "prove":
        return None
    from engine.client_argv import read_prove_server  # noqa: PLC0415

    return read_prove_server(argv)


def main(argv: list[str] | None = None) -> int:
    global left_clean, json_line
    from engine.errors import EngineError

    left_clean = False
    argv = sys.argv[1:] if argv is None else list(argv)
    json_line = "--json" in (argv[:argv.index("--")] if "--" in argv else argv)
    args = None
    if argv == ["--version"]:  # before any parser is built (that imports every command's module)
        try:
            print(f"groth16-engine {version()}")
            sys.stdout.flush()
        except EngineError as exc:  # a stdout that cannot take it (/dev/full): one line, not a traceback
            return report(None, type(exc).__name__, str(exc), exc.exit_code)
        return 0
    try:
        args = quick_args(argv)
        if args is None:
            args = build_parser(only=named_command(argv)).parse_args(argv)
        start = getattr(args, "start", None)
        if start is not None:  # what can begin before those imports (prove: the device, on a thread)
            start(args)
        for module in getattr(args, "preload", _load_first)(args):  # the command's heavy imports, now
            importlib.import_module(module)
    except KeyboardInterrupt:  # Ctrl-C while the commands load
        return report(None, "Interrupted", "interrupted", 130)
    except SystemExit:  # --help (or a usage error): argparse printed, then leaves; a stdout that cannot take it
        try:            # is one error line, not the interpreter's "Exception ignored" at its exit (code 120)
            sys.stdout.flush()
        except EngineError as exc:
            return report(None, type(exc).__name__, str(exc), exc.exit_code)
        raise
    except EngineError as exc:  # (an unbuffered stdout, python -u, that could not take --help)
        return report(None, type(exc).__name__, str(exc), exc.exit_code)
    except (MemoryError, OSError, ImportError) as exc:  # RLIMIT_AS: a module or a library could not be mapped
        if not out_of_memory(exc):
            raise
        return report(args, "MemoryError", f"out of host memory while loading the engine ({_memory_detail(exc)}); "
                      "raise the memory limit (ulimit -v)", 2)
    log_lines = None
    try:  # (from own_process on, a signal is a KeyboardInterrupt: one while it starts the watchdog was a traceback)
        if any(getattr(signal.getsignal(s), "loading", False) for s in (signal.SIGINT, *_stop_signals())):
            from engine import interrupts  # noqa: PLC0415 - small (os, signal, threading, contextlib)

            # engine/__main__'s start-up handlers: from here Ctrl-C is KeyboardInterrupt, SIGTERM/SIGHUP/SIGQUIT too
            interrupts.own_process(stop_signals=named_command(argv) != "serve", json=bool(getattr(args, "json", 0)))
        import warnings  # noqa: PLC0415 - loaded with the interpreter

        warnings.showwarning = _warning_line(args)
        log_lines = _route_log_warnings(args, named_command(argv))
        exit_handoff = sys.modules.get("engine.exit_handoff")  # (loaded by engine/__main__, where it ends the process)
        if exit_handoff is not None and exit_handoff.process_ends:
            exit_handoff.check()  # a bad GROTH16_EXIT_HANDOFF: the command's error, not a silent "off" at its end
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # what it printed, here: a stdout that cannot take it is this command's error
        _said(args, argv)
        return code
    except EngineError as exc:
        if _stop_signal_came() or _of_interrupt(exc):  # a worker that the same signal ended (sent to the group)
            return _report_interrupted(args)  # failed first
        if isinstance(exc.__cause__, BrokenPipeError):  # an output on a pipe whose reader left (/dev/stdout | head):
            raise exc.__cause__  # quietly 141 (engine/__main__), as for the command's own lines
        code = report(args, type(exc).__name__, _as_given(args, exc) + _cwd_note(exc), exc.exit_code,
                      _answer_fields(exc), path=getattr(exc, "path", None))
        _said(args, argv)
        return code
    except KeyboardInterrupt:
        return _report_interrupted(args)
    except Exception as exc:
        if _stop_signal_came() or _of_interrupt(exc):  # a KeyboardInterrupt that code turned into another error
            return _report_interrupted(args)
        if not (isinstance(exc, (MemoryError, OSError, ImportError)) and out_of_memory(exc)):
            raise
        return report(args, "MemoryError", "out of host memory", 2)
    finally:
        left_clean = bool(getattr(args, "left_clean", False))
        if log_lines is not None:
            sys.modules["logging"].getLogger().removeHandler(log_lines)


def _said(args: "argparse.Namespace", argv: list[str]) -> None:
    """The command has said its result or its error: a signal from here is too late (engine/interrupts.py's
    finished(), which a command that writes no file never reached: `verify` printed OK! and died of a SIGTERM
    in the interpreter's teardown, which puts Python's handlers back to the default action, exit -15).  Not
    where engine/__main__ ends the process without that teardown (`prove`, args.left_clean: its _leave), nor
    after an interrupt: there another one still ends the wait for a thread at once."""
    interrupts = sys.modules.get("engine.interrupts")
    if interrupts is not None and named_command(argv) != "prove" and not getattr(args, "left_clean", False):
        interrupts.outputs_made()


# Commands that name no preload of their own but import numpy whatever their input (an error's path included)
NUMPY_FIRST = {"verify", "info", "export-vkey", "setup"}


def _load_first(args: "argparse.Namespace") -> list[str]:
    """The heavy imports of a command that names none (args.preload), made before Ctrl-C and the stop signals
    become KeyboardInterrupts: numpy's C init swallowed one (SIGTERM 40 ms into `verify`) and failed, an
    ImportError traceback and exit 1 instead of `interrupted by SIGTERM`."""
    return ["numpy"] if getattr(args, "command", None) in NUMPY_FIRST else []


def _stop_signals() -> tuple:
    """SIGTERM, SIGHUP and SIGQUIT, where this platform has them (engine.interrupts.STOP_SIGNALS, not imported
    for this)."""
    return tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


def _report_interrupted(args: "argparse.Namespace") -> int:
    """The interrupted line and code, another interrupt held meanwhile (engine/interrupts.py's hold_further)."""
    interrupts = sys.modules.get("engine.interrupts")
    if interrupts is not None:
        interrupts.hold_further()
    return report(args, "Interrupted", *_interrupted())


def _interrupted() -> tuple[str, int]:
    """The interrupted command's line and exit code (engine/interrupts.py; plain Ctrl-C where it is not loaded)."""
    interrupts = sys.modules.get("engine.interrupts")
    return interrupts.interrupted() if interrupts is not None else ("interrupted", 130)


def _of_interrupt(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among the causes of `exc`: one raised inside a dataclass made at import
    came out as `RuntimeError: Error calling __set_name__`, a traceback and exit 1."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _stop_signal_came() -> bool:
    interrupts = sys.modules.get("engine.interrupts")
    return interrupts is not None and interrupts.stopped_by() is not None


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is the host refusing memory: MemoryError, ENOMEM, or a shared library that could not be
    mapped (an import under a small RLIMIT_AS)."""
    import errno  # noqa: PLC0415 - loaded with the interpreter

    if isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM):
        return True
    if isinstance(exc, ImportError):
        text = str(exc)
        return "failed to map segment" in text or "Cannot allocate memory" in text or \
            (exc.__cause__ is not None and out_of_memory(exc.__cause__))
    return False


def _memory_detail(exc: BaseException) -> str:
    """The failure that out_of_memory() recognised, short: numpy wraps a library that could not be mapped in an
    ImportError of some thirty lines of advice."""
    while isinstance(exc, ImportError) and exc.__cause__ is not None and out_of_memory(exc.__cause__):
        exc = exc.__cause__
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _cwd_note(exc: Exception) -> str:
    """A hint where the working directory was deleted under the command (a relative path, or a worker process
    that starts in it, then fails with a bare "No such file or directory")."""
    import os  # noqa: PLC0415

    try:
        os.getcwd()
    except FileNotFoundError:
        return "" if "current directory" in str(exc) else " (the current directory no longer exists)"
    except OSError:
        pass
    return ""


def one_line(text: str) -> str:
    """`text` with its control characters escaped (a newline in a file name, a terminal's escape sequence): an
    error or warning stays one line, and a name cannot drive the terminal."""
    from engine.paths import escaped  # noqa: PLC0415 - small (os, stat)

    return escaped(text)


def _warning_line(args: "argparse.Namespace"):
    """A warning as one line on stderr ("warning: ..."; a JSON object with --json), not Python's form with the
    file, line and source line of the code that warned (a setup of an .r1cs with coefficients >= r showed
    `r1cs = read_r1cs(r1cs_path)` on the terminal)."""
    def show(message, category, filename, lineno, file=None, line=None):
        warning_line(args, category.__name__, str(message))
    return show


def warning_line(args: "argparse.Namespace", kind: str, message: str) -> None:
    if getattr(args, "json", False):
        import json  # noqa: PLC0415

        text = json.dumps({"event": "warning", "warning": kind, "message": message})
    else:
        text = f"warning: {one_line(message)}"
    stderr_line(text)


def stderr_line(text: str) -> None:
    """One line on stderr in one write: print() writes the newline in a second call, and another thread's line
    (Ray's, the cluster's log records, the progress events) came between them, two JSON objects on one line."""
    stream = sys.stderr
    if stream is None:  # print(file=None) wrote it on stdout
        return
    stream.write(text + "\n")
    stream.flush()


def _route_log_warnings(args: "argparse.Namespace", command: str | None):
    """The engine's logged warnings (a key cache entry or a timeline that could not be written) as the same
    one line as a Python warning (a JSON object with --json), not the logging module's bare message on
    stderr.  Only where logging is already loaded (the fast paths never load it; what logs loads it with the
    command's modules) and never for serve, which logs in its own format.  Returns the handler, or None."""
    logging = sys.modules.get("logging")
    if logging is None or command == "serve":
        return None
    handler = warning_handler(args)
    logging.getLogger().addHandler(handler)
    return handler


def warning_handler(args: "argparse.Namespace"):
    """A logging handler that prints WARNING and above as the command's warning lines (also the Ray command's
    for Ray's own loggers); imports logging, so only where a command logs."""
    import logging  # noqa: PLC0415

    class Lines(logging.Handler):
        def emit(self, record) -> None:
            try:
                warning_line(args, record.name, record.getMessage())
            except Exception:  # noqa: BLE001 - a log line must never be what fails the command
                self.handleError(record)

    return Lines(logging.WARNING)


def _as_given(args: "argparse.Namespace", exc: Exception) -> str:
    """An error about one configuration key (`key` and `problem`: the engine's start checks devices against the
    machine, where it no longer knows who gave the list) named as the user gave the value: by the flag
    (`--devices: device 5 is not present ...`), else by the --config file; an API caller keeps `devices: ...`."""
    key, problem = getattr(exc, "key", None), getattr(exc, "problem", None)
    if isinstance(key, str) and isinstance(problem, str):
        if getattr(args, key, None) is not None:
            return f"--{key.replace('_', '-')}: {problem}"
        if getattr(args, "config", None):
            return f"{args.config}: {key}: {problem}"
    return str(exc)


def _answer_fields(exc: Exception) -> dict:
    """A prover server's answer (engine.client.ServerError): its HTTP status and error code, so that a script
    reading --json can tell a full queue (429 queue_full: retry) from its own mistake without parsing the
    message.  Nothing for other errors."""
    status, code = getattr(exc, "status", None), getattr(exc, "code", None)
    return {"status": status, "code": code} if isinstance(status, int) and isinstance(code, str) else {}


def report(args: "argparse.Namespace | None", kind: str, message: str, exit_code: int,
           fields: dict | None = None, path: str | None = None) -> int:
    """The one line a failed command prints on stderr (a JSON object with --json, with `fields` added);
    returns the exit code.  `path`, the input the message starts with, is shown as engine.paths.shown() does
    (a backslash in it doubled: `a\\nb.zkey` and `a<newline>b.zkey` read differently); --json keeps it as it is."""
    if getattr(args, "json", False) if args is not None else json_line:
        import json  # noqa: PLC0415

        line = json.dumps({"event": "error", "error": kind, "message": message, "exit_code": exit_code,
                           **(fields or {})})
    else:
        if isinstance(path, str) and path and message.startswith(path + ":"):
            from engine.paths import shown  # noqa: PLC0415

            text = shown(path) + one_line(message[len(path):])
        else:
            text = one_line(message)
        line = text if kind == "Interrupted" else f"error: {text}"
    try:
        stderr_line(line)
    except (OSError, ValueError, AttributeError):  # stderr closed, full, or a terminal that hung up: the code says it
        pass
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
