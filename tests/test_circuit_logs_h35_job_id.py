"""`prove --server` (a synchronous proof) names its job when the server dies during it.

The client never learnt the id of a job it waited for (the id came in the answer, which a dead server never
sent): "the job's fate is unknown ... see the server's log" named nothing to look for.  Now a client that asks
(`Prefer: job-id`) gets an interim `102 Processing` answer with a `Job-Id` header once its job has run a while
(JOB_ID_AFTER_S: a quick proof's answer comes alone, as before), and an error after it names that job.  The client asks where GROTH16_CLIENT_JOB_ID=1: a proxy that takes any 1xx
for the answer (nginx before 1.29) would fail every proof past 0.1 s, so it is not the default."""
from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, REPO

from engine.client import AsyncClient, Client, ServerError
from engine.errors import EngineError
from test_client_server_death_fake import FakeServer
from test_service import ServerProcess, raw_request

SLOW = FIXTURES / "interop" / "bn128" / "power_table"  # about 2.5 s a proof on the CPU backend


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("GROTH16_CLIENT_JOB_ID", "1")
    server = FakeServer("/v1/keys/k1/prove", keep_listening=True, interim_id="7")  # sends 102 Job-Id: 7, dies
    yield server
    server.close()


def test_a_server_that_dies_after_naming_the_job_is_said_to_have_gone_away_with_the_job(fake):
    with Client(fake.url, spin_ms=0) as c:
        c.load_key("/k.zkey")
        with pytest.raises(ServerError) as caught:
            c.prove("k1", b"wtns")
    msg = caught.value.message
    assert caught.value.code == "server_gone", msg
    assert msg.startswith("job 7: the prover server at ") and "went away while working on" in msg, msg
    assert "prefer: job-id" in fake.heads[-1].lower() and "prefer" not in fake.heads[0].lower()


def test_the_async_client_names_the_job_too(fake):
    async def main():
        async with AsyncClient(fake.url) as c:
            await c.load_key("/k.zkey")
            await c.prove("k1", b"wtns")

    with pytest.raises(ServerError) as caught:
        asyncio.run(main())
    assert caught.value.code == "server_gone" and caught.value.message.startswith("job 7: "), caught.value.message


@pytest.fixture
def server(tmp_path):
    srv = ServerProcess(tmp_path, token=False)
    yield srv
    srv.kill()


def _job_started(client: Client, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while client.stats()["running"] == 0:
        assert time.monotonic() < end, "the job never started"
        time.sleep(0.05)


def test_the_server_sends_the_job_id_first_only_to_a_client_that_asks(server):
    with server.client() as c:
        key = c.load_key(f"{SLOW}.zkey")["id"]
    body = (SLOW.parent / "power_table.wtns").read_bytes()
    head = f"POST /v1/keys/{key}/prove HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}"
    asked = raw_request(server.port, head + "\r\nPrefer: job-id", body)
    interim, final = asked.split(b"\r\n\r\n", 1)
    named = re.fullmatch(rb"HTTP/1.1 102 Processing\r\nJob-Id: (\S+)", interim)
    assert named, asked[:200]
    assert final.startswith(b"HTTP/1.1 200 "), final[:200]
    assert json.loads(final.split(b"\r\n\r\n", 1)[1])["id"] == named.group(1).decode()
    plain = raw_request(server.port, head, body)  # curl, another HTTP library: the answer alone, as before
    assert plain.startswith(b"HTTP/1.1 200 "), plain[:200]
    server.stop()


def test_prove_server_names_the_job_when_the_server_is_killed_during_it(server, tmp_path):
    command = subprocess.Popen([sys.executable, "-m", "engine", "prove", "--server", server.url, f"{SLOW}.zkey",
                                f"{SLOW}.wtns", tmp_path / "p.json", tmp_path / "pub.json"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "GROTH16_CLIENT_JOB_ID": "1"})
    try:
        with server.client() as c:
            _job_started(c)
        time.sleep(0.3)  # past JOB_ID_AFTER_S (the proof takes about a second): the id has been sent
        server.kill()  # SIGKILL: no answer, ever
        _, err = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    assert command.returncode == 2, err
    assert re.match(r"error: job 1-\w+: the prover server at ", err) and "went away" in err, err
    assert len(err.splitlines()) == 1, err
    assert not (tmp_path / "p.json").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_restarted_server_never_gives_an_old_jobs_id_to_another_job(tmp_path):
    """A job's id is what a client polls after losing its server (lost_job_message says so): a restarted server
    counted from 1 again, and `wait` of the lost job returned another witness's proof as its own."""
    port = _free_port()
    ids = []
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        srv = ServerProcess(tmp_path / run, "--port", str(port), token=False)
        try:
            with srv.client() as c:
                key = c.load_key(f"{SLOW}.zkey")["id"]
                ids.append(c.submit(key, f"{SLOW}.wtns")["id"])
                if run == "b":
                    with pytest.raises(ServerError) as caught:
                        c.wait(ids[0])  # the first server's job, asked of the second: it gave this one's proof
                    assert caught.value.code == "not_found", caught.value.message
        finally:
            srv.kill()
    assert ids[0] != ids[1], ids


@pytest.mark.parametrize("setting", [None, "0"])
def test_the_job_id_first_is_asked_for_only_where_the_setting_says_so(fake, monkeypatch, setting):
    """nginx before 1.29 takes any 1xx but 103 for the answer itself: unset, or GROTH16_CLIENT_JOB_ID=0, the
    client asks for none (and a server's death names no job)."""
    if setting is None:
        monkeypatch.delenv("GROTH16_CLIENT_JOB_ID")
    else:
        monkeypatch.setenv("GROTH16_CLIENT_JOB_ID", setting)
    with Client(fake.url, spin_ms=0) as c:
        c.load_key("/k.zkey")
        with pytest.raises(ServerError) as caught:
            c.prove("k1", b"wtns")
    assert caught.value.code == "server_gone" and not caught.value.message.startswith("job "), caught.value.message
    assert "prefer" not in fake.heads[-1].lower()
    monkeypatch.setenv("GROTH16_CLIENT_JOB_ID", "yes")
    with pytest.raises(EngineError) as caught:  # one line from the CLI
        Client(fake.url)
    assert str(caught.value).startswith("GROTH16_CLIENT_JOB_ID='yes': expected one of 0, 1"), caught.value


def test_a_proof_the_server_did_not_verify_is_said_so(tmp_path):
    """A local `prove` checks every proof before it is written, and --json says "verified"; through a server
    started with --no-verify the proof was written unchecked without a word."""
    srv = ServerProcess(tmp_path, "--no-verify", token=False)
    try:
        tiny = FIXTURES / "tiny" / "bn128" / "tiny"
        args = [sys.executable, "-m", "engine", "prove", "--server", srv.url, f"{tiny}.zkey", f"{tiny}.wtns",
                str(tmp_path / "p.json"), str(tmp_path / "pub.json")]
        done = subprocess.run([*args, "--json"], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["verified"] is False, done.stdout
        done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "did not verify this proof" in done.stderr, done.stderr
        quiet = subprocess.run([*args, "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
        with srv.client() as c:
            assert c.prove(c.load_key(f"{tiny}.zkey")["id"], f"{tiny}.wtns").verified is False
        srv.stop()
    finally:
        srv.kill()
