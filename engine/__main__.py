import codecs
import errno
import io
import os
import signal
import sys


def _std_descriptors() -> list[int]:
    """Descriptors 0-2 that the process was started without (`2>&-`), opened on /dev/null: else the first
    files opened took their numbers (uvloop's own pipe took 0 or 1 and aborted closing it; sys.stderr was
    None, so the progress and the error line went to stdout).  The ones that were closed are returned."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
            try:
                opened = os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd
            except OSError:  # no /dev/null (a bare chroot): left closed
                continue
            if opened != fd:  # pragma: no cover - cannot happen, the lower ones are open
                os.close(opened)
    return closed


class _StdStream(io.RawIOBase):
    """Descriptor 1 or 2 under sys.stdout / sys.stderr.  A write the descriptor refuses (a full device, a
    terminal that hung up, a stream closed at the start) is one error for stdout, the first time
    (InputFileError "standard output: cannot write: ...", exit 2: what was printed is lost), and nothing for
    stderr (progress and messages are dropped, the command's result and exit code stand); later writes are
    dropped.  Stdout's reader that left (EPIPE) stays BrokenPipeError: _reader_gone below; stderr's is one more
    loss (`prove --json 2>&1 >r.json | head -1` ended with 141 before the proof was written)."""

    def __init__(self, fd: int, closed: bool, raises: bool):
        super().__init__()
        self._fd, self._raises = fd, raises
        self._lost = OSError(errno.EBADF, os.strerror(errno.EBADF)) if closed else None
        self._told = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return self._lost is None and os.isatty(self._fd)

    def write(self, data) -> int:
        while self._lost is None:
            try:
                return os.write(self._fd, data)
            except BrokenPipeError as exc:
                if not self._raises:  # the progress stream's reader: the outputs and the result stand
                    self._lost = exc
                    break
                raise
            except BlockingIOError:  # a descriptor the caller made non-blocking: wait until it takes more
                import select  # noqa: PLC0415

                select.select([], [self._fd], [])
            except OSError as exc:
                self._lost = exc
        if self._raises and not self._told and len(data):
            self._told = True
            from engine.errors import write_error  # noqa: PLC0415

            raise write_error("standard output", self._lost)
        return len(data)


def _as_written(exc: UnicodeError):
    """stdout's errors: a name's byte that is not UTF-8 (argv's surrogate escape) as that byte, as ls writes it
    into a pipe (`$(python -m engine cache path)` gets the folder back), anything else the encoding cannot take
    as a backslash escape.  Python's choice, strict for PYTHONIOENCODING=ascii or a UTF-8 locale outside its
    UTF-8 mode, made `info ø.zkey` a UnicodeEncodeError traceback."""
    if isinstance(exc, UnicodeEncodeError) and "\udc80" <= exc.object[exc.start] <= "\udcff":
        return bytes([ord(exc.object[exc.start]) - 0xDC00]), exc.start + 1
    return codecs.backslashreplace_errors(exc)


def _as_escapes(exc: UnicodeError):
    """stderr's errors: what the encoding cannot take as a backslash escape, a name's byte that is not UTF-8 as
    \\xff (the byte it is), not backslashreplace's \\udcff (Python's stand-in for it)."""
    if isinstance(exc, UnicodeEncodeError) and "\udc80" <= exc.object[exc.start] <= "\udcff":
        return f"\\x{ord(exc.object[exc.start]) - 0xDC00:02x}", exc.start + 1
    return codecs.backslashreplace_errors(exc)


codecs.register_error("groth16.stdout", _as_written)
codecs.register_error("groth16.stderr", _as_escapes)


def _own_streams(closed: list[int]) -> None:
    """sys.stdout and sys.stderr over _StdStream, with the encoding and buffering Python chose, and errors that
    never raise (_as_written, _as_escapes)."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        if old is not None:
            try:
                old.flush()
            except (OSError, ValueError):
                pass
        raw = _StdStream(fd, fd in closed or old is None, raises=fd == 1)
        unbuffered = old is not None and not hasattr(getattr(old, "buffer", None), "raw")  # python -u
        stream = io.TextIOWrapper(raw if unbuffered else io.BufferedWriter(raw),
                                  encoding=getattr(old, "encoding", None) or "utf-8",
                                  errors="groth16.stderr" if fd == 2 else "groth16.stdout",
                                  line_buffering=getattr(old, "line_buffering", fd == 2),
                                  write_through=getattr(old, "write_through", False))
        setattr(sys, name, stream)


_CLOSED = _std_descriptors()
_own_streams(_CLOSED)


def _our_modules_first() -> None:
    """`python -m engine` puts the working directory first on sys.path: a project's own cli.py or scheduler/
    there was imported instead of ours (top-level names of this distribution).  The folder this engine package
    was found in goes first (the working directory itself where the engine is run from its checkout), and the
    same for our worker processes: multiprocessing starts them with `python -c`, whose sys.path begins with the
    working directory (and 3.11's forkserver imports its preloaded modules with that path), which PYTHONSAFEPATH
    leaves out and PYTHONPATH puts that folder first."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if sys.path[:1] != [root]:
        sys.path.insert(0, root)
    inherited = os.environ.get("PYTHONPATH", "")
    if inherited.split(os.pathsep)[:1] != [root]:
        os.environ["PYTHONPATH"] = root + (os.pathsep + inherited if inherited else "")
    os.environ.setdefault("PYTHONSAFEPATH", "1")


_our_modules_first()

_STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, n))


def _interrupted_while_loading(signum, frame):
    """Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT) while Python modules load: a KeyboardInterrupt raised inside an
    import can be swallowed by importlib or crash an extension module's init; nothing has been created yet,
    so just leave, with the line and code cli.main gives later (engine/interrupts.py)."""
    what = "interrupted" if signum == signal.SIGINT else f"interrupted by {signal.Signals(signum).name}"
    if "--json" in sys.argv[1:]:
        line = '{"event": "error", "error": "Interrupted", "message": "%s", "exit_code": %d}' % (what, 128 + signum)
    else:
        line = what
    try:
        os.write(2, line.encode() + b"\n")
    except OSError:
        pass
    os._exit(128 + signum)


_interrupted_while_loading.loading = True

# Before any further import (the bytecode cache's: a SIGHUP there killed the command with no word); cli.main
# replaces them once loaded (engine/interrupts.py); a signal the process was started ignoring (a background
# job's SIGINT, nohup's SIGHUP) stays ignored
if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_loading)
for _signum in _STOP_SIGNALS:
    if signal.getsignal(_signum) is signal.SIG_DFL:
        signal.signal(_signum, _interrupted_while_loading)

# Where this Python may not write bytecode beside the modules (PYTHONDONTWRITEBYTECODE, common in images), keep it
# in the engine's cache instead of compiling every module on every command: engine/bytecode_cache.py.
from engine import bytecode_cache  # noqa: E402

PYCACHE = bytecode_cache.enable()

# numpy's import starts OpenBLAS's thread pool, a thread a core: 30-95 ms of a cold command on the H200's
# 16-core host (perf/RESULTS.md, sessions 31 and 34).  The engine runs no floating-point linear algebra, so its
# commands take one; a value the user set is kept.  (An application that imports the engine keeps its own.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:
    import cli
    from cli import main, only_command
    from engine import exit_handoff, paths

    paths.started_closed.update(_CLOSED)
except (EOFError, ValueError) as exc:  # a damaged .pyc in the bytecode cache: cleared, and the command runs again
    bytecode_cache.recover(exc, PYCACHE, sys.argv[1:])
    raise


def _leave(code: int) -> None:
    """What the interpreter's exit does before its teardown, then the exit itself: wait for the threads
    that are not daemons (threading._shutdown runs the executors' exit hooks first, then joins them: a key
    cache's write), run the atexit hooks, flush.  The teardown that is skipped (every module's and
    object's finalisation: 30-60 ms after a proof) writes nothing that the command has not closed.
    A Ctrl-C meanwhile leaves at once (after a written proof the CLI ignores it: engine/interrupts.py)."""
    import atexit
    import threading

    interrupts = sys.modules.get("engine.interrupts")
    if interrupts is not None:  # an interrupt from here leaves at once, with its code
        interrupts.leaving()
    elif signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    else:  # pragma: no cover - an interpreter without it
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 1
    exit_handoff.hand_off()  # the device's teardown, if this process holds one, in a child after this exit
    os._exit(code)


def _reader_gone() -> int:
    """stdout's (or stderr's) reader left before we were done (`python -m engine info k.zkey | head -1`): what
    was cut off cannot be said anywhere, so leave as a C tool would, quietly, with the shell's code for a
    process ended by SIGPIPE.  A stream that cannot take its buffer any more is pointed at /dev/null, so
    that the exit's own flush does not print Python's "Exception ignored" either."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
            except (OSError, ValueError):
                pass
    return 128 + signal.SIGPIPE


exit_handoff.process_ends = True
try:
    code = main()
    try:
        sys.stdout.flush()  # here, where a reader that left can still be told apart from an error
    except BrokenPipeError:
        raise
    except Exception as exc:  # noqa: BLE001 - what a failed command left in stdout (_StdStream's one error)
        code = cli.report(None, type(exc).__name__, str(exc), getattr(exc, "exit_code", 2)) if not code else code
except BrokenPipeError:
    code = _reader_gone()
except (EOFError, ValueError) as exc:  # a command's own import of a damaged .pyc, as above
    bytecode_cache.recover(exc, PYCACHE, sys.argv[1:])
    raise
_interrupts = sys.modules.get("engine.interrupts")
if code == (_interrupts.interrupted()[1] if _interrupts is not None else 130) and sys.argv[1:2] != ["serve"]:
    # Ctrl-C (or a stop signal), caught and reported.  A KeyboardInterrupt that passed through code run by
    # exec() (every dataclass and namedtuple made at import time) marks the interpreter to leave by SIGINT at
    # its end, whoever caught it (CPython's run_eval_code_obj): say the code ourselves.
    _leave(code)
if only_command(sys.argv[1:]) == "prove" or cli.left_clean:
    # `prove --server` (its files written and closed, no thread or child left) and a proof made in this
    # process (the direct path: its backend closed, its files written whole): nothing is left for the
    # interpreter's teardown to do.
    _leave(code)
sys.exit(code)
