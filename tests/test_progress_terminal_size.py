"""The bar's width on a terminal that does not know its size: a pseudo-terminal that no one sized (`script`,
`docker exec -t`, an ssh session without a window) reports 0 columns, and the bar was cut to its first character
("p"), each update one letter."""
from __future__ import annotations

import fcntl
import os
import struct
import termios

import pytest

from engine.progress import BarProgress


@pytest.fixture
def terminal():
    main, side = os.openpty()
    stream = os.fdopen(side, "w", buffering=1)
    yield main, stream
    stream.close()
    os.close(main)


def _size(main: int, columns: int) -> None:
    fcntl.ioctl(main, termios.TIOCSWINSZ, struct.pack("HHHH", 24 if columns else 0, columns, 0, 0))


def _line(bar: BarProgress, main: int) -> str:
    bar.stage("load key", 0.5)
    return os.read(main, 4096).decode().split("\r")[-1]


def test_a_terminal_of_no_size_gets_the_whole_bar(terminal, monkeypatch):
    main, stream = terminal
    _size(main, 0)
    monkeypatch.delenv("COLUMNS", raising=False)
    line = _line(BarProgress("prove", stream), main)
    assert line.startswith("prove [") and "50.0%" in line and "load key" in line, line


def test_columns_says_the_size_a_terminal_of_no_size_has(terminal, monkeypatch):
    main, stream = terminal
    _size(main, 0)
    monkeypatch.setenv("COLUMNS", "40")
    line = _line(BarProgress("prove", stream), main)
    assert len(line) == 39 and line.startswith("prove ["), line


def test_a_sized_terminal_keeps_its_size(terminal, monkeypatch):
    main, stream = terminal
    _size(main, 30)
    monkeypatch.setenv("COLUMNS", "200")
    line = _line(BarProgress("prove", stream), main)
    assert len(line) == 29 and line.startswith("prove ["), line
