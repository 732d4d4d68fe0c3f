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

from cli import main  # noqa: E402

sys.exit(main())
