"""The blocking client's wait for an answer: asleep until shortly before it is due, then a bounded busy poll.

Why: a client blocked in recv() through a proof is woken by the answer's
arrival and runs cold; on the H200's machine (a VM) waiting awake took
0.11-0.32 ms off HTTP's p50 for a 2^14 proof (0.94 -> 0.72 ms added over
in-process, paired rounds: perf/RESULTS.md, issue 16).  So
`AnswerWait.wait` sleeps (a poll with a timeout) until `spin_s / 2` before the
time this route's answers took lately, then polls the socket without blocking, so
that the process is awake when the answer comes; past its spin budget it
blocks as before.  The CPU it burns is at most `spin_s` a request (the nap
ends `spin_s / 2` before the answer is due), whatever the server does, and
only a lone request spins: while another request of the process waits too,
both block as before (WAITING).

The first request on a route has no history: the spin starts at once and lasts
`spin_s` (a quick answer, such as a resident key's load, is caught; a long
proof is then waited for asleep), unless the server said how long the route
takes (`expect`: the key's recent proof time from its load answer).

`spin_s` comes from the client's argument, else GROTH16_CLIENT_SPIN_MS (milliseconds, from 0
to 1000 either way; 0 turns it off: the client blocks in recv as before), else DEFAULT_SPIN_MS.
Plain sockets only (a TLS socket cannot peek: it blocks as before).  Standard
library only, nothing imported beyond what the client has: it is on the CLI's path.
"""
from __future__ import annotations

import _thread  # built in: no import time on the CLI's path (threading would cost more)
import socket
import time

from engine.env_setting import MAX_SPIN_MS, milliseconds
from engine.errors import EngineError

DEFAULT_SPIN_MS = 3.0
ENV = "GROTH16_CLIENT_SPIN_MS"
HISTORY = 8  # the answers' times kept per route; the median of them is when the next is due
LONGEST_DUE_S = 1e9  # as engine/client.py's timeout (socket.settimeout refuses from 2^63 ns, about 9.2e9 s, on)
_PEEK = socket.MSG_PEEK
_PEEK_NOW = socket.MSG_PEEK | socket.MSG_DONTWAIT
# A lone request spins, concurrent ones do not: client threads spinning side by side fought over the GIL
# and the cores and halved the proofs/s of 8 threads back to back on a 2-core VM (one spinner at a time:
# still -30%); and where a process has several requests in flight it is awake anyway.
_LOCK = _thread.allocate_lock()
WAITING = [0]  # this process's requests waiting for their answers now


def _count(step: int) -> None:
    with _LOCK:
        WAITING[0] += step


class SpinSettingError(EngineError, ValueError):
    """A bad spin setting: the CLI prints it as one line (an EngineError)."""


def spin_seconds(spin_ms: float | None = None) -> float:
    """The spin budget a request gets: the argument, else the environment's, else the default (ms -> s).  The
    argument is held to what the variable is (env_setting): `Client(spin_ms=inf)` spun a core until each answer
    came, and one of 5000 ms burnt five seconds a request."""
    if spin_ms is None:
        return milliseconds(ENV, DEFAULT_SPIN_MS, SpinSettingError, "turns the spin off") / 1e3
    span = f"must be a finite number from 0 to {MAX_SPIN_MS:g} ms (0 turns the spin off)"
    if isinstance(spin_ms, (str, bytes, bool)):  # (float() would read '3', and True is 1)
        raise SpinSettingError(f"spin_ms={_shown(spin_ms)}: expected a number of milliseconds (0 turns the spin off)")
    try:
        ms = float(spin_ms)  # an int, a float, numpy's numbers
    except OverflowError:  # an int beyond any float
        raise SpinSettingError(f"spin_ms={_shown(spin_ms)}: {span}") from None
    except (TypeError, ValueError):
        raise SpinSettingError(f"spin_ms={_shown(spin_ms)}: expected a number of milliseconds (0 turns the spin "
                               "off)") from None
    if not 0 <= ms <= MAX_SPIN_MS:  # negative, NaN, inf, or more than a second
        raise SpinSettingError(f"spin_ms={_shown(spin_ms)}: {span}")
    return ms / 1e3


def _shown(value) -> str:
    """The argument for a message, cut where it is long (an int of over 4300 digits has no repr)."""
    try:
        text = repr(value)
    except ValueError:
        return "<an int of over 4300 digits>"
    return text if len(text) <= 40 else text[:37] + "..."


class AnswerWait:
    """When a route's answers come (its last HISTORY waits), and the wait for the next one."""

    def __init__(self, spin_s: float):
        self.spin_s = spin_s
        self.recent: dict[str, list[float]] = {}
        self.spun_s = 0.0  # CPU-burning seconds so far (what the spin cost; tests read it)

    def expect(self, route: str, seconds: float) -> None:
        """The server says this route takes about `seconds` (a key's recent proofs): due then, until measured.
        What no proof takes is ignored (a server's inf, nan or 1e300 became a nap that socket.settimeout refused:
        an OverflowError from the next request); below LONGEST_DUE_S, the bound of the client's own timeout."""
        if 0 < seconds < LONGEST_DUE_S and route not in self.recent:
            self.recent[route] = [seconds]

    def due(self, route: str) -> float | None:
        waits = self.recent.get(route)
        if not waits:
            return None
        s = sorted(waits)
        return s[len(s) // 2]

    def wait(self, sock, route: str, timeout: float | None) -> None:
        """Return once `sock` has something to read (the answer, or its end); TimeoutError after `timeout`.

        The socket's own timeout is `timeout` again on return, however this ends (an interrupt too)."""
        if self.spin_s <= 0 or type(sock) is not socket.socket:
            return  # the reader blocks as before
        t0 = time.perf_counter()
        deadline = t0 + timeout if timeout is not None else None
        due = self.due(route)
        _count(1)
        try:
            ready = False
            if due is not None and due - self.spin_s / 2 > 0:
                nap = due - self.spin_s / 2
                if deadline is not None:
                    nap = min(nap, deadline - t0)
                if nap > 0:
                    ready = _peek(sock, nap)
            if not ready:
                _check(deadline)
                ready = self._spin(sock, deadline)
            if not ready:
                _check(deadline)
                if not _peek(sock, None if deadline is None else deadline - time.perf_counter()):  # as the reader would
                    raise TimeoutError("timed out")  # the timeout is spent: the reader must not wait it out again
        finally:
            _count(-1)
            sock.settimeout(timeout)
        waits = self.recent.setdefault(route, [])
        waits.append(time.perf_counter() - t0)
        del waits[:-HISTORY]

    def _spin(self, sock, deadline: float | None) -> bool:
        if WAITING[0] > 1:
            return False  # not alone: block, as before
        sock.setblocking(False)
        start = time.perf_counter()
        end = start + self.spin_s if deadline is None else min(start + self.spin_s, deadline)
        try:
            while True:
                try:
                    sock.recv(1, _PEEK_NOW)  # a byte, or b"" at the end of the stream: the reader sees either
                    return True
                except BlockingIOError:
                    if time.perf_counter() >= end or WAITING[0] > 1:  # spent, or another request now waits
                        return False
                except InterruptedError:
                    continue
        finally:
            self.spun_s += time.perf_counter() - start


def _check(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() >= deadline:
        raise TimeoutError("timed out")  # what the socket's own timeout raises


def _peek(sock, seconds: float | None) -> bool:
    """Block until the socket is readable (True) or `seconds` pass (False; None: no limit)."""
    sock.settimeout(seconds)
    try:
        sock.recv(1, _PEEK)
    except TimeoutError:  # socket.timeout
        return False
    return True
