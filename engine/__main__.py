import os
import signal
import sys


def _interrupted_while_loading(signum, frame):
    """Ctrl-C while Python modules load: a KeyboardInterrupt raised inside an import can be swallowed
    by importlib or crash an extension module's init; nothing has been created yet, so just leave."""
    os.write(2, b"interrupted\n")
    os._exit(130)


_interrupted_while_loading.loading = True

# Where this Python may not write bytecode beside the modules (PYTHONDONTWRITEBYTECODE, common in images), keep it
# in the engine's cache instead of compiling every module on every command: engine/bytecode_cache.py.
from engine import bytecode_cache  # noqa: E402

PYCACHE = bytecode_cache.enable()

# numpy's import starts OpenBLAS's thread pool, a thread a core: 30-95 ms of a cold command on the H200's
# 16-core host (perf/RESULTS.md, sessions 31 and 34).  The engine runs no floating-point linear algebra, so its
# commands take one; a value the user set is kept.  (An application that imports the engine keeps its own.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
signal.signal(signal.SIGINT, _interrupted_while_loading)  # cli.main restores Python's own once loaded

try:
    import cli
    from cli import main, only_command
    from engine import exit_handoff
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

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
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
    sys.stdout.flush()  # here, where a reader that left can still be told apart from an error
except BrokenPipeError:
    code = _reader_gone()
except (EOFError, ValueError) as exc:  # a command's own import of a damaged .pyc, as above
    bytecode_cache.recover(exc, PYCACHE, sys.argv[1:])
    raise
if code == 130 and sys.argv[1:2] != ["serve"]:
    # Ctrl-C, caught and reported.  A KeyboardInterrupt that passed through code run by exec() (every
    # dataclass and namedtuple made at import time) marks the interpreter to leave by SIGINT at its
    # end, whoever caught it (CPython's run_eval_code_obj): say 130 ourselves.
    _leave(130)
if only_command(sys.argv[1:]) == "prove" or cli.left_clean:
    # `prove --server` (its files written and closed, no thread or child left) and a proof made in this
    # process (the direct path: its backend closed, its files written whole): nothing is left for the
    # interpreter's teardown to do.
    _leave(code)
sys.exit(code)
