"""A prover server that dies while it works on a request (SIGKILLed, crashed, OOM-killed), seen by the client.

The client said "cannot reach the prover server ... Connection refused": a request on a kept connection that
closed before its answer was sent again on a fresh one, whose refusal hid that the server had been reached
and had died during the job.  Worse, a server that was back (or still listening) got the proof request twice:
two jobs.  Now a proof request is never sent twice (a kept connection the server had closed while idle is
found before the request is sent), and the error says the server went away while working on it, that the
job's fate is unknown, and (wait, with its job id) how to find out.  A fake server stands for the real one: it
answers a key load, then reads the next request whole and closes the connection (and its listener)."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest

from engine.client import AsyncClient, Client, ServerError


class FakeServer:
    """Answers POST /v1/keys (keep-alive) and, once `die_on` is a request's path prefix, closes instead: first
    sending `102 Processing` with the Job-Id `interim_id` where that is given and the request asked for it
    (`Prefer: job-id`)."""

    def __init__(self, die_on: str, keep_listening: bool = False, idle_close_after: int | None = None,
                 interim_id: str | None = None):
        self.die_on, self.keep_listening = die_on, keep_listening
        self.idle_close_after = idle_close_after  # close a connection at once after this many answers on it
        self.interim_id = interim_id
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.requests: list[str] = []
        self.heads: list[str] = []  # each request's line and headers, as sent
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn) -> None:
        f = conn.makefile("rb")
        answers = 0
        with conn:
            while True:
                line = f.readline()
                if not line:
                    return
                method, path, _ = line.decode().split(" ", 2)
                length, head = 0, [line.decode()]
                while (header := f.readline()) not in (b"\r\n", b""):
                    head.append(header.decode())
                    name, _, value = header.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                f.read(length)
                path = path.partition("?")[0]
                self.requests.append(f"{method} {path}")
                self.heads.append("".join(head))
                if path.startswith(self.die_on):
                    if self.interim_id is not None and "prefer: job-id" in self.heads[-1].lower():
                        conn.sendall(f"HTTP/1.1 102 Processing\r\nJob-Id: {self.interim_id}\r\n\r\n".encode())
                    time.sleep(0.05)  # the job runs a while, then the server dies
                    if not self.keep_listening:
                        self.listener.close()
                    return
                body = json.dumps({"id": "k1", "key": "k1", "path": "/k.zkey", "state": "queued"}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                answers += 1
                if self.idle_close_after is not None and answers >= self.idle_close_after:
                    return  # an idle keep-alive connection the server closes

    def close(self) -> None:
        try:
            self.listener.close()
        except OSError:
            pass


@pytest.fixture
def fake():
    servers = []

    def make(*args, **kwargs):
        servers.append(FakeServer(*args, **kwargs))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_a_server_that_dies_during_a_proof_is_said_to_have_gone_away(fake):
    server = fake("/v1/keys/k1/prove")
    with Client(server.url, spin_ms=0) as c:
        c.load_key("/k.zkey")
        with pytest.raises(ServerError) as caught:
            c.prove("k1", b"wtns")
    msg = caught.value.message
    assert caught.value.code == "server_gone", msg
    assert "cannot reach" not in msg and "went away while working on this request" in msg, msg
    assert "unknown" in msg, msg


def test_a_proof_request_is_not_sent_twice_to_a_server_still_listening(fake):
    server = fake("/v1/keys/k1/prove", keep_listening=True)
    with Client(server.url, spin_ms=0) as c:
        c.load_key("/k.zkey")
        with pytest.raises(ServerError):
            c.prove("k1", b"wtns")
    time.sleep(0.2)
    assert server.requests.count("POST /v1/keys/k1/prove") == 1, server.requests


def test_the_async_client_does_not_send_a_proof_twice_either(fake):
    server = fake("/v1/keys/k1/prove", keep_listening=True)

    async def main():
        async with AsyncClient(server.url) as c:
            await c.load_key("/k.zkey")
            await c.prove("k1", b"wtns")

    with pytest.raises(ServerError) as caught:
        asyncio.run(main())
    time.sleep(0.2)
    assert server.requests.count("POST /v1/keys/k1/prove") == 1, server.requests
    assert caught.value.code == "server_gone", caught.value.message


def test_waiting_for_a_job_on_a_server_that_died_names_the_job_and_how_to_find_out(fake):
    server = fake("/v1/jobs/j7")
    with Client(server.url, spin_ms=0) as c:
        c.load_key("/k.zkey")
        with pytest.raises(ServerError) as caught:
            c.wait("j7")
    msg = caught.value.message
    assert msg.startswith("job j7: "), msg
    assert "/v1/jobs/j7" in msg and "unknown" in msg, msg


def test_a_kept_connection_the_server_closed_while_idle_still_works(fake):
    """What the resend was for: found before the request is sent, and the request goes on a fresh one."""
    server = fake("/never", idle_close_after=1)
    with Client(server.url, spin_ms=0) as c:
        c.load_key("/k.zkey")
        time.sleep(0.1)  # the server has closed it by now
        assert c.submit("k1", b"wtns")["id"] == "k1"
    assert server.requests == ["POST /v1/keys", "POST /v1/keys/k1/jobs"]


def test_the_async_client_skips_a_kept_connection_the_server_closed(fake):
    server = fake("/never", idle_close_after=1)

    async def main():
        async with AsyncClient(server.url) as c:
            await c.load_key("/k.zkey")
            await asyncio.sleep(0.1)
            return await c.submit("k1", b"wtns")

    assert asyncio.run(main())["id"] == "k1"
    assert server.requests == ["POST /v1/keys", "POST /v1/keys/k1/jobs"]
