"""engine/client_wire.py and the blocking client's transport, against hand-made HTTP servers on loopback.

The real server's behaviour is tests/test_service.py's; here: URLs, the
response reader (lengths, chunks, no length, garbage), and the connection
cases a keep-alive client meets (an idle connection the server closed, an
answer sent before the body was read, a server that is not there)."""
from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest

from conftest import read_http_head
from engine.client import AsyncClient, Client, ServerError
from engine.client_wire import BadResponse, ServerClosed, quote, read_response, split_url, with_query


@pytest.mark.parametrize("url, parts", [
    ("http://127.0.0.1:8080", ("http", "127.0.0.1", 8080, "")),
    ("http://127.0.0.1:8080/", ("http", "127.0.0.1", 8080, "")),
    ("HTTPS://prover.example/base/", ("https", "prover.example", 443, "/base")),
    ("http://[::1]:9000/x?q=1", ("http", "::1", 9000, "/x")),
    ("http://localhost", ("http", "localhost", 80, "")),
])
def test_split_url(url, parts):
    assert split_url(url) == parts


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "ftp://host", "http://", "http://:80", "http://h:0",
                                 "http://h:99999", "http://h:x", "http://user@h", "http://[::1", "http://[::1]x"])
def test_split_url_refuses(url):
    assert split_url(url) is None
    with pytest.raises(ServerError) as info:
        Client(url)
    assert info.value.code == "bad_url" and url in str(info.value)


def test_quote_and_query():
    assert quote("a b/c?é") == "a%20b%2Fc%3F%C3%A9"
    assert quote("key-1.v2_x~") == "key-1.v2_x~"
    assert with_query("/p", a=None) == "/p"
    assert with_query("/p", priority="high", deadline=1.5, name="w 1.wtns") == "/p?priority=high&deadline=1.5&name=w%201.wtns"


def _feed(raw: bytes):
    """Run read_response over `raw` as a stream would deliver it."""
    reader, pos = read_response(), 0
    want = next(reader)
    try:
        while True:
            kind, n = want
            if kind == "line":
                end = raw.find(b"\n", pos)
                end = len(raw) if end < 0 else end + 1
            elif kind == "exact":
                end = pos + n
            else:
                end = len(raw)
            data, pos = raw[pos:end], end
            want = reader.send(data)
    except StopIteration as done:
        return done.value


def test_read_response_lengths_chunks_and_close():
    assert _feed(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}") == (
        200, "application/json", b"{}", True)
    chunked = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\nT: 1\r\n\r\n"
    assert _feed(chunked) == (201, "", b"abcde", True)
    assert _feed(b"HTTP/1.0 500 X\r\nConnection: close\r\n\r\nrest of it") == (500, "", b"rest of it", False)
    assert _feed(b"HTTP/1.1 204 No\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")[3] is False
    with pytest.raises(ServerClosed):
        _feed(b"")
    with pytest.raises(ServerClosed):
        _feed(b"HTTP/1.1 200 OK\r\nContent-Le")
    for garbage in (b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 abc\r\n\r\n", b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n"):
        with pytest.raises(BadResponse):
            _feed(garbage)


class Scripted:
    """A loopback server that plays one behaviour per connection: 'answer' (read a request, answer it,
    keep the connection), 'answer-close' (answer once, then close), 'early' (answer 413 after the head,
    without reading the body, then close), 'garbage'."""

    def __init__(self, plays: list[str]):
        self.plays, self.requests = list(plays), []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.plays:
            conn, _ = self.sock.accept()
            play = self.plays.pop(0)
            with conn, conn.makefile("rb") as f:
                while True:
                    head, length = read_http_head(f)
                    if not head:
                        break
                    self.requests.append(head[0].strip())
                    if play == "early":
                        conn.sendall(b"HTTP/1.1 413 Too Large\r\nContent-Type: application/json\r\nConnection: close"
                                     b"\r\nContent-Length: 49\r\n\r\n"
                                     b'{"error": "body_too_large", "message": "too big"}')
                        conn.shutdown(socket.SHUT_WR)
                        break
                    body = f.read(length)
                    if play == "garbage":
                        conn.sendall(b"not http at all\r\n\r\n")
                        break
                    answer = json.dumps({"n": len(body)}).encode()
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                                 % (len(answer), answer))
                    if play == "answer-close":
                        break

    def close(self) -> None:
        self.sock.close()


def test_blocking_client_reconnects_once_after_an_idle_close():
    srv = Scripted(["answer-close", "answer"])
    try:
        with Client(srv.url) as c:
            assert c.healthz() == {"n": 0}
            assert c.healthz() == {"n": 0}  # the first connection is gone: a fresh one, once
            assert c.healthz() == {"n": 0}  # and that one is kept
        assert len(srv.requests) == 3
    finally:
        srv.close()


def test_blocking_client_reads_an_early_answer_and_names_garbage():
    srv = Scripted(["early", "garbage"])
    try:
        with Client(srv.url) as c:
            with pytest.raises(ServerError) as info:
                c.prove("k", b"wtns" + b"\0" * (8 << 20))  # far more than the socket buffers take
            assert (info.value.status, info.value.code) == (413, "body_too_large")
            with pytest.raises(ServerError) as info:
                c.healthz()
            assert info.value.code == "bad_response" and "not HTTP/1.1" in str(info.value)
    finally:
        srv.close()


def test_unreachable_server_is_one_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused
        with pytest.raises(ServerError) as info:
            Client(f"http://127.0.0.1:{port}").healthz()
        assert info.value.status == 0 and "cannot reach" in str(info.value)

        async def call():
            async with AsyncClient(f"http://127.0.0.1:{port}") as c:
                await c.healthz()

        with pytest.raises(ServerError) as info:
            asyncio.run(call())
        assert info.value.status == 0 and "cannot reach" in str(info.value)


def test_async_client_reconnects_once_after_an_idle_close():
    srv = Scripted(["answer-close", "answer"])

    async def calls():
        async with AsyncClient(srv.url) as c:
            return [await c.healthz() for _ in range(3)]

    try:
        assert asyncio.run(calls()) == [{"n": 0}] * 3
    finally:
        srv.close()


@pytest.mark.parametrize("witness", [123, None, [1, 2, 3]])
def test_a_witness_of_another_type_says_what_the_client_takes(witness):
    """It was os.fspath's "expected str, bytes or os.PathLike object, not list" (bytes are taken, as a .wtns)."""
    from engine.client import Client  # noqa: PLC0415

    with pytest.raises(TypeError, match=f"witness: a .wtns path, a .wtns file's bytes or a dict of circuit "
                                        f"inputs, not a {type(witness).__name__}"):
        Client("http://127.0.0.1:9").prove("k", witness)  # refused before any connection


def test_a_witness_path_the_client_cannot_read_is_one_input_error(tmp_path):
    """A path with a NUL character was Python's bare ValueError ("embedded null byte"); a folder "cannot read"."""
    from engine.client import Client  # noqa: PLC0415
    from engine.errors import InputFileError  # noqa: PLC0415

    for path, words in ((str(tmp_path / "a\0b.wtns"), "is not a path: it holds a NUL character"),
                        (str(tmp_path / "none.wtns"), "no such file"), (str(tmp_path), "is a directory")):
        with pytest.raises(InputFileError) as info:
            Client("http://127.0.0.1:9").prove("k", path)  # refused before any connection
        assert str(info.value).startswith(f"{path}: {words}")
