"""The service against clients that stall, trickle, lie or leave, and the client against servers that do: uploads
that stop arriving (slowloris), idle connections, shutdowns with jobs in flight, URLs that are wrong.  A real server
on loopback (CPU backend), as in tests/test_service.py; every process a test starts is stopped by its PID."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import REPO, LoopbackServer, read_http_head
from test_service import SLOW, SUDOKU, TOKEN, ServerProcess, wait_at_rest
from test_service_edges import _stalled_upload

from engine.client import AsyncClient, Client, ServerError, token_file_tokens
from engine.errors import EngineError

WTNS = (SUDOKU.parent / "sudoku.wtns").read_bytes()
URL = "http://127.0.0.1:9"  # nothing listens there (discard)


@pytest.fixture
def server(tmp_path):
    """One queue place per key and 1 s upload and idle timeouts, so that one stalled upload fills the queue."""
    srv = ServerProcess(tmp_path, "--max-queued-per-key", "1", "--running-jobs", "1", "--upload-timeout", "1",
                        "--idle-timeout", "1", "--max-body", "100KiB")
    yield srv
    srv.kill()


def _answer(s: socket.socket) -> tuple[int, dict]:
    """The status and JSON body of an answer on a raw socket (read until the server closes it)."""
    raw = b""
    while data := s.recv(65536):
        raw += data
        head, _, body = raw.partition(b"\r\n\r\n")
        length = [int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")]
        if length and len(body) >= length[0]:
            break
    return int(raw.split(b" ", 2)[1]), json.loads(raw.partition(b"\r\n\r\n")[2])


def _head(path: str, length: int | None, ctype: str = "application/octet-stream") -> bytes:
    size = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: {ctype}\r\n"
            f"{size}\r\n\r\n").encode()


def _until(check, timeout: float = 10, step: float = 0.05):
    end = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < end, "timed out"
        time.sleep(step)
    return value


def test_a_stalled_upload_is_dropped_and_its_queue_place_freed(server):
    """A client that sent its head and 100 bytes of the body, then nothing, held its place in the key's queue
    for ever: with one place, every other client got 429 queue_full for as long as it kept the socket open."""
    with server.client() as c:
        key = c.load_key(f"{SUDOKU}.zkey")["id"]
        started = time.monotonic()
        stalled = _stalled_upload(server.port, key, WTNS)
        _until(lambda: c.stats()["uploads_in_progress"] == 1)
        with pytest.raises(ServerError) as info:
            c.submit(key, WTNS)
        assert info.value.status == 429
        status, body = _answer(stalled)  # the server drops it after 1 s without a byte
        waited = time.monotonic() - started
        assert (status, body["error"]) == (408, "upload_timeout"), body
        assert "100 of 7276 bytes" in body["message"] and "\n" not in body["message"], body
        assert 0.9 <= waited < 5, waited
        stalled.close()
        assert c.stats()["uploads_in_progress"] == 0
        assert c.prove(key, WTNS).public  # the place is free again
        wait_at_rest(c)
    server.stop()
    assert "Traceback" not in server.log.read_text()


def test_a_slow_but_moving_upload_is_not_dropped(server):
    """The timeout is for an upload that stops, not one that is slow: a piece every 0.4 s (well under the 1 s
    timeout) over 2 s is proved."""
    with server.client() as c:
        key = c.load_key(f"{SUDOKU}.zkey")["id"]
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(_head(f"/v1/keys/{key}/prove", len(WTNS)))
        pieces = [WTNS[i:i + 1500] for i in range(0, len(WTNS), 1500)]
        for piece in pieces:
            time.sleep(0.4)
            s.sendall(piece)
        status, body = _answer(s)
    assert (status, body["state"]) == (200, "done"), body
    assert body["timings"]["upload_s"] > 1.8, body["timings"]
    server.stop()


def test_every_kind_of_body_that_stops_or_trickles_is_dropped(server):
    """A spooled (chunked) upload that stops, inputs JSON that stops, and an upload that keeps the connection alive
    with a byte now and then (each within the timeout, at a rate no real upload has) held their places too."""
    with server.client() as c:
        key = c.load_key(f"{SUDOKU}.zkey", wasm=f"{SUDOKU}.wasm")["id"]
        for kind in ("chunked", "json", "trickle"):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            started = time.monotonic()
            if kind == "chunked":
                s.sendall(_head(f"/v1/keys/{key}/jobs", None) + b"64\r\n" + WTNS[:100] + b"\r\n")
            elif kind == "json":
                s.sendall(_head(f"/v1/keys/{key}/jobs", 1000, "application/json") + b'{"puzzle": [')
            else:
                s.sendall(_head(f"/v1/keys/{key}/jobs", len(WTNS)))
                for i in range(10):  # a byte every 0.3 s: never silent for the timeout, yet 3 bytes a second
                    s.sendall(WTNS[i:i + 1])
                    time.sleep(0.3)
                    if c.stats()["uploads_in_progress"] == 0:
                        break
            status, body = _answer(s)
            s.close()
            assert (status, body["error"]) == (408, "upload_timeout"), (kind, body)
            assert ("too slowly" if kind == "trickle" else "stopped arriving") in body["message"], (kind, body)
            assert time.monotonic() - started < 6, kind
            stats = c.stats()
            assert stats["uploads_in_progress"] == 0 and stats["spooled_uploads"] == 0, (kind, stats)
        assert c.prove(key, WTNS).public
        wait_at_rest(c)
    server.stop()
    assert "Traceback" not in server.log.read_text()


def _closed_within(s: socket.socket, seconds: float) -> bool:
    """True when the server closes the connection (an EOF, or a reset) within `seconds`."""
    s.settimeout(seconds)
    try:
        while s.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def test_idle_connections_and_stalled_heads_are_closed(server):
    """A connection that sent nothing, or half a request head, was kept for an hour (the keep-alive default of
    aiohttp's AppRunner; its run_app's is 75 s): enough of them took every file descriptor the server had."""
    with socket.create_connection(("127.0.0.1", server.port)) as idle, \
            socket.create_connection(("127.0.0.1", server.port)) as half:
        half.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert _closed_within(idle, 5) and _closed_within(half, 2)
    with server.client() as c:  # a kept-alive client's connection, closed while idle: the next call reconnects
        assert c.healthz() == {"status": "ok"}
        time.sleep(1.5)
        assert c.healthz() == {"status": "ok"}
        key = c.load_key(f"{SLOW}.zkey")["id"]
        assert c.prove(key, f"{SLOW}.wtns").public  # about 2.5 s: a connection busy with a request is not idle
    server.stop()


def test_a_low_descriptor_limit_is_raised_so_idle_connections_do_not_lock_clients_out(tmp_path):
    """Under the usual soft limit of descriptors (1024; 64 here) as many idle connections made the server reset
    every new one, /healthz included; the server now takes the hard limit (every system has 1024 or more there),
    as Go's runtime does."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    srv = ServerProcess(tmp_path, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard)))
    idle = []
    try:
        idle = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(120)]
        time.sleep(0.5)
        with srv.client(timeout=10) as c:
            assert c.healthz() == {"status": "ok"}
    finally:
        for s in idle:
            s.close()
        srv.kill()


def _exchange(port: int, request: bytes) -> tuple[int, dict]:
    """A request whose body comes once its handler runs (what a body that arrives at once does is aiohttp's)."""
    head, _, body = request.partition(b"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head + b"\r\n\r\n")
        time.sleep(0.2)
        s.sendall(body)
        return _answer(s)


def test_bodies_compressed_corrupt_or_badly_chunked_and_bytes_that_are_not_http(server):
    """A gzip-encoded .wtns (aiohttp decodes it) was refused as "longer than its Content-Length" (the encoded
    length sized the in-memory buffer); a body that does not decode answered 500 internal_error, two lines of
    aiohttp's text, with a traceback in the log.  A chunk size that is not hex, arriving once the handler read,
    left it waiting for ever for a body aiohttp's parser had given up on (it never tells the request's stream).
    And aiohttp wrote its traceback into the log for every request that is not HTTP: any client could fill it."""
    import gzip
    import zlib

    with server.client() as c:
        key = c.load_key(f"{SUDOKU}.zkey")["id"]
    packed = gzip.compress(WTNS)
    status, body = _exchange(server.port, _head(f"/v1/keys/{key}/prove", len(packed))[:-2] +
                             b"Content-Encoding: gzip\r\n\r\n" + packed)
    assert (status, body.get("state")) == (200, "done"), body
    bomb = zlib.compress(b"wtns" + bytes(200_000))  # 200 kB decoded from a few hundred bytes, over --max-body
    for path, data, ctype, encoding, want in (
            (f"/v1/keys/{key}/prove", b"not gzip at all", "application/octet-stream", "gzip", 400),
            ("/v1/keys", b"{not deflate", "application/json", "deflate", 400),
            (f"/v1/keys/{key}/prove", bomb, "application/octet-stream", "deflate", 413)):
        status, body = _exchange(server.port, _head(path, len(data), ctype)[:-2] +
                                 f"Content-Encoding: {encoding}\r\n\r\n".encode() + data)
        assert (status, body["error"]) == (want, "bad_request" if want == 400 else "body_too_large"), body
        assert "\n" not in body["message"] and "does not decode" in body["message"] if want == 400 else True, body
    started = time.monotonic()
    status, body = _exchange(server.port, _head(f"/v1/keys/{key}/prove", None) + b"64\r\n" + WTNS[:100] +
                             b"\r\nzz\r\n")
    assert (status, body["error"]) == (400, "bad_request") and "chunk size: b'zz'" in body["message"], body
    assert time.monotonic() - started < 3
    for garbage in (b"NOT HTTP\r\n\r\n", b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 10000 + b"\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(garbage)
            assert s.recv(100).startswith(b"HTTP/1.") and _closed_within(s, 5)
    with server.client() as c:
        assert c.prove(key, WTNS).public
        wait_at_rest(c)
    server.stop()
    assert "Traceback" not in server.log.read_text(), server.log.read_text()


def test_expect_100_continue_is_refused_before_the_body_when_it_would_be_refused_after(server):
    """curl sends `Expect: 100-continue` before a body over 1 MiB and waits for the go-ahead: aiohttp gave it
    before any check, so a full queue, a missing token or an unknown key took the whole upload, then refused it
    (docs/service.md: "a full queue refuses an upload before it is sent")."""
    with server.client() as c:
        key = c.load_key(f"{SUDOKU}.zkey")["id"]

    def first_answer(path: str, token: bool = True) -> bytes:
        auth = f"Authorization: Bearer {TOKEN}\r\n" if token else ""
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {len(WTNS)}\r\n"
                      "Expect: 100-continue\r\n\r\n".encode())
            answer = s.recv(4096)
            if answer.startswith(b"HTTP/1.1 100"):
                s.sendall(WTNS)
                answer += s.recv(4096)
            return answer

    assert first_answer(f"/v1/keys/{key}/jobs").startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202")
    assert first_answer(f"/v1/keys/{key}/jobs", token=False).startswith(b"HTTP/1.1 401")
    assert first_answer("/v1/keys/nope/prove").startswith(b"HTTP/1.1 404")
    assert first_answer(f"/v1/keys/{key}/prove?priority=urgent").startswith(b"HTTP/1.1 400")
    stalled = _stalled_upload(server.port, key, WTNS)  # holds the one place
    with server.client() as c:
        _until(lambda: c.stats()["uploads_in_progress"] == 1)
        answer = first_answer(f"/v1/keys/{key}/prove")
        assert answer.startswith(b"HTTP/1.1 429") and b"queue_full" in answer, answer
        stalled.close()
        wait_at_rest(c)
    server.stop()


# ------------------------------------------------------------------ the client against servers that misbehave

class Canned(LoopbackServer):
    """Answers with `raw` (default: `first`, then `head` and two bytes of body), a byte every `pause` s, then
    closes; a request for /v1/keys first gets a key, on a kept connection.  `tls`: the request is a TLS client
    hello, taken as it comes.  `requests`: the paths asked for."""

    def __init__(self, head: bytes = b"", first: bytes = b"", raw: bytes | None = None, pause: float = 0.0,
                 tls: bool = False):
        self.raw = raw or first + b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + head + b"\r\n{}"
        self.pause, self.tls, self.requests = pause, tls, []
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as f:
            while not self.tls and (request := read_http_head(f))[0]:
                f.read(request[1])
                self.requests.append(request[0][0].split()[1].split("?")[0])
                if self.requests[-1] != "/v1/keys":
                    break
                conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n'
                             b'{"id": "k"}')
            if self.tls:
                conn.recv(65536)
            try:
                for part in ([self.raw[i:i + 1] for i in range(len(self.raw))] if self.pause else [self.raw]):
                    conn.sendall(part)
                    time.sleep(self.pause)
            except OSError:
                pass


def test_an_answer_cut_short_is_not_sent_again_and_says_so():
    """A job submitted on a kept-alive connection whose answer the server cut short was submitted a second time (the
    retry meant for an idle connection the server had closed): two jobs on the server for one call; and the
    error said "cannot reach the prover server", of a server that had answered."""
    srv = Canned(raw=b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n{\"id\": ")

    async def submit_async():
        async with AsyncClient(srv.url) as ac:
            await ac.load_key("/k.zkey")
            await ac.submit("k", WTNS)

    try:
        for call in (lambda: _submit_blocking(srv.url), lambda: asyncio.run(submit_async())):
            srv.requests.clear()
            with pytest.raises(ServerError) as info:
                call()
            assert srv.requests == ["/v1/keys", "/v1/keys/k/jobs"], srv.requests
            assert info.value.code == "bad_response" and "cannot reach" not in info.value.message, info.value
            assert "closed the connection in the middle of its answer" in info.value.message, info.value
    finally:
        srv.close()


def _submit_blocking(url: str) -> None:
    with Client(url) as c:
        c.load_key("/k.zkey")
        c.submit("k", WTNS)


async def _healthz_async(url: str) -> dict:
    async with AsyncClient(url, token=TOKEN) as ac:
        return await ac.healthz()


def test_a_draining_server_s_healthz_is_its_503_and_sigterm_again_does_not_abandon_the_drain(tmp_path):
    """`Client.healthz()` of a server draining after SIGTERM raised "answered HTTP 503 with JSON that is not the
    prover's answer" (bad_response), for the documented 503 {"status": "draining"}.  And a third SIGTERM (an
    impatient `kill`, a supervisor that repeats it) counted as a third Ctrl-C: os._exit(130) mid-drain, the
    admitted jobs lost, and the CPU pool's workers' BrokenPipeError tracebacks in the log."""
    srv = ServerProcess(tmp_path, "--running-jobs", "1")
    try:
        with srv.client() as c:
            key = c.load_key(f"{SLOW}.zkey")["id"]
            jobs = [c.submit(key, f"{SLOW}.wtns") for _ in range(2)]  # about 2.5 s each: the drain waits for them
            _until(lambda: c.stats()["running"] == 1)
            srv.send(signal.SIGTERM)
            _until(lambda: "draining" in srv.log.read_text())
            for healthz in (c.healthz, lambda: asyncio.run(_healthz_async(srv.url))):
                with pytest.raises(ServerError) as info:
                    healthz()
                assert (info.value.status, info.value.code) == (503, "shutting_down"), info.value
                assert "draining" in info.value.message, info.value
            for _ in range(2):
                srv.send(signal.SIGTERM)
                time.sleep(0.2)
            assert all(c.wait(job["id"]).public for job in jobs)
        srv.stop()  # exit status 0, and no process left behind
        log = srv.log.read_text()
        assert "Traceback" not in log and "already draining" in log, log
    finally:
        srv.kill()


def test_https_to_a_plain_http_server_says_so():
    """`prove --server https://...` of the service (which has no TLS) said "cannot reach the prover server at
    URL: [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)"."""
    srv = Canned(raw=b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", tls=True)
    try:
        url = srv.url.replace("http://", "https://")
        r = subprocess.run([sys.executable, "-m", "engine", "prove", "--server", url, f"{SUDOKU}.zkey",
                            f"{SUDOKU}.wtns", "/dev/null", "/dev/null"], cwd=REPO, capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
    finally:
        srv.close()
    line = r.stderr.strip()
    assert r.returncode == 2 and "\n" not in line and "_ssl.c" not in line, line
    assert "TLS" in line and "plain HTTP" in line and "http://" in line, line


@pytest.mark.parametrize("url, words", [
    ("127.0.0.1:8080", "no scheme: give http://127.0.0.1:8080"),
    ("ftp://host:1", "the scheme 'ftp' is not http or https"),
    ("http://127.0.0.1:99999", "port 99999 is out of range (1-65535)"),
    ("http://127.0.0.1:80a", "port '80a' is not a number"),
    ("http://user:secret@127.0.0.1:8080", "credentials in a URL are not sent (give the token with --token-file)"),
    ("http://", "no host"),
    ("http://[::1:8080", "an IPv6 address needs its closing ]"),
    ("http://127.0.0.1:8080?x=1", "a query or fragment has no place here"),
])
def test_a_url_that_is_wrong_says_how(url, words):
    """Every malformed --server URL got the one message "URL: expected http://HOST:PORT or https://HOST:PORT", of
    http://127.0.0.1:99999 too, which looks like just that."""
    with pytest.raises(ServerError) as info:
        Client(url)
    assert (info.value.code, str(info.value)) == ("bad_url", f"{url}: {words}"), str(info.value)


def test_request_heads_alone_cannot_reserve_unbounded_upload_memory(tmp_path):
    """Each upload of a length up to memory_upload_max took (and zero-filled) a buffer of that length from its
    head alone: 12 heads of 150 bytes claiming 8 MiB each held 96 MiB of the server's memory (64 MiB each at the
    default, 64 of them a key: 4 GiB).  Uploads still arriving now hold at most 4 x memory_upload_max in memory;
    the rest wait in spool files, which grow only with the bytes that came."""
    srv = ServerProcess(tmp_path, "--max-queued-per-key", "16", "--memory-upload-max", "8MiB")
    heads = []
    try:
        with srv.client() as c:
            key = c.load_key(f"{SUDOKU}.zkey")["id"]
            for _ in range(12):
                s = socket.create_connection(("127.0.0.1", srv.port))
                s.sendall(_head(f"/v1/keys/{key}/jobs", 8 << 20) + b"wtns")
                heads.append(s)
            stats = _until(lambda: (st := c.stats())["uploads_in_progress"] == 12 and st)
            assert stats["uploads_in_memory_bytes"] <= 4 * (8 << 20) + (1 << 20), stats
            assert stats["spooled_uploads"] >= 8, stats
            assert c.prove(key, WTNS).public  # a real upload still finds room
            for s in heads:
                s.close()
            wait_at_rest(c)
        srv.stop()
    finally:
        for s in heads:
            s.close()
        srv.kill()


def test_the_blocking_client_s_timeout_bounds_an_answer_that_trickles():
    """Client(timeout=2) waited 2 s afresh for every read of the answer, so a server sending a byte every 0.3 s
    kept it a minute (docs/service.md: the timeout bounds one request)."""
    body = b'{"status": "ok", "pad": "' + b"x" * 40 + b'"}'
    srv = Canned(raw=b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(body), body), pause=0.3)
    try:
        for spin_ms in (0, 3):
            started = time.monotonic()
            with pytest.raises(ServerError) as info:
                Client(srv.url, timeout=2, spin_ms=spin_ms).healthz()
            assert info.value.code == "timeout" and time.monotonic() - started < 4, (info.value, spin_ms)
    finally:
        srv.close()


def test_a_killed_server_s_spooled_uploads_are_removed_by_the_next_one(tmp_path):
    """A server killed (SIGKILL, the OOM killer) left its spool directory in /dev/shm, uploads and all: RAM that
    stayed taken until a reboot, one more directory a crash.  The next server removes those whose owner is gone
    (each server holds a lock in its own; a live one's is never touched)."""
    import os

    dirs = [tmp_path / name for name in ("old", "live", "new")]
    for d in dirs:
        d.mkdir()
    old = ServerProcess(dirs[0], "--memory-upload-max", "0")  # every upload goes to a spool file
    live = None
    try:
        with old.client() as c:
            key = c.load_key(f"{SUDOKU}.zkey")["id"]
            stalled = _stalled_upload(old.port, key, WTNS)
            _until(lambda: c.stats()["spooled_uploads"] == 1)
        fds = [os.readlink(f"/proc/{old.proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{old.proc.pid}/fd")]
        spool = os.path.dirname(next(path for path in fds if os.path.basename(path).startswith("upload-")))
        live = ServerProcess(dirs[1], "--memory-upload-max", "0")
        old.kill()
        stalled.close()
        assert os.path.isdir(spool)
        new = ServerProcess(dirs[2])
        new.stop()
        assert not os.path.exists(spool), os.listdir(spool)
        with live.client() as c:  # the live server's spool is untouched: its uploads still go there
            key = c.load_key(f"{SUDOKU}.zkey")["id"]
            assert c.prove(key, WTNS).public
            wait_at_rest(c)
        live.stop()
    finally:
        old.kill()
        if live is not None:
            live.kill()


def test_a_token_that_is_not_ascii_is_refused_by_name_and_a_header_that_is_not_utf8_is_401(server, tmp_path):
    """A token file holding "tokén..." started the server; our client sent the token as Latin-1, which the server
    met as 500 internal_error (UnicodeEncodeError, a traceback in its log), for any client sending such bytes; and
    a "€" in the client's token file was a UnicodeEncodeError traceback from `prove --server`."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\xe9n-0123456789abcdef\r\n\r\n")
        status, body = _answer(s)
    assert (status, body["error"]) == (401, "unauthorized"), body
    server.stop()
    assert "Traceback" not in server.log.read_text()
    token = tmp_path / "odd-token"
    token.write_text("tok\u20acn-0123456789abcdef\n", encoding="utf-8")
    for args in (["prove", "--server", server.url, "--token-file", token, f"{SUDOKU}.zkey", f"{SUDOKU}.wtns",
                  tmp_path / "proof.json", tmp_path / "public.json"],
                 ["serve", "--backend", "cpu", "--port", "0", "--token-file", token]):
        r = subprocess.run([sys.executable, "-m", "engine", *map(str, args)], cwd=REPO, capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
        line = r.stderr.strip()
        assert r.returncode == 2 and "\n" not in line and "Traceback" not in line, (args[0], r.stderr)
        assert str(token) in line and "ASCII" in line, line
    with pytest.raises(EngineError) as info:
        Client(server.url, token="tok\u20acn")
    assert "ASCII" in str(info.value)
    token.write_text(f"\ufeff{TOKEN}\n", encoding="utf-8")  # Notepad's byte order mark is no part of the token
    assert token_file_tokens(token) == [TOKEN]


@pytest.mark.parametrize("url, timeout, words", [
    (None, None, "url: expected text such as http://127.0.0.1:8080, not NoneType"),
    (8080, None, "url: expected text such as http://127.0.0.1:8080, not int"),
    *((URL, t, f"timeout: expected seconds > 0 (or None), not {t!r}") for t in (0, -1, "5", float("nan"),
                                                                               float("inf"))),
])
def test_client_arguments_that_cannot_work_are_refused_by_name(url, timeout, words):
    """Client(None) was "AttributeError: 'NoneType' object has no attribute 'partition'"; a timeout of -1, NaN or
    "5" failed only at the first call, as ValueError/TypeError that named no argument; and timeout=0 made the
    socket non-blocking: "cannot reach the prover server ...: Operation now in progress"."""
    for make in (Client, AsyncClient):
        with pytest.raises(EngineError) as info:
            make(url, timeout=timeout)
        assert str(info.value) == words


@pytest.mark.parametrize("head, words", [
    (b"Content-Length: 1000000000000\r\n", "the client reads at most"),  # MemoryError
    (b"Content-Length: " + b"9" * 30 + b"\r\n", "the client reads at most"),  # OverflowError
    (b"Transfer-Encoding: chunked\r\n\r\nffffffffff", "the client reads at most"),  # MemoryError
    (b"X-Big: " + b"a" * 200_000 + b"\r\nContent-Length: 2\r\n", "a line longer than 65536 bytes"),
    (b"Content-Length: 2\r\n", None),  # after two interim answers: read, as the answer that follows them
])
def test_an_answer_that_claims_a_huge_body_or_has_a_huge_line_is_a_bad_response(head, words):
    """A Content-Length of 10**12 was a MemoryError traceback from the blocking client (its buffered reader
    allocates what it is asked for), one of 30 digits an OverflowError, and the asyncio client called it a
    connection closed in the middle of its answer.  A header line over 64 KiB was a ValueError traceback from the
    AsyncClient ("Separator is not found, and chunk exceed the limit"), and "closed the connection in the middle of
    its answer" from the blocking one.  And a `103 Early Hints` (a CDN's) or an unasked `100 Continue` ahead of
    the answer was taken for the answer: "answered HTTP 100 with no content type, not the prover's JSON"."""
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
    srv = Canned(head, interim if words is None else b"")
    try:
        for call in (lambda: Client(srv.url).healthz(), lambda: asyncio.run(_healthz_async(srv.url))):
            if words is None:
                assert call() == {}
                continue
            with pytest.raises(ServerError) as info:
                call()
            assert info.value.code == "bad_response" and words in info.value.message, info.value
    finally:
        srv.close()


def test_a_server_whose_log_reader_left_still_stops_on_sigterm():
    """`serve 2>&1 | head -1` (or a log collector that died): the "draining" line met a closed pipe, the
    BrokenPipeError ended the signal handler before the drain began, and every later SIGTERM did the same: the
    server could not be stopped but by SIGKILL, which leaves its spool behind."""
    from test_service import _alive, _children

    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve", "--backend", "cpu", "--port", "0"], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    kids: set[int] = set()
    try:
        assert b"listening on" in proc.stderr.readline()
        proc.stderr.close()  # the reader leaves
        kids = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        _until(lambda: not any(_alive(k) for k in kids))
    finally:
        for pid in [proc.pid, *kids]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("server, outputs, words", [
    (["--server", URL], ["{wtns}", "{tmp}/public.json"], "the proof would overwrite the witness read from the same"),
    (["--server", URL], ["{tmp}/no/folder/proof.json", "{tmp}/p.json"], "the folder {tmp}/no/folder does not exist"),
    (["--server", URL], ["{tmp}/same.json", "{tmp}/same.json"], "given for both the proof and the public signals"),
    (["--server", ""], ["{tmp}/proof.json", "{tmp}/public.json"], "argument --server: an empty URL"),
    (["--server="], ["{tmp}/proof.json", "{tmp}/public.json"], "argument --server: an empty URL"),
    *(([f"--server={URL}", "--deadline", d], ["{tmp}/proof.json", "{tmp}/public.json"],
       f"argument --deadline: {d!r} is not a number of seconds > 0") for d in ("-1", "0", "nan")),
])
def test_prove_server_refuses_bad_outputs_and_an_empty_url_before_it_asks_the_server(tmp_path, server, outputs,
                                                                                     words):
    """A plain `prove --server URL k.zkey w.wtns w.wtns public.json` (the fast reader of such lines skipped prove's
    output checks) wrote the proof over the witness and exited 0; an output folder that does not exist failed
    only after the server had proved (here it cannot be reached: the outputs are refused first).  And
    `prove --server "$URL"` with URL unset proved on this machine, without a word (read as no --server); a
    --deadline of -1, 0 or NaN was sent, refused only after the key had loaded."""
    wtns = tmp_path / "w.wtns"
    wtns.write_bytes(WTNS)
    files = [o.format(wtns=wtns, tmp=tmp_path) for o in outputs]
    r = subprocess.run([sys.executable, "-m", "engine", "prove", *server, f"{SUDOKU}.zkey", str(wtns), *files],
                       cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "Traceback" not in r.stderr and words.format(tmp=tmp_path) in r.stderr, r.stderr
    assert wtns.read_bytes() == WTNS and not (tmp_path / "proof.json").exists()


def test_the_upload_timeout_counts_the_client_s_silence_not_the_event_loop_s():
    """The deadline's check runs on the event loop: after the loop was busy past the timeout (no client's bytes
    could be read meanwhile), the late check took that for the client's silence and dropped a moving upload."""
    from types import SimpleNamespace

    from engine.service.bodies import BodyDeadline

    async def upload() -> str:
        loop = asyncio.get_running_loop()
        stream = SimpleNamespace(total_bytes=0, eof=loop.create_future())
        stream.is_eof = stream.eof.done
        request = SimpleNamespace(content=stream, content_length=10, headers={}, protocol=None)

        def feed() -> None:
            stream.total_bytes = 10
            stream.eof.set_result(None)

        def busy() -> None:  # 0.6 s of work on the loop (past the 0.4 s timeout); the bytes are read after it
            time.sleep(0.6)
            loop.call_later(0.05, feed)

        with BodyDeadline(request, 0.4):
            loop.call_later(0.05, busy)
            await stream.eof
        return "read"

    assert asyncio.run(upload()) == "read"


def test_a_client_shared_by_threads_gives_each_its_own_answer(tmp_path_factory):
    """Two threads proving through one `Client` interleaved their requests on its one connection and read each
    other's answers: a proof asked of key "sudoku" came back as key "tiny"'s, without a word."""
    import threading

    from conftest import FIXTURES, instant_server

    with instant_server(tmp_path_factory) as url:
        c = Client(url, spin_ms=0)
        keys = [c.load_key(f"{SUDOKU}.zkey")["id"], c.load_key(FIXTURES / "tiny" / "bn128" / "tiny.zkey")["id"]]
        got: list[tuple[str, str]] = []

        def prove(key: str) -> None:
            got.extend((key, c.prove(key, WTNS).key) for _ in range(30))

        threads = [threading.Thread(target=prove, args=(key,)) for key in keys]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        c.close()
    assert len(got) == 60 and all(asked == answered for asked, answered in got), got
