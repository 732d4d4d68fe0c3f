"""The blocking client's wait for an answer (engine/client_wait.py): asleep until shortly before it is
due, a bounded busy poll, then blocking as before.

Against hand-made loopback servers (a thread each) for the bounds (the spin's budget, the timeout, an
interrupt), and against perf/instant_serve.py (the real service; its proofs sleep --delay-ms) for the
answers themselves and the key's `prove_s_p50` that tells a fresh client when a proof is due."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import EXAMPLES, REPO, LoopbackServer, instant_server, read_http_head

from engine.client import Client, ServerError
from engine.errors import EngineError
from engine.client_wait import DEFAULT_SPIN_MS, ENV, HISTORY, AnswerWait, spin_seconds
from engine.service.keys import ServedKey

SUDOKU = EXAMPLES / "bn128" / "sudoku"


class Slow(LoopbackServer):
    """A loopback server answering each request `delay` seconds after reading it (None: never), and
    noting when a client hung up while it waited."""

    def __init__(self, delay: float | None):
        self.delay, self.hung_up = delay, threading.Event()
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as f:
            while True:
                head, length = read_http_head(f)
                if not head:
                    break
                f.read(length)
                conn.settimeout(self.delay if self.delay is not None else 30)
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":  # the client hung up before the answer
                        self.hung_up.set()
                        break
                except TimeoutError:
                    pass
                conn.settimeout(None)
                answer = json.dumps({"path": head[0].split()[1], "pad": "x" * 3000}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(answer), answer))


@pytest.fixture
def slow(request):
    srv = Slow(request.param)
    yield srv
    srv.close()


def test_spin_setting_argument_environment_default(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert spin_seconds() == DEFAULT_SPIN_MS / 1e3
    monkeypatch.setenv(ENV, "0")
    assert spin_seconds() == 0 and Client("http://127.0.0.1:1").answers.spin_s == 0  # the off switch
    monkeypatch.setenv(ENV, " 1.5 ")
    assert spin_seconds() == 0.0015
    assert spin_seconds(7) == 0.007  # the argument wins
    monkeypatch.setenv(ENV, "fast")
    with pytest.raises(EngineError, match=ENV):
        spin_seconds()
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError):
            spin_seconds(bad)


@pytest.mark.parametrize("slow", [0.03], indirect=True)
def test_answers_are_the_same_spun_or_blocked_and_the_spin_is_bounded(slow):
    results = {}
    for spin_ms in (0, 5):
        with Client(slow.url, timeout=5, spin_ms=spin_ms) as c:
            results[spin_ms] = [c.healthz(), c.stats(), c.healthz(), c.healthz(), c.stats()]
            assert c._sock.gettimeout() == 5  # the wait leaves the socket as it found it
            if spin_ms:
                # the first of each route spun its whole budget (no history), later ones napped until
                # 2.5 ms before the answer was due: never more than the budget a request
                assert 0.005 <= c.answers.spun_s <= 5 * 0.005 + 0.01
                assert set(c.answers.recent) == {"GET /healthz", "GET /v1/stats"}
                assert all(0.03 <= w < 1 for w in c.answers.recent["GET /healthz"])
            else:
                assert c.answers.spun_s == 0 and c.answers.recent == {}
    assert results[0] == results[5] and results[0][0]["path"] == "/healthz"


def test_history_keeps_the_last_answers_and_the_median_is_due():
    w = AnswerWait(0.002)
    assert w.due("GET /x") is None
    w.expect("GET /x", 0.015)
    assert w.due("GET /x") == 0.015
    w.expect("GET /x", 0.5)  # the server's figure seeds a route once; measured waits take over
    assert w.due("GET /x") == 0.015
    w.recent["GET /x"] = [0.01 * i for i in range(1, HISTORY + 1)]
    assert w.due("GET /x") == 0.01 * (HISTORY // 2 + 1)


@pytest.mark.parametrize("slow", [None], indirect=True)
def test_no_answer_spins_its_budget_then_blocks_to_the_timeout(slow):
    with Client(slow.url, timeout=0.6, spin_ms=50) as c:
        cpu, t = time.process_time(), time.perf_counter()
        with pytest.raises(ServerError) as info:
            c.healthz()
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    assert info.value.status == 0 and "timed out" in str(info.value)
    assert 0.55 <= wall < 3  # the client's timeout, not the spin's end nor the server's 30 s
    assert 0.05 <= c.answers.spun_s < 0.1 and cpu < 0.4  # 50 ms of spinning, then asleep


@pytest.mark.parametrize("slow", [None], indirect=True)
def test_a_due_answer_later_than_the_timeout_still_times_out(slow):
    with Client(slow.url, timeout=0.3, spin_ms=4) as c:
        c.answers.expect("GET /healthz", 10.0)  # due in 10 s: the nap would outlast the timeout
        t = time.perf_counter()
        with pytest.raises(ServerError, match="timed out"):
            c.healthz()
        assert time.perf_counter() - t < 2 and c.answers.spun_s == 0


@pytest.mark.parametrize("slow", [0.4], indirect=True)
def test_only_a_lone_request_spins(slow):
    """Two threads' requests waiting at once: the first stops spinning when the second starts waiting,
    and the second never spins (spinning threads fight over the GIL and the cores); both are answered."""
    a, b = Client(slow.url, spin_ms=1000), Client(slow.url, spin_ms=1000)  # (the most a spin takes)
    found = {}

    def call(name, c):
        found[name] = c.healthz()

    try:
        first = threading.Thread(target=call, args=("a", a))
        first.start()
        time.sleep(0.1)  # a spins alone meanwhile
        call("b", b)
        first.join(5)
        assert found == {"a": found["b"], "b": {"path": "/healthz", "pad": "x" * 3000}}
        assert 0.05 < a.answers.spun_s < 0.35 and b.answers.spun_s == 0
    finally:
        a.close()
        b.close()


class Interrupt(BaseException):
    pass


@pytest.mark.parametrize("slow", [5.0], indirect=True)
@pytest.mark.parametrize("spin_ms", [0, 400])
def test_an_interrupt_while_waiting_hangs_up_which_cancels(slow, spin_ms):
    """Ctrl-C (here SIGALRM) during the wait, asleep (spin 0) or spinning: the connection closes, which
    is what cancels a server's job; the client is usable afterwards on a fresh connection."""
    def interrupt(signum, frame):
        raise Interrupt()

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        with Client(slow.url, spin_ms=spin_ms) as c:
            signal.setitimer(signal.ITIMER_REAL, 0.15)
            with pytest.raises(Interrupt):
                c.healthz()
            assert c._sock is None  # closed, not left half-used with an answer still to come
            assert slow.hung_up.wait(5)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_a_socket_that_cannot_peek_is_not_spun():
    class Wrapped(socket.socket):  # as ssl.SSLSocket is: recv with flags is refused there
        pass

    a, b = socket.socketpair()
    wrapped = Wrapped(fileno=a.detach())
    with wrapped, b:
        w = AnswerWait(1.0)
        t = time.perf_counter()
        w.wait(wrapped, "GET /", None)
        assert time.perf_counter() - t < 0.5 and w.spun_s == 0 and w.recent == {}


def test_served_key_reports_its_recent_proofs_median():
    key = ServedKey("k", "/k.zkey", None, (0, 0, 0))
    assert key.prove_s_p50() is None
    for s in (0.3, 0.1, 0.2):
        key.proved(s)
    assert key.prove_s_p50() == 0.2
    for _ in range(ServedKey.RECENT):
        key.proved(1.0)
    assert key.recent_s == [1.0] * ServedKey.RECENT and key.prove_s_p50() == 1.0


@pytest.fixture(scope="module")
def instant(tmp_path_factory):
    with instant_server(tmp_path_factory, "--delay-ms", "20") as url:
        yield url


def test_a_bad_spin_setting_is_the_cli_s_one_line(instant, tmp_path):
    r = subprocess.run([sys.executable, "-m", "engine", "prove", "--server", instant, f"{SUDOKU}.zkey", f"{SUDOKU}.wtns",
                        str(tmp_path / "p.json"), str(tmp_path / "pub.json")], cwd=REPO, capture_output=True, text=True,
                       timeout=60, env={**os.environ, ENV: "fast"})
    assert r.returncode == 2 and ENV in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "p.json").exists()


def test_the_service_says_when_a_proof_is_due_and_the_answers_match(instant):
    wtns = (SUDOKU.parent / "sudoku.wtns").read_bytes()
    with Client(instant, spin_ms=0) as plain:
        key = plain.load_key(f"{SUDOKU}.zkey")
        assert key["prove_s_p50"] is None  # no proof yet
        blocked = [plain.prove(key["id"], wtns) for _ in range(3)]
    with Client(instant, spin_ms=3) as c:
        key = c.load_key(f"{SUDOKU}.zkey")
        assert 0.02 <= key["prove_s_p50"] < 1  # the instant engine's proofs sleep 20 ms
        route = f"POST /v1/keys/{key['id']}/prove"
        assert c.answers.due(route) == key["prove_s_p50"]  # due from the first proof on
        spun = [c.prove(key["id"], wtns) for _ in range(3)]
        assert c.answers.spun_s <= 3 * 0.003 + 0.01
    for a, b in zip(blocked, spun):
        assert (a.proof, a.public, a.key, a.proof_json(), a.public_json()) == (
            b.proof, b.public, b.key, b.proof_json(), b.public_json())
