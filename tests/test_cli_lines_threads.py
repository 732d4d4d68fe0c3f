"""The command's lines on stderr come from more than one thread: with --json, Ray's threads (an engine's death
forwarded from its raylet), the cluster's log records and the progress events all write there.  print() writes a
line and its newline in two calls, so two threads made one line of two JSON objects ("Extra data")."""

import argparse
import json
import sys
import threading
import time

import pytest

import cli


class SlowStream:
    """A pipe that a reader drains slowly: each write lets the other threads run before it returns."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        time.sleep(0.001)
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def _from_threads(monkeypatch, write, count=6, each=15) -> list[str]:
    stream = SlowStream()
    monkeypatch.setattr(sys, "stderr", stream)
    start = threading.Barrier(count)

    def lines(n: int) -> None:
        start.wait()
        for i in range(each):
            write(n, i)

    threads = [threading.Thread(target=lines, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    text = "".join(stream.parts)
    assert text.endswith("\n")
    return text.splitlines()


@pytest.mark.parametrize("as_json", [True, False])
def test_warning_lines_from_threads_are_whole_lines(monkeypatch, as_json):
    args = argparse.Namespace(json=as_json)
    lines = _from_threads(monkeypatch, lambda n, i: cli.warning_line(args, "ray", f"thread {n} line {i}"))
    assert len(lines) == 6 * 15
    if as_json:
        seen = {json.loads(line)["message"] for line in lines}
    else:
        assert all(line.startswith("warning: thread ") for line in lines), lines
        seen = {line.removeprefix("warning: ") for line in lines}
    assert seen == {f"thread {n} line {i}" for n in range(6) for i in range(15)}


def test_error_lines_from_threads_are_whole_lines(monkeypatch):
    args = argparse.Namespace(json=True)
    lines = _from_threads(monkeypatch, lambda n, i: cli.report(args, "EngineLostError", f"{n}/{i}", 2))
    assert sorted(json.loads(line)["message"] for line in lines) == sorted(f"{n}/{i}" for n in range(6)
                                                                             for i in range(15))


def test_a_warning_and_an_error_from_two_threads_do_not_share_a_line(monkeypatch):
    args = argparse.Namespace(json=True)

    def write(n, i):
        if n % 2:
            cli.warning_line(args, "engine.distributed", f"engine {n} is gone ({i})")
        else:
            cli.report(args, "EngineLostError", f"lost {n} ({i})", 2)

    events = [json.loads(line)["event"] for line in _from_threads(monkeypatch, write)]
    assert events.count("warning") == events.count("error") == 3 * 15
