"""The service at its edges: request bodies the JSON reader cannot hold, uploads racing the queue's limit,
names racing each other, jobs a shutdown cancels.  A real server on loopback (CPU backend), as in
tests/test_service.py."""
from __future__ import annotations

import asyncio
import json
import signal
import socket
import threading
import time

import pytest

from test_service import SLOW, SUDOKU, TINY, TOKEN, ServerProcess, raw_request, wait_at_rest

from engine.client import AsyncClient, ServerError

TINY_BLS = TINY.parent.parent / "bls12381" / "tiny"


@pytest.fixture
def server(tmp_path):
    srv = ServerProcess(tmp_path, "--max-queued-per-key", "2", "--running-jobs", "1")
    yield srv
    srv.kill()


def _post(port: int, path: str, body: bytes, ctype: str = "application/json") -> tuple[int, dict]:
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close")
    answer = raw_request(port, head, body)
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.split(b"\r\n\r\n", 1)[1])


def test_a_json_body_with_a_number_too_long_for_python_is_400(server):
    """A number of more than 4300 digits in a JSON body (Python's int conversion limit) answered
    500 internal_error, with a traceback in the server's log."""
    huge = b"1" * 5000
    with server.client() as c:
        c.load_key(f"{SUDOKU}.zkey", wasm=f"{SUDOKU}.wasm")
    for path, body in (("/v1/keys", b'{"path": ' + huge + b"}"),
                       ("/v1/keys/sudoku/prove", b'{"puzzle": [' + huge + b"]}"),
                       ("/v1/verify", b'{"key": "sudoku", "proof": {}, "public": [' + huge + b"]}")):
        status, answer = _post(server.port, path, body)
        assert (status, answer["error"]) == (400, "bad_request"), (path, answer)
        assert "4300 digits" in answer["message"] and "\n" not in answer["message"], answer
    with server.client() as c:
        assert c.prove("sudoku", f"{SUDOKU}.wtns").public  # and it serves on
        wait_at_rest(c)
    server.stop()
    assert "Traceback" not in server.log.read_text()


def _stalled_upload(port: int, key: str, body: bytes) -> socket.socket:
    """A .wtns upload whose client sent its head and a few bytes, and waits."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(f"POST /v1/keys/{key}/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:100])
    return s


def _status(s: socket.socket) -> int:
    answer = b""
    while b"\r\n" not in answer:
        data = s.recv(4096)
        assert data, answer
        answer += data
    return int(answer.split(b" ", 2)[1])


def test_uploads_in_progress_count_toward_the_queue_limit(server):
    """Every upload that started while the queue had room was read whole, and only then refused (429):
    20 clients uploading at once against a limit of 2 held 20 upload buffers (64 MiB each at the
    default memory_upload_max), and 18 of them sent their witness for nothing."""
    body = (SLOW.parent / "power_table.wtns").read_bytes()
    with server.client() as c:
        key = c.load_key(f"{SLOW}.zkey")["id"]
        stalled = [_stalled_upload(server.port, key, body) for _ in range(2)]
        time.sleep(0.3)  # both are reading their bodies
        with pytest.raises(ServerError) as info:  # a third finds no room, before its upload
            c.submit(key, f"{SLOW}.wtns")
        assert (info.value.status, info.value.code) == (429, "queue_full"), info.value
        assert "uploading" in info.value.message
        stats = c.stats()
        assert stats["uploads_in_progress"] == 2 and stats["uploads_in_memory_bytes"] > 0, stats
        stalled[0].close()  # a client that leaves mid-upload gives its place back
        end = time.monotonic() + 10
        while c.stats()["uploads_in_progress"] != 1:
            assert time.monotonic() < end
            time.sleep(0.02)
        job = c.submit(key, f"{SLOW}.wtns")  # runs (one running job, no queue)
        stalled[1].sendall(body[100:])
        assert _status(stalled[1]) == 202  # its place was kept: it queues behind the running one
        stalled[1].close()
        c.wait(job["id"])
        wait_at_rest(c)
        assert c.stats()["uploads_in_progress"] == 0
    server.stop()


def test_two_loads_asking_for_one_name_at_once_one_gets_it_the_other_409(server):
    """Two loads of different files with the same "name", at once, both answered 201: one as the name
    asked for, the other as "x-2", a name its client never asked for."""
    async def loads():
        async with AsyncClient(server.url, token=TOKEN) as c:
            return await asyncio.gather(c.load_key(f"{SUDOKU}.zkey", name="x"), c.load_key(f"{TINY}.zkey", name="x"),
                                        return_exceptions=True)

    answers = asyncio.run(loads())
    loaded = [a for a in answers if isinstance(a, dict)]
    refused = [a for a in answers if isinstance(a, ServerError)]
    assert [k["id"] for k in loaded] == ["x"] and len(refused) == 1, answers
    assert (refused[0].status, refused[0].code) == (409, "conflict") and "'x'" in refused[0].message
    with server.client() as c:
        assert [k["id"] for k in c.keys()] == ["x"]
        # a name asked for while it loads is not handed to a load that asked for none (the file's stem)
        async def named_and_stem():
            async with AsyncClient(server.url, token=TOKEN) as ac:
                return await asyncio.gather(ac.load_key(f"{SLOW}.zkey", name="tiny"), ac.load_key(f"{TINY_BLS}.zkey"))

        named, stem = asyncio.run(named_and_stem())
        assert named["id"] == "tiny" and stem["id"] == "tiny-2", (named, stem)
    server.stop()


def test_jobs_a_shutdown_cancels_are_503_and_say_where_they_were(tmp_path):
    """A drain timeout's cancelled jobs answered 409 cancelled (a client's mistake, not to be retried) and said
    "before it ran" of the job that was running."""
    srv = ServerProcess(tmp_path, "--running-jobs", "1", "--drain-timeout", "0.1")
    try:
        with srv.client() as c:
            key = c.load_key(f"{SLOW}.zkey")["id"]
            answers: dict[int, ServerError] = {}

            def prove(i: int) -> None:
                try:
                    with srv.client() as cc:
                        cc.prove(key, f"{SLOW}.wtns")
                except ServerError as exc:
                    answers[i] = exc

            threads = [threading.Thread(target=prove, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            end = time.monotonic() + 10
            while c.stats()["jobs_active"] < 2:
                assert time.monotonic() < end
                time.sleep(0.02)
            srv.send(signal.SIGTERM)
            for t in threads:
                t.join(30)
        assert sorted(answers) == [0, 1], answers
        messages = sorted(e.message for e in answers.values())
        assert all((e.status, e.code) == (503, "shutting_down") for e in answers.values()), messages
        assert any("while it ran" in m for m in messages) and any("before it ran" in m for m in messages), messages
        srv.stop()
    finally:
        srv.kill()


def test_verify_refuses_unknown_fields_and_a_key_that_is_not_a_name(server):
    """POST /v1/verify took any other field without a word (a misspelt "vkye" was ignored), where POST /v1/keys
    refuses one, and a key id that is not a string was looked up as its Python text ("no key \\"['a']\\"")."""
    from engine.client import _json_request  # noqa: PLC0415

    with server.client() as c:
        key = c.load_key(f"{SUDOKU}.zkey")["id"]
        result = c.prove(key, f"{SUDOKU}.wtns")
        for body, words in (({"proof": result.proof, "public": result.public, "key": key, "vkye": {}},
                             "unknown field(s): vkye"),
                            ({"proof": result.proof, "public": result.public, "key": ["a"]},
                             "key: expected a loaded key's id (a string), got list")):
            with pytest.raises(ServerError) as info:
                c._call(_json_request("POST", "/v1/verify", body))
            assert (info.value.status, info.value.code) == (400, "bad_request"), info.value
            assert words in info.value.message, info.value
        assert c.verify(result.proof, result.public, key=key) is True
    server.stop()


def test_the_gpus_flags_on_a_server_that_proves_on_the_cpu(tmp_path):
    """`serve --backend cpu --devices 0` (or --vram-budget, --key-cache-dir) served on the CPU and dropped the
    flag without a word; now it is refused, and with auto on a machine without a CUDA device (hidden here, so
    that a GPU machine runs it too) the log says the flag has no effect."""
    import os
    import subprocess
    import sys

    from conftest import REPO

    r = subprocess.run([sys.executable, "-m", "engine", "serve", "--backend", "cpu", "--port", "0", "--vram-budget",
                        "8GiB"], cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: --vram-budget acts only where a GPU proves; on the cpu backend this server would ignore it"], r.stderr
    srv = ServerProcess(tmp_path, "--backend", "auto", "--devices", "0",
                        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    try:
        assert "WARNING engine: no CUDA device here, so the CPU proves and --devices has no effect" in \
            srv.log.read_text()
    finally:
        srv.stop()
