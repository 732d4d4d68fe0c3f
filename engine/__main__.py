import os
import signal
import sys


def _interrupted_while_loading(signum, frame):
    """Ctrl-C while Python modules load: a KeyboardInterrupt raised inside an import can be swallowed
    by importlib or crash an extension module's init; nothing has been created yet, so just leave."""
    os.write(2, b"interrupted\n")
    os._exit(130)


_interrupted_while_loading.loading = True
signal.signal(signal.SIGINT, _interrupted_while_loading)  # cli.main restores Python's own once loaded

from cli import main, only_command  # noqa: E402

code = main()
if code == 130 and sys.argv[1:2] != ["serve"]:  # (the service handles its signals itself)
    # Ctrl-C, caught and reported.  A KeyboardInterrupt that passed through code run by exec() (every
    # dataclass and namedtuple made at import time) marks the interpreter to leave by SIGINT at its
    # end, whoever caught it (CPython's run_eval_code_obj): say 130 ourselves, after what the
    # interpreter's exit would do first (wait for the threads that are not daemons, such as a key
    # cache's write; run the exit hooks).  Another Ctrl-C meanwhile leaves at once.
    import atexit
    import threading

    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(130)
if only_command(sys.argv[1:]) == "prove":
    # `prove --server`: its files are written and closed, no thread or child is left, nothing is
    # registered to run at exit; the interpreter's teardown (5 ms of a 40 ms command) does nothing.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 1
    os._exit(code)
sys.exit(code)
