"""What a path names, asked without importing anything heavy (the CLI client uses it too)."""
from __future__ import annotations

import errno
import os
import stat


def is_pipe(path) -> bool:
    """Whether `path` names a pipe (`<(...)`): read once, whole, by the process that was given it."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, TypeError, ValueError):  # missing or unreadable (its reader names that), not a path at all
        return False


def same_file(a, b) -> bool:
    """Whether two paths name one file (the same inode where both exist, else the same resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet (or cannot be read): compare what they resolve to
        pass
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:  # a relative path in a deleted working directory: only the same name is the same file
        return os.path.normpath(os.fsdecode(a)) == os.path.normpath(os.fsdecode(b))


def escaped(text: str, backslash: bool = False) -> str:
    """`text` with what a terminal would not show as itself escaped: a control character as \\n, \\t, \\x1b, a
    name's byte that is not UTF-8 as \\xff (the byte, not Python's stand-in \\udcff), and with `backslash` a
    backslash as \\\\ too, so that every escape reads one way."""
    if text.isprintable() and not (backslash and "\\" in text):
        return text
    out = []
    for c in text:
        if c == "\\":
            out.append("\\\\" if backslash else c)
        elif c.isprintable():
            out.append(c)
        elif "\udc80" <= c <= "\udcff":
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        else:
            out.append(repr(c)[1:-1])
    return "".join(out)


def shown(path) -> str:
    """`path` as a message shows it: on one line, each name one way (a newline as \\n, a backslash as \\\\: the
    file `a\\nb` and the file `a<newline>b` read differently), whatever its bytes."""
    try:
        return escaped(os.fsdecode(path), backslash=True)
    except TypeError:  # not a path at all: as str() shows it
        return escaped(str(path), backslash=True)


def folder_name_problem(path) -> str | None:
    """Why `path`, an output, cannot name a file: `out/`, `out/.` or `out/..` name a folder, and realpath drops
    what says so (a file `out` was written); None for a file's name, or a folder that exists (its own error)."""
    name = os.fsdecode(path)
    if os.path.basename(name) not in ("", os.curdir, os.pardir) or os.path.isdir(name):
        return None
    return (f'cannot write: there is no folder {shown(name)} (a name that ends in "/", "/." or "/.." names a folder, '
            "not a file)")


def real_path(path) -> str:
    """os.path.realpath(path), whose error for a relative path in a working directory that was deleted (a bare
    "No such file or directory" from getcwd) says so."""
    try:
        resolved = os.path.realpath(path)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "the current directory no longer exists") from None
    return _within_path_max(resolved)


def _within_path_max(resolved):
    """`resolved` (absolute), or where it is PATH_MAX or longer (a working directory that deep, where relative
    names still work) the same path relative to the working directory: the kernel refuses the absolute one
    (ENAMETOOLONG), and every relative output there was "in a folder that does not exist"."""
    try:
        limit = os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 4096
    if len(os.fsencode(resolved)) < limit:
        return resolved
    try:
        return os.path.relpath(resolved, os.getcwdb() if isinstance(resolved, bytes) else os.getcwd())
    except (OSError, ValueError):
        return resolved


# Standard descriptors this process was started without, which engine/__main__ opened on /dev/null: an output
# named as one of them (/dev/stdout with `>&-`) would go to /dev/null without a word, and an input (/dev/stdin
# with `<&-`) was read as /dev/null ("not valid JSON", "is not a file or a pipe").
started_closed: set[int] = set()
_STREAM_NAMES = {"stdin": 0, "stdout": 1, "stderr": 2, "fd/0": 0, "fd/1": 1, "fd/2": 2}
_STREAMS = ("standard input", "standard output", "standard error")


def closed_stream(path) -> str | None:
    """"standard input", "standard output" or "standard error" where `path` names one that the process was
    started without."""
    if not started_closed:
        return None
    try:
        name = os.path.abspath(os.fsdecode(path))
    except (OSError, ValueError, TypeError):
        return None
    for prefix in ("/dev/", "/proc/self/", f"/proc/{os.getpid()}/"):
        fd = _STREAM_NAMES.get(name[len(prefix):]) if name.startswith(prefix) else None
        if fd in started_closed:
            return _STREAMS[fd]
    return None


async def read_off_thread(fn, *args):
    """`fn(*args)` (a read of a pipe, which may never end: no writer, or one that stalls) on a daemon thread of
    its own, awaited on the running asyncio loop.  A cancel returns at once and leaves the thread behind (nothing
    wakes a thread blocked in open() or read()), and the interpreter's exit does not wait for it: an anyio
    worker thread, which it does wait for, kept a script whose job was cancelled from ever ending, and anyio's
    run_sync without abandon_on_cancel made the cancel itself wait for the read."""
    import asyncio  # noqa: PLC0415 - the Engine's callers have it loaded
    import threading  # noqa: PLC0415

    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(result, error) -> None:
        if future.done():  # cancelled meanwhile: nobody wants it
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def body() -> None:
        try:
            result, error = fn(*args), None
        except BaseException as exc:  # noqa: BLE001 - raised in the awaiting task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop has closed: nobody waits any more
            pass

    threading.Thread(target=body, name="pipe reader", daemon=True).start()
    return await future


def what_is(path) -> str:
    """What an existing path that is no directory names, in a message's words (a FIFO was "a file")."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        try:
            return f"a broken symbolic link (to {shown(os.readlink(path))})"
        except OSError:  # (gone meanwhile)
            return "a broken symbolic link"
    except OSError as exc:  # (a loop of links)
        return f"a symbolic link that cannot be followed ({exc.strerror or exc})"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a file"
