"""Worker processes that never import the user's main module.

`spawn` and `forkserver` children re-create the parent's `__main__` before
they run anything: from its import name (`python -m pkg`) or by re-running its
file.  A user's script without an `if __name__ == "__main__":` guard then
starts an engine inside every worker; a script read from standard input
(`python -`), `python -c`, the interactive interpreter and a Jupyter kernel
have no file a child could re-run at all.  So while a worker process starts,
the parent's `__main__` is shown to multiprocessing as our own empty module
`scheduler.worker_main`: the child imports that as its main and nothing of the
user's.  Tasks sent to a worker are module-level functions of ours, found by
import name, so the child never needs the user's main.
"""
from __future__ import annotations

import contextlib
import importlib.util
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import types
from typing import Any, Callable, Iterator

# Found, not imported: runpy warns when a child's main module is already in sys.modules
# (the forkserver preloads this module, and so would have imported it).
_WORKER_MAIN = importlib.util.find_spec("scheduler.worker_main")

_swap_lock = threading.RLock()


@contextlib.contextmanager
def ours_as_main() -> Iterator[None]:
    """While inside, `sys.modules["__main__"]` is a stand-in whose spec names scheduler.worker_main."""
    with _swap_lock:
        real = sys.modules.get("__main__")
        stand_in = types.ModuleType("__main__")
        stand_in.__spec__ = _WORKER_MAIN
        stand_in.__file__ = _WORKER_MAIN.origin
        sys.modules["__main__"] = stand_in
        try:
            yield
        finally:
            if real is not None:
                sys.modules["__main__"] = real
            else:  # pragma: no cover - an interpreter always has a __main__
                del sys.modules["__main__"]


@contextlib.contextmanager
def interrupts_blocked() -> Iterator[None]:
    """While inside, this thread blocks SIGINT, and so does every process started here (and its children).

    Ctrl-C in a terminal signals the whole process group: a worker still starting up (before it
    could ignore SIGINT; the forkserver itself) would die printing a KeyboardInterrupt traceback.
    A blocked signal mask is inherited through fork and exec, so the workers never see it; the
    main process, which has not blocked it, turns it into one clean `interrupted`.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def start_process(process) -> None:
    """`process.start()` with our module as the child's main and SIGINT blocked in the child."""
    # The resource tracker, started on first use inside start(), unblocks SIGINT in the calling
    # thread after spawning itself (it blocks, spawns, then unblocks, not restores): start it first,
    # so the forkserver and the worker are spawned with the mask still in place.
    from multiprocessing import resource_tracker  # noqa: PLC0415

    # It ignores SIGINT and SIGTERM only: a closed terminal's SIGHUP or Ctrl-\'s SIGQUIT to the group killed it, and
    # the clean-up relaunched it with a warning beside the command's one line.  Blocked here, they stay blocked there
    stop = {getattr(signal, name) for name in ("SIGHUP", "SIGQUIT") if hasattr(signal, name)}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    try:
        resource_tracker.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    with ours_as_main(), interrupts_blocked():
        process.start()


def serve_tasks(conn, handle: Callable[[Any], bytes]) -> None:
    """A pool worker's life: say ready, then send `handle(task)` (the reply, pickled) for each task on
    the pipe until it closes or sends None.  Ctrl-C is the main process's business: SIGINT is ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent()
    try:
        conn.send_bytes(pickle.dumps(("ready", os.getpid())))
    except OSError:  # the parent is gone (it exited while this worker started): nothing to serve
        return
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        task = pickle.loads(data)
        if task is None:
            return
        try:
            conn.send_bytes(handle(task))
        except OSError:  # the parent ended while this task ran: nobody to answer (was a BrokenPipeError traceback)
            return


def end_with_parent() -> None:
    """End this worker as soon as the process that started it ends, whatever the task it runs.  A parent killed
    by SIGKILL (the OOM killer) or by a signal it has no handler for closes no pipe it could say so on; its
    workers ran their task to the end (minutes of a large witness or MSM, for nobody), then printed a
    traceback.  multiprocessing's parent sentinel (forkserver and spawn) is a pipe whose other end only the
    parent holds: the kernel closes it however the parent ends.  A daemon thread waits on it."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        try:
            parent.join()  # waits on the sentinel: readable (EOF) once the parent is gone
        except (OSError, ValueError):  # no sentinel to wait on: the worker ends with its pipe, as before
            return
        os._exit(1)

    try:
        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    except RuntimeError:  # no thread to be had: as before, the pipe's end still ends the worker between tasks
        pass


def describe_exit(code: int | None) -> str:
    """A worker's end in words: "exit code 3", "killed by SIGKILL" (not "exit code -9"), SIGKILL and SIGBUS with
    their usual cause here (out of memory; a mapped file that shrank under it, or a RAM disk out of room)."""
    if code is None:
        return "exit code unknown"
    if code >= 0:
        return f"exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    if name == "SIGKILL":  # the only signal the kernel's OOM killer sends: the likely cause, where a user can act
        return "killed by SIGKILL (out of memory? the kernel's OOM killer ends processes so)"
    if name == "SIGBUS":
        return ("killed by SIGBUS: a file it read was cut short while it read it (changed on disk?), "
                "or the shared memory it wrote to ran out")
    return f"killed by {name}"
