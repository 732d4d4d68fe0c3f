"""A CLI process's end without waiting for the GPU driver's teardown.

When a process holding a device context ends, the kernel runs the driver's release of the device files (the
context, its streams, pool and pinned memory freed) before the process counts as ended: the shell that started
a proof waits for that although the proof was written long before (about 100 ms on the H200's host,
perf/RESULTS.md).  `hand_off()` forks a child that keeps the device files (only those: every other descriptor is
closed in it, so whoever reads this process's pipes sees them end with this process), waits for this process to
end, and leaves: the last reference to the device files is then the child's, and the teardown runs there, after
the command has returned.  The child runs system calls only (no code of ours, no driver call), in a session of
its own so a terminal's Ctrl-C is not sent to it.  GROTH16_EXIT_HANDOFF=0 turns it off (1 on, unset or blank the
default, on; any other value is an error, as for every switch: engine/env_setting.py).

Standard library only (and engine/env_setting.py's switch, itself so): engine/__main__ calls it last, after the
command's files are written and closed.
"""
from __future__ import annotations

import os
import signal
import sys
import warnings

from engine.env_setting import config_error, switch
from engine.errors import ConfigError

DEVICE_FILES = "/dev/nvidia"
ENV = "GROTH16_EXIT_HANDOFF"


# Set by engine/__main__ before it runs a command: this process ends when the command returns (nothing after
# it uses the device), so a backend may leave its releases to the hand-off (Backend.close_for_exit).
process_ends = False


def setting() -> bool | None:
    """GROTH16_EXIT_HANDOFF read as every A/B switch is (engine/env_setting.py): 1 on, 0 off, unset or blank the
    default (on); anything else a ConfigError naming the variable (only an exact "0" turned it off: " 0", "off"
    and "false" left it on without a word)."""
    return switch(ENV, config_error)


def check() -> None:
    """A bad GROTH16_EXIT_HANDOFF as the command's error (ConfigError), for the CLI's start: nothing later in a
    command may raise it (releases_left_to_exit is asked in a `finally` that must close the backend, hand_off
    after the command has ended)."""
    setting()


def enabled() -> bool:
    """Whether the hand-off is made.  A bad value makes none (the teardown then runs in this process, as without
    the hand-off): where it is read, at the command's end and the exit, no error can be said any more."""
    try:
        wanted = setting() is not False
    except ConfigError:  # check() is where it is said, before the command
        return False
    return wanted and sys.platform.startswith("linux") and hasattr(os, "fork")


def releases_left_to_exit() -> bool:
    """Whether a command may close its backend for the process's end (close_for_exit) instead of releasing."""
    return process_ends and enabled()


def device_fds(fd_dir: str = "/proc/self/fd", prefix: str = DEVICE_FILES) -> list[int]:
    """The open descriptors of this process that name the device files."""
    fds = []
    for name in os.listdir(fd_dir):
        try:
            target = os.readlink(f"{fd_dir}/{name}")
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        if target.startswith(prefix):
            fds.append(int(name))
    return fds


def _child(read_end: int, prefix: str) -> None:
    """In the forked child: keep the device files and `read_end`, close the rest, wait for the parent's end
    (EOF on the pipe whose write end only the parent holds), leave."""
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        keep = set(device_fds(prefix=prefix)) | {read_end}
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        while os.read(read_end, 1):
            pass
    finally:
        os._exit(0)


def hand_off(prefix: str = DEVICE_FILES) -> int:
    """Fork the child that inherits the device files' teardown; its pid, or 0 where none was needed or made.
    Call it just before os._exit: from then on the process must not use the device (its files are shared
    with the child)."""
    if not enabled():
        return 0
    try:
        if not device_fds(prefix=prefix):
            return 0
        read_end, write_end = os.pipe()
    except OSError:
        return 0
    with warnings.catch_warnings():  # Python 3.12 warns of fork() in a process with threads: the child
        warnings.simplefilter("ignore", DeprecationWarning)  # makes system calls only, then leaves
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return 0
    if pid == 0:
        _child(read_end, prefix)
    os.close(read_end)  # the write end stays open until this process ends: the child's signal
    return pid
