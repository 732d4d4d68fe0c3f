"""`python -m engine prove --ray ADDRESS ...`: the same proof, made by an engine of a Ray cluster.

ADDRESS is `local` (start a local Ray instance for this run), `auto` (join
the cluster this node belongs to), `HOST:PORT` (the cluster whose head's GCS
is there) or `ray://host:port` (a Ray client).  The
key, the witness (or circuit.wasm and input.json) are read by the engine's
node: on a cluster, give paths of a filesystem every node sees.  The proof
comes back to this process and is written here, both files or neither, as
the local `prove` does.
"""
from __future__ import annotations

import argparse
import os
import sys

from engine.errors import EngineError
from engine.progress import make_progress, report_proof


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("Ray cluster (pip install '.[ray]')")
    g.add_argument("--ray", metavar="ADDRESS", default=None, type=_address,
                   help="prove on a Ray cluster: local (start one here), auto (this node's), HOST:PORT (its head's "
                   "GCS) or ray://HOST:PORT (a Ray client)")
    g.add_argument("--engines", metavar="N", default=None,
                   help="engine actors to start: a count or per-gpu (default 1)")


def _address(value: str) -> str:
    """An empty --ray (`--ray "$RAY"`, RAY unset) was read as none: the proof ran here, without a word."""
    if not value.strip():
        raise argparse.ArgumentTypeError("an empty address (expected local, auto, HOST:PORT or ray://HOST:PORT)")
    return value


def _engines(value: str) -> int | str:
    """A count in ASCII digits (int() took '٣' and '1_000') or per-gpu; a bad one named, cut where it is long."""
    from engine.config_flags import quoted_value, whole_number  # noqa: PLC0415 - small, argparse only

    if value.strip() == "per-gpu":
        return "per-gpu"
    try:
        count = whole_number(value)
    except argparse.ArgumentTypeError:
        count = 0
    if count < 1:
        raise EngineError(f"--engines: {quoted_value(value)} is not a count >= 1 or per-gpu")
    return count


def prove_on_ray(args: argparse.Namespace, config, wtns_path: str | None, proof_path: str, public_path: str) -> int:
    """The prove command's run() hands off here when --ray is given."""
    from engine.distributed.cluster import RayCluster  # noqa: PLC0415

    for flag, value in (("--r1cs", args.r1cs), ("--timeline", args.timeline)):
        if value:
            raise EngineError(f"{flag} is not supported with --ray (it needs the witness or the timeline here)")
    engines = _engines(args.engines or "1")
    address = None if args.ray == "local" else args.ray
    if wtns_path is None:  # read here as the local path reads it (a file that is not UTF-8, a number that
        # JavaScript would round: each named, where json.load took the second and raised the first)
        from engine.groth16.kit import NamedInputs  # noqa: PLC0415
        from engine.witness.inputs import parse_inputs  # noqa: PLC0415

        witness = NamedInputs(parse_inputs(args.input), args.input)  # its errors name the file, as without Ray
    else:
        witness = wtns_path
    from engine.paths import is_pipe  # noqa: PLC0415

    if is_pipe(args.zkey):  # each engine reads the key by its path, on its own node
        raise EngineError(f"{args.zkey}: is a pipe; with --ray the cluster's engines read the key by its path: "
                          "give the file")
    if wtns_path is not None and is_pipe(wtns_path):  # an actor cannot open this process's pipe: its values go
        from engine.formats import read_wtns  # noqa: PLC0415

        witness = read_wtns(wtns_path)

    # with --json, what Ray forwards from its workers and raylets (a dead worker's paragraph, in terminal colours,
    # on stdout) would come among the JSON objects: the error line says what failed, the session's logs the rest
    ray_init = {"log_to_driver": False} if args.json else None

    from engine.commands.witness import circuit_log_shown  # noqa: PLC0415

    async def main():
        async with RayCluster(address, engines, config, ray_init=ray_init) as cluster:
            key = await cluster.load_key(args.zkey, wasm=args.wasm)
            with progress.timed("prove", 0.5), circuit_log_shown(progress, quiet=args.quiet):  # as without Ray
                proof = await cluster.prove(key, witness)
            return key, proof

    progress = make_progress("prove", quiet=args.quiet, json=args.json)
    restore = None
    try:
        restore = _ray_logs_as_warning_lines(args, progress)  # Ray missing: its one line, as RayCluster says it
        with progress.timed("cluster", 0.0):
            import asyncio  # here: every `prove` (and `--help`) imports this module for its flags

            key, proof = asyncio.run(main())
        with progress.timed("write", 0.95):
            proof.write(proof_path, public_path)
    finally:
        if restore is not None:
            restore()
        progress.done()
    report_proof(progress, proof, verbose=args.verbose, as_json=args.json, proof=proof_path, public=public_path,
                 curve=key.curve, ray=args.ray, engines=engines)
    return 0


def _ray_logs_as_warning_lines(args: argparse.Namespace, progress=None):
    """Ray's own log records in this process (its warning as a local instance starts, on token authentication)
    and what it prints on stdout, as the command's warning lines (a JSON object with --json), not Ray's
    timestamped or coloured lines among them; with --json also what Ray's C++ core writes on descriptor 2
    (_CoreLines).  Returns what puts the loggers, stdout and stderr back (with --json the loggers drop records
    from then on: what follows is the command's result or error, the last object)."""
    import contextlib  # noqa: PLC0415
    import io  # noqa: PLC0415
    import logging  # noqa: PLC0415
    import re  # noqa: PLC0415
    import threading  # noqa: PLC0415

    from cli import warning_handler, warning_line  # noqa: PLC0415
    from engine.distributed.connection import import_ray  # noqa: PLC0415

    class Printed(io.TextIOBase):
        """What Ray prints on stdout from its own threads (the raylet's paragraph on a worker that died, in
        terminal colours), where the command's result goes: each line a warning line instead."""

        def __init__(self) -> None:
            self.pending = ""
            self.lock = threading.Lock()  # Ray's threads print at once: each its own lines, none lost

        def writable(self) -> bool:
            return True

        def write(self, text: str) -> int:
            with self.lock:
                *lines, self.pending = (self.pending + text).split("\n")
            for line in lines:
                line = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
                if line:
                    warning_line(args, "ray", line)
            return len(text)

    import_ray()  # Ray sets up its logger as it is imported: replaced after that
    # and the cluster's own (an engine lost): `cli` routes the engine's warnings only where logging was loaded
    # before the command's modules, and this command's (--ray's) do not load it
    core = None
    if args.json:
        try:
            core = _CoreLines(progress)
        except OSError:  # no descriptor 2 to copy, no pipe or process to be had: Ray's lines as they come
            pass
    loggers = [logging.getLogger(name) for name in ("ray", "engine.distributed")]
    saved = [(logger.handlers[:], logger.propagate) for logger in loggers]
    late = _ExceptionLines(args) if args.json else None  # without --json, Python's tracebacks as they were
    for logger in loggers:
        logger.handlers[:] = [warning_handler(args)]
        logger.propagate = False
    printed = Printed()
    redirect = contextlib.redirect_stdout(printed)
    redirect.__enter__()

    def restore() -> None:
        try:
            if core is not None:
                core.close()
        finally:
            redirect.__exit__(None, None, None)
            printed.write("\n")  # a last line without its newline
            for logger, (handlers, propagate) in zip(loggers, saved):
                if args.json:  # the command's last object (its error) is next: a record from here on, of a start
                    # that Ctrl-C abandoned (ray.init's thread: "ERROR services.py:1500 -- 'NoneType' object has
                    # no attribute 'internal_kv_get'"), is dropped, not Ray's own line after the error
                    handlers, propagate = [logging.NullHandler()], False
                logger.handlers[:], logger.propagate = handlers, propagate
            if late is not None:
                late.ended = True

    return restore


class _ExceptionLines:
    """With --json, an exception in a thread that Ray leaves running (threading.excepthook) or one Python cannot
    raise (sys.unraisablehook: a __del__, an atexit callback) printed Python's traceback on stderr among the JSON
    objects, and after the command's error object where it came once the command had ended.  As Ray's log
    records are: a warning object each until the end, dropped from then on (`ended`; the error object is last)."""

    def __init__(self, args: argparse.Namespace) -> None:
        import threading  # noqa: PLC0415

        self.args, self.ended = args, False
        threading.excepthook = self.in_thread
        sys.unraisablehook = self.unraisable

    def in_thread(self, hook) -> None:
        if hook.exc_type is not SystemExit:  # (Python's own hook says nothing of a thread's SystemExit either)
            self._say(f"in thread {getattr(hook.thread, 'name', None) or '?'}", hook.exc_type, hook.exc_value)

    def unraisable(self, hook) -> None:
        where = hook.err_msg or "Exception ignored in"
        if hook.object is not None:
            try:
                shown = repr(hook.object)
                where = f"{where}: {shown if len(shown) <= 200 else shown[:197] + '...'}"
            except Exception:  # noqa: BLE001 - a repr that fails names nothing
                pass
        self._say(where, hook.exc_type, hook.exc_value)

    def _say(self, where: str, exc_type, exc_value) -> None:
        if self.ended:
            return
        try:
            from cli import warning_line  # noqa: PLC0415

            name = getattr(exc_type, "__name__", "Exception")
            lines = str(exc_value).strip().splitlines() if exc_value is not None else []
            warning_line(self.args, name, f"{where}: {name}" + (f": {lines[0]}" if lines else ""))
        except Exception:  # noqa: BLE001 - a stderr that refuses it (a str() that fails): lost, never a traceback
            pass


# _CoreLines' reader, a process of its own: Ray's core ends this one in C++ (_exit, abort) after its last line, a
# signal's watchdog with os._exit after its own; a reader here would die with them, those last lines unsaid
_PUMP = r"""
import json, os, re, select, signal, sys
for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):  # the terminal's Ctrl-C (its group's) is the command's
    signal.signal(getattr(signal, name), signal.SIG_IGN)
parent, longest, idle, pending = os.getppid(), 1 << 16, 0.0, b""
prefix = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,.]+ [A-Z] \d+ \d+\] ")  # glog's time, level, pid, thread

def say(line):
    text = re.sub(r"\x1b\[[0-9;]*m", "", line.decode("utf-8", "replace")).strip()
    if not text:
        return
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if not (isinstance(obj, dict) and "event" in obj):  # (the command's own: the watchdog's line)
        text = json.dumps({"event": "warning", "warning": "ray", "message": prefix.sub("", text)})
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace") + b"\n")  # (-I: the locale's may be ASCII)
    sys.stdout.buffer.flush()

try:
    while True:
        if not select.select([0], [], [], 0.5)[0]:
            idle = idle + 0.5 if os.getppid() != parent else 0.0
            if idle >= 2:  # the command is gone, and a process of its still holds the pipe
                break
            continue
        data = os.read(0, longest)
        if not data:
            break
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            say(line)
        if len(pending) >= longest:  # a line without its end: said in pieces, the memory it takes stays small
            say(pending)
            pending = b""
    say(pending)
except OSError:  # stderr's reader left
    pass
"""


class _CoreLines:
    """With --json, Ray's C++ core writes its log lines ("gcs_client.cc:210: Failed to get cluster ID from GCS
    server: ...", "Failed to connect to GCS within 24 seconds ... The program will terminate.") straight to
    descriptor 2, among the JSON objects.  While the connection is held, descriptor 2 is a pipe whose lines a
    small process (_PUMP) writes as warning objects on the original stderr, where the command's own lines
    (sys.stderr, the progress events) go too.  close() puts descriptor 2 back and waits for that process to say
    what was left in the pipe; where this process ends first, it still does."""

    WAIT_S = 5.0

    def __init__(self, progress) -> None:
        import io  # noqa: PLC0415
        import subprocess  # noqa: PLC0415 - here: every `prove` imports this module for its flags

        self.progress = progress
        stderr = self.stderr = sys.stderr
        stderr.flush()
        self.saved = os.dup(2)
        try:
            read, write = os.pipe()
        except OSError:
            os.close(self.saved)
            raise
        try:
            self.pump = subprocess.Popen([sys.executable, "-I", "-S", "-c", _PUMP], stdin=read, stdout=self.saved,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        except BaseException:
            for fd in (read, write, self.saved):
                os.close(fd)
            raise
        os.close(read)
        # the original stderr, for every line of this process's own while descriptor 2 is the pipe
        self.stream = io.TextIOWrapper(io.BufferedWriter(_saved(self.saved)),
                                       encoding=getattr(stderr, "encoding", None) or "utf-8",
                                       errors=getattr(stderr, "errors", None) or "backslashreplace",
                                       line_buffering=True)
        self.progress_stream = getattr(progress, "stream", None)
        os.dup2(write, 2)
        os.close(write)
        sys.stderr = self.stream
        if self.progress_stream is stderr:
            progress.stream = self.stream

    def close(self) -> None:
        import contextlib  # noqa: PLC0415
        import subprocess  # noqa: PLC0415

        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()
        os.dup2(self.saved, 2)  # the pipe's last writer here: its reader drains it, then ends
        try:
            self.pump.wait(self.WAIT_S)
        except subprocess.TimeoutExpired:  # a process of this one's still holds the pipe
            self.pump.kill()
            self.pump.wait()
        finally:
            sys.stderr = self.stderr
            if self.progress_stream is self.stderr:
                self.progress.stream = self.stderr
            with contextlib.suppress(OSError, ValueError):
                self.stream.close()
            os.close(self.saved)


def _saved(fd: int):
    """A raw stream on the original stderr's descriptor that fails as the CLI's stderr does (engine/__main__'s
    _StdStream): a write it refuses (a full device) drops the line, not the command; a reader that left (EPIPE)
    stays BrokenPipeError."""
    import io  # noqa: PLC0415

    class Saved(io.RawIOBase):
        lost = False

        def writable(self) -> bool:
            return True

        def fileno(self) -> int:
            return fd

        def write(self, data) -> int:
            while not self.lost:
                try:
                    return os.write(fd, data)
                except BrokenPipeError:
                    raise
                except BlockingIOError:  # a descriptor the caller made non-blocking: wait until it takes more
                    import select  # noqa: PLC0415

                    select.select([], [fd], [])
                except OSError:
                    self.lost = True
            return len(data)

    return Saved()
