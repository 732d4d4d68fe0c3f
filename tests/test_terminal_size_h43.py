"""$COLUMNS where a terminal does not know its size, on the forced way out (engine/interrupts.py's _force_exit: the
main thread stuck in C code when Ctrl-C came).  `int(c) if c.isdigit()` raised ValueError for '²' (a digit to
isdigit(), not to int()) and for 5000 nines: the process was left holding its exit lock, a traceback and no
"interrupted" line; 10**12 asked for a terabyte of spaces."""
from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios

import pytest

from conftest import REPO

FORCED_EXIT = """
import signal, sys
sys.path.insert(0, sys.argv[1])
from engine import interrupts
interrupts._force_exit(signal.SIGINT)
print("not reached", flush=True)
"""


def _on_a_terminal_of_no_size(columns: str) -> tuple[int, bytes]:
    """The forced exit's exit code and what it wrote on its stderr, a pseudo-terminal sized 0 x 0."""
    main, side = os.openpty()
    try:
        fcntl.ioctl(main, termios.TIOCSWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
        run = subprocess.run([sys.executable, "-c", FORCED_EXIT, str(REPO)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=side, env={**os.environ, "COLUMNS": columns},
                             timeout=60)
        os.close(side)
        side = -1
        written = b""
        while True:
            try:
                chunk = os.read(main, 1 << 16)
            except OSError:  # (EIO: the terminal's other side is closed and read to its end)
                break
            if not chunk:
                break
            written += chunk
        assert run.stdout == b"", run.stdout
        return run.returncode, written
    finally:
        if side >= 0:
            os.close(side)
        os.close(main)


@pytest.mark.parametrize("columns", ["²", "9" * 5000, "1" + "0" * 12, "-3", "80x", ""])
def test_a_columns_that_is_no_width_still_ends_the_command_with_its_line(columns):
    code, written = _on_a_terminal_of_no_size(columns)
    assert code == 130, (code, written[-400:])
    line = written.replace(b"\r\n", b"\n").split(b"\r")[-1]
    assert line == b"interrupted\n", written[-400:]
    assert len(written) < 200, len(written)  # the bar's line cleared: at most a bar's width of spaces


def test_a_columns_that_is_a_width_clears_that_much():
    code, written = _on_a_terminal_of_no_size("40")
    assert code == 130
    assert written.replace(b"\r\n", b"\n") == b"\r" + b" " * 39 + b"\rinterrupted\n", written
