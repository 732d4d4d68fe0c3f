"""What the client makes of answers that are not the prover's: a proxy's HTML page, JSON of another shape, a
malformed length, a server that says nothing.  Each is one ServerError line (the CLI: one line, exit 2), never a
traceback.  Hand-made loopback servers answer with canned bytes."""
from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time

import pytest

from conftest import EXAMPLES, REPO, LoopbackServer, instant_server, read_http_head

from engine.client import AsyncClient, Client, ServerError, _job_outcome

SUDOKU = EXAMPLES / "bn128" / "sudoku"
NGINX_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
             b"</center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n")


class Canned(LoopbackServer):
    """Answers every request with one canned answer (`status`, and a Content-Length unless `head` has one),
    then closes; status None: reads the request and says nothing."""

    def __init__(self, status: str | None, ctype: str = "application/json", body: bytes = b"", head: str = ""):
        if status is None:
            self.raw = None
        else:
            length = f"Content-Length: {len(body)}\r\n" if "Content-Length" not in head else ""
            self.raw = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n{length}{head}Connection: close\r\n\r\n"
                        ).encode() + body
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as f:
            _, length = read_http_head(f)
            f.read(length)
            if self.raw is None:
                time.sleep(30)
                return
            conn.sendall(self.raw)


def _cli(url: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "prove", "--server", url, f"{SUDOKU}.zkey",
                           f"{SUDOKU}.wtns", tmp_path / "proof.json", tmp_path / "public.json"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("status, ctype, body, words", [
    # a proxy's page: it was eight lines of HTML
    ("502 Bad Gateway", "text/html", NGINX_502,
     "answered HTTP 502 with text/html, not the prover's JSON: 502 Bad Gateway"),
    ("200 OK", "text/html", b"<html>a login page</html>", "text/html, not the prover's JSON"),  # AttributeError
    ("200 OK", "application/json", b"{not json", "JSON that does not parse"),  # KeyError: 'id'
    ("200 OK", "application/json", b"[1, 2]", "not the prover's answer"),  # AttributeError: 'list' ...
    ("200 OK", "application/json", b'{"status": "ok"}', "not the prover's answer"),  # KeyError: 'id'
])
def test_answers_that_are_not_the_provers_are_one_line(tmp_path, status, ctype, body, words):
    """The CLI printed a traceback for each 200 here, and the proxy's 502 page as eight lines of HTML."""
    srv = Canned(status, ctype, body)
    try:
        r = _cli(srv.url, tmp_path)
    finally:
        srv.close()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and line.startswith("error: ") and words in line, line
    assert srv.url in line and len(line) < 400, line
    assert not (tmp_path / "proof.json").exists()


@pytest.mark.parametrize("head, body", [
    ("Content-Length: abc\r\n", b"{}"),  # ValueError: invalid literal for int()
    ("Content-Length: -5\r\n", b"{}"),  # ValueError: read length must be non-negative
    ("Transfer-Encoding: chunked\r\n", b"2\r\n{}XX0\r\n\r\n"),  # a chunk not ended by CRLF: read as {}
])
def test_a_malformed_length_or_chunk_is_a_bad_response(head, body):
    srv = Canned("200 OK", body=body, head=head)
    try:
        with Client(srv.url) as c:
            with pytest.raises(ServerError) as info:
                c.stats()
        assert (info.value.status, info.value.code) == (0, "bad_response"), info.value

        async def call():
            async with AsyncClient(srv.url) as ac:
                await ac.stats()

        with pytest.raises(ServerError) as info:
            asyncio.run(call())
        assert info.value.code == "bad_response", info.value
    finally:
        srv.close()


@pytest.mark.parametrize("spin_ms", [None, 0])
def test_the_blocking_client_s_timeout_bounds_the_wait_once(spin_ms):
    """With the spin on (the default), a server that never answered was waited for twice the timeout: the
    wait ran to it, then the read blocked for it again."""
    srv = Canned(None)
    try:
        with Client(srv.url, timeout=1.0, spin_ms=spin_ms) as c:
            t = time.perf_counter()
            with pytest.raises(ServerError) as info:
                c.stats()
            wall = time.perf_counter() - t
    finally:
        srv.close()
    assert 0.95 <= wall < 1.5, wall
    assert info.value.code == "timeout" and "no answer within 1 s" in info.value.message, info.value


def test_the_async_client_s_timeout_says_so():
    """It said "cannot reach the prover server at URL: " (the TimeoutError's empty text), of a server it reached."""
    srv = Canned(None)

    async def call():
        async with AsyncClient(srv.url, timeout=0.5) as c:
            await c.stats()

    try:
        with pytest.raises(ServerError) as info:
            asyncio.run(call())
    finally:
        srv.close()
    assert info.value.code == "timeout" and info.value.message.endswith("no answer within 0.5 s"), info.value


@pytest.mark.parametrize("error, status", [("engine_error", 500), ("internal_error", 500), ("bad_input", 422),
                                           ("too_large_for_budget", 507), ("shutting_down", 503),
                                           ("unsatisfied_witness", 422)])
def test_a_polled_job_s_error_has_its_code_s_status(error, status):
    """`Client.wait` raised every failed job as HTTP 422, a device error (engine_error, the server's fault) too."""
    state = "cancelled" if error == "shutting_down" else "failed"
    with pytest.raises(ServerError) as info:
        _job_outcome({"id": "1", "state": state, "error": error, "message": "m"})
    assert (info.value.status, info.value.code) == (status, error)


def test_wait_outlasts_the_client_s_timeout_by_polling_within_it(tmp_path_factory):
    """`wait` long-polled 30 s a request whatever the client's `timeout`: Client(timeout=2).wait(job) of a job
    that ended after 2 s failed with "timed out", blocking and asyncio alike."""
    with instant_server(tmp_path_factory, "--delay-ms", "1500", "--running-jobs", "1") as url:
        with Client(url, timeout=1.0) as c:
            key = c.load_key(f"{SUDOKU}.zkey")["id"]
            job = c.submit(key, f"{SUDOKU}.wtns")
            assert c.wait(job["id"]).public  # 1.5 s, polled within the 1 s timeout

        async def wait_async():
            async with AsyncClient(url, timeout=1.0) as ac:
                queued = await ac.submit(key, f"{SUDOKU}.wtns")
                return await ac.wait(queued["id"])

        assert asyncio.run(wait_async()).public


def test_the_async_client_keeps_no_connection_the_server_closed():
    """A connection whose answer said "Connection: close" went back to the pool all the same: after three
    such answers side by side, the next call took two dead connections in a row and failed "cannot reach"."""
    srv = Canned("200 OK", body=b'{"n": 1}')  # every answer closes its connection

    async def calls():
        async with AsyncClient(srv.url) as c:
            first = await asyncio.gather(*(c.stats() for _ in range(3)))
            return first + [await c.stats()]

    try:
        assert asyncio.run(calls()) == [{"n": 1}] * 4
    finally:
        srv.close()


class KeepThenDrop(LoopbackServer):
    """Answers and keeps each connection, until `drop()` closes every one of them (as a server's keep-alive
    timeout does to idle connections)."""

    def __init__(self):
        self.conns: list[socket.socket] = []
        super().__init__()

    def accepted(self, conn: socket.socket) -> None:
        self.conns.append(conn)

    def handle(self, conn: socket.socket) -> None:
        with conn.makefile("rb") as f:
            while True:
                try:
                    head, length = read_http_head(f)
                    if not head:
                        return
                    f.read(length)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n"
                                 b'{"n": 1}')
                except OSError:
                    return

    def drop(self) -> None:
        for conn in self.conns:
            conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        time.sleep(0.1)


def test_the_async_client_retries_a_stale_connection_on_a_fresh_one():
    """After calls side by side the pool held several connections; once the server had closed them (its
    keep-alive timeout), the next call retried on a second stale one and failed "cannot reach"."""
    srv = KeepThenDrop()

    async def calls():
        async with AsyncClient(srv.url) as c:
            first = await asyncio.gather(*(c.stats() for _ in range(3)))
            srv.drop()
            return first + [await c.stats()]

    try:
        assert asyncio.run(calls()) == [{"n": 1}] * 4
    finally:
        srv.close()


def test_the_json_error_line_carries_the_servers_status_and_code(tmp_path):
    """`prove --server URL --json`'s error object had only the message: a script had to parse "(HTTP 429
    queue_full)" out of it to know that a retry would do."""
    import json

    body = b'{"error": "queue_full", "message": "key \'sudoku\' already has 2 jobs queued; retry later"}'
    srv = Canned("429 Too Many Requests", "application/json", body, head="Retry-After: 1\r\n")
    try:
        r = subprocess.run([sys.executable, "-m", "engine", "prove", "--server", srv.url, "--json", f"{SUDOKU}.zkey",
                            f"{SUDOKU}.wtns", tmp_path / "proof.json", tmp_path / "public.json"],
                           cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    finally:
        srv.close()
    error = json.loads(r.stderr.strip().splitlines()[-1])
    assert r.returncode == 2 and error["event"] == "error", r.stderr
    assert (error["status"], error["code"]) == (429, "queue_full") and "retry later" in error["message"]
