"""`python -m engine serve` and its clients, against a real server on a loopback port (CPU backend).

`ServerProcess` starts the server the way a user does (a subprocess from the
repo root), reads the port it picked from its first line, and on stop checks
the exit status and that no process it started is left.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, FIXTURES, REPO, run_snarkjs

from engine.client import AsyncClient, Client, ProofResult, ServerError
from engine.service.jobs import Job, JobQueue

TOKEN = "test-token-0123456789abcdef"
SUDOKU = EXAMPLES / "bn128" / "sudoku"
SUDOKU_BLS = EXAMPLES / "bls12381" / "sudoku"
TINY = FIXTURES / "tiny" / "bn128" / "tiny"
SLOW = FIXTURES / "interop" / "bn128" / "power_table"  # about 2.5 s a proof on the CPU backend


def _children(pid: int) -> set[int]:
    """Every live descendant of pid (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class ServerProcess:
    def __init__(self, tmp: Path, *flags: str, token: bool = True, env: dict | None = None, preexec_fn=None):
        self.log = tmp / "serve.log"
        args = [sys.executable, "-m", "engine", "serve", "--backend", "cpu", "--port", "0", *flags]
        if token:
            (tmp / "token").write_text(TOKEN + "\n")
            args += ["--token-file", str(tmp / "token")]
        self.token_file = str(tmp / "token") if token else None
        self.proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"),
                                     stdin=subprocess.DEVNULL, env=env, preexec_fn=preexec_fn)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = re.search(r"listening on (http://\S+)", self.log.read_text())
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None:
                pytest.fail(f"the server exited {self.proc.returncode}:\n{self.log.read_text()}")
            time.sleep(0.05)
        else:
            self.proc.kill()
            pytest.fail(f"the server did not start:\n{self.log.read_text()}")
        self.port = int(self.url.rsplit(":", 1)[1])

    def client(self, **kw) -> Client:
        return Client(self.url, token=TOKEN if self.token_file else None, **kw)

    def send(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def stop(self, signum: int = signal.SIGTERM, expect: int = 0, timeout: float = 60) -> None:
        """Signal, wait, check the exit status and that every process the server started is gone."""
        started = _children(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._kill(started)
            pytest.fail(f"the server did not stop within {timeout} s:\n{self.log.read_text()}")
        end = time.monotonic() + 10
        while any(_alive(p) for p in started) and time.monotonic() < end:
            time.sleep(0.05)
        left = [p for p in started if _alive(p)]
        self._kill(started)
        assert not left, f"processes left after the server stopped: {left}"
        assert rc == expect, self.log.read_text()

    def kill(self) -> None:
        """After a failed test: the server and everything it started, whatever state they are in."""
        if self.proc.poll() is None:
            self._kill(_children(self.proc.pid))

    def _kill(self, pids: set[int]) -> None:
        for pid in [self.proc.pid, *pids]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()


@pytest.fixture
def server(tmp_path):
    srv = ServerProcess(tmp_path, "--max-body", "64KiB", "--max-queued-per-key", "3")
    yield srv
    srv.kill()


def wait_at_rest(client: Client, timeout: float = 30) -> dict:
    """Poll /v1/stats until no job is active, no upload is held (spooled or in memory) and every engine
    budget is back (a cancelled device job returns its memory once the device is done with it)."""
    end = time.monotonic() + timeout
    while True:
        stats = client.stats()
        if (stats["at_rest"] and stats["jobs_active"] == 0 and stats["spooled_uploads"] == 0
                and stats["uploads_in_memory_bytes"] == 0):
            return stats
        assert time.monotonic() < end, f"not at rest after {timeout} s: {stats}"
        time.sleep(0.05)


def check_files_verify(vkey: Path, proof: Path, public: Path) -> None:
    from engine import read_proof, read_public, read_vkey, verify

    vk = read_vkey(vkey)
    assert verify(vk, read_public(public, vk.curve), read_proof(proof, vk.curve))


def cli(*args, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def raw_request(port: int, head: str, body: bytes = b"", close_after: float | None = None) -> bytes:
    """Send a hand-made request; read the answer, or (close_after) hang up that many seconds after sending."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head.encode() + b"\r\n\r\n" + body)
        if close_after is not None:
            time.sleep(close_after)
            return b""
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
            if b"\r\n\r\n" in b"".join(chunks):
                raw = b"".join(chunks)
                m = re.search(rb"Content-Length: (\d+)", raw, re.I)
                if m and len(raw.split(b"\r\n\r\n", 1)[1]) >= int(m.group(1)):
                    break
        return b"".join(chunks)


# ------------------------------------------------------------------ the CLI client, checked by snarkjs

@pytest.mark.snarkjs
@pytest.mark.slow
def test_cli_client_proofs_pass_snarkjs_verify(tmp_path):
    srv = ServerProcess(tmp_path)
    try:
        cases = [(SUDOKU, "sudoku"), (SUDOKU_BLS, "sudoku"), (TINY, "tiny"),
                 (FIXTURES / "tiny" / "bls12381" / "tiny", "tiny"), (SLOW, "power_table")]
        for base, _ in cases:
            proof, public = tmp_path / f"{base.parent.name}_{base.name}.proof.json", tmp_path / "public.json"
            r = cli("prove", "--server", srv.url, "--token-file", srv.token_file, f"{base}.zkey", f"{base}.wtns",
                    proof, public)
            assert r.returncode == 0, r.stderr
            vkey = base.parent / "verification_key.json"
            out = run_snarkjs("groth16", "verify", vkey, public, proof)
            assert out.returncode == 0 and "OK" in out.stdout, out.stdout + out.stderr
        # --wasm/--input: the server computes the witness with the key's circuit.wasm
        proof, public = tmp_path / "wasm.proof.json", tmp_path / "wasm.public.json"
        r = cli("prove", "--server", srv.url, "--token-file", srv.token_file, "--wasm", f"{SUDOKU}.wasm",
                "--input", SUDOKU.parent / "input.json", f"{SUDOKU}.zkey", proof, public, "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.splitlines()[-1])["curve"] == "bn128"
        out = run_snarkjs("groth16", "verify", SUDOKU.parent / "verification_key.json", public, proof)
        assert out.returncode == 0 and "OK" in out.stdout, out.stdout + out.stderr
        assert public.read_text() == (SUDOKU.parent / "public.json").read_text()  # same signals, same text
        # pipes: a piped witness is uploaded; a piped key, which the server would open by its path, is one line
        # naming it (it was "/dev/fd/63: no such file on the server (HTTP 422 bad_input)")
        base = f'"{sys.executable}" -m engine prove --server {srv.url} --token-file "{srv.token_file}" '
        r = subprocess.run(["bash", "-c", base + f'"{SUDOKU}.zkey" <(cat "{SUDOKU}.wtns") "{proof}" "{public}"'],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        r = subprocess.run(["bash", "-c", base + f'<(cat "{SUDOKU}.zkey") "{SUDOKU}.wtns" "{proof}" "{public}"'],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stderr.strip().endswith(
            "is a pipe; with --server the server reads the key by its path: give the file"), r.stderr
        with srv.client() as c:
            assert sorted(k["id"] for k in c.keys()) == ["power_table", "sudoku", "sudoku-2", "sudoku-3", "tiny",
                                                        "tiny-2"]
            wait_at_rest(c)
        srv.stop()
    finally:
        srv.kill()


def test_client_writes_snarkjs_text():
    """The client writes proof.json/public.json with the same bytes as a local prove (Proof.write)."""
    from engine.algebra.curves import curve_by_name
    from engine.formats.json_text import proof_to_json, proof_to_obj, public_to_json
    from engine.groth16.proof import Proof

    curve = curve_by_name("bn128")
    proof = Proof(curve, (1, 2), ((3, 4), (5, 6)), None, public=[7, 8])
    for public in ([7, 8], []):
        result = ProofResult(proof_to_obj(proof), [str(v) for v in public], "1", "k")
        assert result.proof_json() == proof_to_json(proof)
        assert result.public_json() == public_to_json(public)


# ------------------------------------------------------------------ bad requests

def test_bad_requests_get_4xx_json_and_server_keeps_serving(server, tmp_path):
    port = server.port
    with server.client() as c:
        key = c.load_key(f"{SUDOKU}.zkey")["id"]

        def expect(status: int, code: str, fn, *args, **kw):
            with pytest.raises(ServerError) as info:
                fn(*args, **kw)
            assert (info.value.status, info.value.code) == (status, code), str(info.value)
            assert info.value.message
            return info.value.message

        # auth: none, wrong, malformed
        with Client(server.url) as anon:
            assert "Authorization" in expect(401, "unauthorized", anon.keys)
            assert anon.healthz() == {"status": "ok"}  # /healthz needs no token
        with Client(server.url, token="x" * 20) as wrong:
            expect(401, "unauthorized", wrong.prove, key, f"{SUDOKU}.wtns")
        answer = raw_request(port, f"GET /v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Basic abc")
        assert b" 401 " in answer.split(b"\r\n")[0]
        # malformed JSON, wrong shapes, bad paths
        head = (f"POST /v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Content-Type: application/json\r\nContent-Length: 5")
        answer = raw_request(port, head, b"{bad}")
        assert b" 400 " in answer.split(b"\r\n")[0] and b"not valid JSON" in answer
        assert "path" in expect(400, "bad_request", c._call, __import__("engine.client").client._json_request(
            "POST", "/v1/keys", {"wasm": "x"}))
        assert "relative" in expect(400, "bad_request", c.load_key, "examples/bn128/sudoku.zkey")
        assert "no such file" in expect(422, "bad_input", c.load_key, str(tmp_path / "none.zkey"))
        (tmp_path / "bad.zkey").write_bytes(b"zkey" + b"\0" * 40)
        assert "bad.zkey" in expect(422, "bad_input", c.load_key, str(tmp_path / "bad.zkey"))
        # unknown key, another circuit's witness, another curve's, not a witness at all
        assert "nokey" in expect(404, "not_found", c.prove, "nokey", f"{SUDOKU}.wtns")
        assert "another circuit" in expect(422, "mismatch", c.prove, key, f"{TINY}.wtns")
        assert "bls12381" in expect(422, "mismatch", c.prove, key, f"{SUDOKU_BLS}.wtns")
        assert ".wtns" in expect(422, "bad_input", c.prove, key, b"hello, world")
        expect(422, "mismatch", c.prove, key, {"puzzle": []})  # inputs for a key loaded without wasm
        # query parameters
        expect(400, "bad_request", c.prove, key, f"{SUDOKU}.wtns", priority="urgent")
        expect(400, "bad_request", c.prove, key, f"{SUDOKU}.wtns", deadline=-1)
        assert "finite" in expect(400, "bad_request", c._call, __import__("engine.client").client._Request(
            "POST", f"/v1/keys/{key}/prove?deadline=inf", b"wtns"))
        assert c.prove(key, f"{SUDOKU}.wtns", deadline=float("inf")).proof  # the client's inf: no deadline sent
        assert "finite" in expect(400, "bad_request", c.job, "1", wait=float("inf"))
        expect(400, "bad_request", c.job, "1", wait="soon")
        # an oversized body (the limit is 64 KiB here): refused from its Content-Length, before the upload
        assert "limit" in expect(413, "body_too_large", c.prove, key, b"wtns" + b"\0" * (70 << 10))
        # not HTTP at all: the parser's 400 (plain text, naming the problem), and the connection closes
        answer = raw_request(port, "GARBAGE")
        assert b" 400 " in answer.split(b"\r\n")[0] and b"Invalid method" in answer
        # unknown routes and methods, unknown jobs
        expect(404, "not_found", c._call, __import__("engine.client").client._Request("GET", "/v2/nothing"))
        expect(405, "method_not_allowed", c._call, __import__("engine.client").client._Request("PUT", "/v1/keys"))
        expect(404, "not_found", c.job, "999999")
        # verify: a malformed proof is a 4xx, a valid one is valid, a wrong one invalid
        result = c.prove(key, f"{SUDOKU}.wtns", name="sudoku.wtns")
        assert c.verify(result.proof, result.public, key=key) is True
        vkey = json.loads((SUDOKU.parent / "verification_key.json").read_text())
        assert c.verify(result.proof, result.public, vkey=vkey) is True
        bad_public = [str(int(result.public[0]) + 1)] + result.public[1:]
        assert c.verify(result.proof, bad_public, key=key) is False
        expect(422, "mismatch", c.verify, result.proof, result.public[1:], key=key)
        expect(422, "bad_input", c.verify, {"pi_a": 1}, result.public, key=key)
        off_curve = json.loads(json.dumps(vkey))
        off_curve["vk_alpha_1"][1] = str(int(off_curve["vk_alpha_1"][1]) + 1)  # was answered False
        assert "request.vkey: vk_alpha_1 is not a point" in expect(422, "bad_input", c.verify, result.proof,
                                                                   result.public, vkey=off_curve)
        # and it still serves
        check = c.prove(key, f"{SUDOKU}.wtns")
        assert check.proof["curve"] == "bn128" and len(check.public) == 16
        wait_at_rest(c)
    server.stop()


def test_unknown_or_repeated_query_parameters_and_odd_key_paths_are_4xx(server, tmp_path):
    """A misspelt parameter (`priorty=high`) ran the job at normal priority without a word, where an unknown field of
    a JSON body is refused; `wait=-0.5` was taken; a key path with a NUL answered 500 with a traceback in the log, a
    device "no such file", an empty path "got str"."""
    from engine.client import _json_request, _Request

    wtns = Path(f"{SUDOKU}.wtns").read_bytes()
    with server.client() as c:
        key = c.load_key(f"{SUDOKU}.zkey")["id"]

        def refused(status: int, code: str, request: _Request) -> str:
            with pytest.raises(ServerError) as info:
                c._call(request)
            assert (info.value.status, info.value.code) == (status, code), str(info.value)
            return info.value.message

        for route in ("prove", "jobs"):
            message = refused(400, "bad_request", _Request("POST", f"/v1/keys/{key}/{route}?priorty=high", wtns))
            assert "priorty" in message and "priority, deadline, name" in message, message
            message = refused(400, "bad_request", _Request("POST", f"/v1/keys/{key}/{route}?priority=high&priority=low",
                                                           wtns))
            assert "priority" in message and "more than once" in message, message
        assert "wait" in refused(400, "bad_request", _Request("POST", f"/v1/keys/{key}/jobs?wait=5", wtns))
        assert "takes none" in refused(400, "bad_request", _Request("GET", "/v1/stats?verbose=1"))
        assert "takes none" in refused(400, "bad_request", _json_request("POST", "/v1/keys?force=1",
                                                                         {"path": f"{SUDOKU}.zkey"}))
        job = c.submit(key, f"{SUDOKU}.wtns")
        assert "(it takes wait)" in refused(400, "bad_request", _Request("GET", f"/v1/jobs/{job['id']}?wiat=5"))
        assert "at least 0" in refused(400, "bad_request", _Request("GET", f"/v1/jobs/{job['id']}?wait=-0.5"))
        assert c.job(job["id"], wait=30)["state"] == "done"
        assert c.healthz() == {"status": "ok"}
        assert c._call(_Request("GET", "/healthz?probe=1")) == {"status": "ok"}  # a monitor's own parameters pass
        # odd key paths
        assert "NUL" in refused(400, "bad_request", _json_request("POST", "/v1/keys", {"path": "/tmp/a\0b.zkey"}))
        assert "empty" in refused(400, "bad_request", _json_request("POST", "/v1/keys", {"path": ""}))
        assert "not a regular file" in refused(422, "bad_input", _json_request("POST", "/v1/keys",
                                                                              {"path": "/dev/null"}))
        assert "not a regular file" in refused(422, "bad_input", _json_request(
            "POST", "/v1/keys", {"path": f"{SUDOKU}.zkey", "wasm": "/dev/null", "name": "w"}))
        assert c.prove(key, f"{SUDOKU}.wtns").proof["curve"] == "bn128"  # and it still serves
        wait_at_rest(c)
    assert "Traceback" not in server.log.read_text()
    server.stop()


def test_serve_start_errors_are_one_line():
    r = cli("serve", "--backend", "cpu", "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2 and "--token-file" in r.stderr and "Traceback" not in r.stderr
    with socket.socket() as taken:  # a port in use: refused before the engine starts
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = cli("serve", "--backend", "cpu", "--port", port)
    assert r.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------ jobs, priorities, deadlines, limits

def test_queue_high_overtakes_queued_never_the_running():
    started: list[str] = []

    class Key:
        queued = 0

    key = Key()
    q = JobQueue(slots=1, per_key_limit=10, start=lambda job: started.append(job.id))
    jobs = {name: Job(id=name, key=key, priority=prio, witness=None, label=name)
            for name, prio in [("n1", "normal"), ("l1", "low"), ("n2", "normal"), ("h1", "high"), ("h2", "high")]}
    for job in jobs.values():
        q.admit(job)
    assert started == ["n1"] and key.queued == 4  # n1 runs: the highs wait for it
    jobs["h2"].state = "cancelled"
    q.withdraw(jobs["h2"])
    for _ in range(3):
        q.release()
    assert started == ["n1", "h1", "n2", "l1"] and key.queued == 0 and q.depth == {"high": 0, "normal": 0, "low": 0}


@pytest.mark.slow
def test_priorities_deadlines_and_queue_limit_over_http(tmp_path):
    srv = ServerProcess(tmp_path, "--running-jobs", "1", "--max-queued-per-key", "3")
    try:
        with srv.client() as c:
            slow = c.load_key(f"{SLOW}.zkey")["id"]
            # deadlines as fractions of this machine's own proof time (0.7 s idle, seconds under load)
            t0 = time.monotonic()
            c.prove(slow, f"{SLOW}.wtns")
            proof_s = time.monotonic() - t0
            first = c.submit(slow, f"{SLOW}.wtns")  # runs; the next three queue behind it
            low = c.submit(slow, f"{SLOW}.wtns", priority="low")
            normal = c.submit(slow, f"{SLOW}.wtns")
            expiring = c.submit(slow, f"{SLOW}.wtns", priority="high", deadline=proof_s / 3)
            with pytest.raises(ServerError) as info:  # a fourth queued job of this key is one too many
                c.submit(slow, f"{SLOW}.wtns")
            assert info.value.status == 429 and info.value.code == "queue_full"
            view = c.job(expiring["id"], wait=5)
            assert view["state"] == "expired" and view["error"] == "deadline_exceeded"
            assert "in the queue" in view["reason"]
            high = c.submit(slow, f"{SLOW}.wtns", priority="high")  # after low and normal: overtakes both
            results = {j["id"]: c.wait(j["id"]) for j in (first, low, normal, high)}
            assert all(r.proof["curve"] == "bn128" for r in results.values())
            started = {j: c.job(j)["timings"]["started_at"] for j in (first["id"], low["id"], normal["id"],
                                                                       high["id"])}
            assert started[first["id"]] < started[high["id"]] < started[normal["id"]] < started[low["id"]]
            # a waiting request past its deadline while proving: 504, and the job gives everything back
            with pytest.raises(ServerError) as info:
                c.prove(slow, f"{SLOW}.wtns", deadline=proof_s / 2)
            assert info.value.status == 504 and "while proving" in info.value.message
            # DELETE cancels a queued job at once and a running one through the engine
            running = c.submit(slow, f"{SLOW}.wtns")
            queued = c.submit(slow, f"{SLOW}.wtns")
            assert c.cancel(queued["id"])["state"] == "cancelled"
            time.sleep(0.3)
            assert c.cancel(running["id"])["state"] == "cancelled"
            stats = wait_at_rest(c)
            assert stats["queue_depth"] == {"high": 0, "normal": 0, "low": 0}
            metrics = c.metrics()
            for outcome, n in (("done", 5), ("expired", 2), ("cancelled", 2)):
                assert f'engine_proofs_total{{key="power_table",outcome="{outcome}"}} {n}.0' in metrics
            assert 'engine_stage_seconds_count{stage="device_compute"}' in metrics
            assert 'engine_queue_depth{priority="high"} 0.0' in metrics and "engine_vram_bytes" in metrics
        srv.stop()
    finally:
        srv.kill()


def test_disconnects_mid_upload_and_mid_proof_free_everything(server):
    with server.client() as c:
        slow = c.load_key(f"{SLOW}.zkey")["id"]
        body = (SLOW.parent / "power_table.wtns").read_bytes()
        head = (f"POST /v1/keys/{slow}/prove HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"Content-Length: {len(body)}")
        raw_request(server.port, head, body[: len(body) // 2], close_after=0.2)  # mid-upload
        raw_request(server.port, head, body, close_after=0.5)  # mid-proof
        stats = wait_at_rest(c)
        assert stats["engine"]["jobs_in_flight"] == 0
        assert 'engine_proofs_total{key="power_table",outcome="cancelled"} 1.0' in c.metrics()
        assert c.prove(slow, f"{SLOW}.wtns").public  # and it serves on
    server.stop()


# ------------------------------------------------------------------ signals

def test_sigterm_drains_admitted_jobs_then_exits(tmp_path):
    srv = ServerProcess(tmp_path, "--running-jobs", "1")
    try:
        with srv.client() as c:
            slow = c.load_key(f"{SLOW}.zkey")["id"]
            jobs = [c.submit(slow, f"{SLOW}.wtns") for _ in range(2)]
            srv.send(signal.SIGTERM)
            end = time.monotonic() + 30
            while True:  # /healthz turns 503 once the signal is handled
                try:
                    c.healthz()
                except ServerError as exc:
                    assert exc.status == 503
                    break
                assert time.monotonic() < end, "SIGTERM was not handled"
                time.sleep(0.02)
            with pytest.raises(ServerError) as info:
                c.submit(slow, f"{SLOW}.wtns")
            assert info.value.status == 503 and info.value.code == "shutting_down"
            for job in jobs:  # polls are answered while draining; every admitted job finishes
                assert c.wait(job["id"]).proof["curve"] == "bn128"
        srv.stop(expect=0)
    finally:
        srv.kill()


def test_sigterm_during_the_final_exit_leaves_nothing_behind(tmp_path):
    """A supervisor's repeated SIGTERM while the server is already exiting must not cut the exit short."""
    srv = ServerProcess(tmp_path)
    try:
        with srv.client() as c:  # a proof starts the CPU pool, which stops at interpreter exit
            c.prove(c.load_key(f"{TINY}.zkey")["id"], f"{TINY}.wtns")
        started = _children(srv.proc.pid)
        srv.send(signal.SIGTERM)
        end = time.monotonic() + 30
        while "engine serve: stopped" not in srv.log.read_text():
            assert time.monotonic() < end and srv.proc.poll() is None, srv.log.read_text()
            time.sleep(0.002)
        srv.send(signal.SIGTERM)
        assert srv.proc.wait(30) == 0
        end = time.monotonic() + 10
        while any(_alive(p) for p in started) and time.monotonic() < end:
            time.sleep(0.05)
        assert not [p for p in started if _alive(p)]
    finally:
        srv.kill()
        for pid in started:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, UnboundLocalError):
                pass


def test_second_sigint_exits_at_once(tmp_path):
    srv = ServerProcess(tmp_path, "--running-jobs", "1")
    try:
        with srv.client() as c:
            slow = c.load_key(f"{SLOW}.zkey")["id"]
            jobs = [c.submit(slow, f"{SLOW}.wtns") for _ in range(3)]
        time.sleep(0.3)
        srv.send(signal.SIGINT)
        time.sleep(0.2)
        t = time.monotonic()
        srv.stop(signal.SIGINT, expect=130, timeout=20)
        assert time.monotonic() - t < 10  # not the three proofs (7 s) it had
        assert "second SIGINT" in srv.log.read_text() and len(jobs) == 3
    finally:
        srv.kill()


# ------------------------------------------------------------------ clients

def test_client_import_and_cli_prove_load_no_numpy_or_cuda(server, tmp_path):
    probe = ("import sys, cli\n"
             "rc = cli.main(sys.argv[1:])\n"
             "heavy = [m for m in ('numpy', 'cuda', 'cuda.bindings', 'engine.api', 'engine.formats', 'aiohttp',"
             " 'wasmtime', 'prometheus_client') if m in sys.modules]\n"
             "print('HEAVY', heavy)\nsys.exit(rc)\n")
    r = subprocess.run([sys.executable, "-c", probe, "prove", "--server", server.url, "--token-file",
                        server.token_file, f"{SUDOKU}.zkey", f"{SUDOKU}.wtns", tmp_path / "p.json",
                        tmp_path / "pub.json"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    heavy = r.stdout.split("HEAVY", 1)[1].strip()
    assert heavy == "[]", heavy
    check_files_verify(SUDOKU.parent / "verification_key.json", tmp_path / "p.json", tmp_path / "pub.json")
    r = subprocess.run([sys.executable, "-c", "import sys, engine.client; print(sorted(m for m in sys.modules "
                        "if m.startswith(('numpy', 'cuda', 'engine.'))))"], cwd=REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.stdout.strip() == ("['engine.client', 'engine.client_wait', 'engine.client_wire', "
                                "'engine.env_setting', 'engine.errors']"), r.stdout + r.stderr  # no CLI flags
    # the CLI's errors: a server that is not there, a witness file that is not there
    r = cli("prove", "--server", "http://127.0.0.1:9", f"{SUDOKU}.zkey", f"{SUDOKU}.wtns", tmp_path / "a",
            tmp_path / "b")
    assert r.returncode == 2 and "cannot reach" in r.stderr and "Traceback" not in r.stderr
    r = cli("prove", "--server", server.url, "--token-file", server.token_file, f"{SUDOKU}.zkey",
            tmp_path / "none.wtns", tmp_path / "a", tmp_path / "b")
    assert r.returncode == 2 and "none.wtns: no such file" in r.stderr
    r = cli("prove", "--server", server.url, f"{SUDOKU}.zkey", f"{SUDOKU}.wtns", tmp_path / "a", tmp_path / "b")
    assert r.returncode == 2 and "401" in r.stderr and not (tmp_path / "a").exists()
    r = cli("prove", "--server", server.url, "--r1cs", f"{SUDOKU}.r1cs", f"{SUDOKU}.zkey", f"{SUDOKU}.wtns",
            tmp_path / "a", tmp_path / "b")
    assert r.returncode == 2 and "--r1cs" in r.stderr
    server.stop()


def test_async_client_prove_submit_cancel(server):
    async def main():
        async with AsyncClient(server.url, token=TOKEN) as c:
            key = (await c.load_key(f"{SUDOKU}.zkey"))["id"]
            slow = (await c.load_key(f"{SLOW}.zkey"))["id"]
            results = await asyncio.gather(*[c.prove(key, f"{SUDOKU}.wtns") for _ in range(3)])
            assert all(len(r.public) == 16 for r in results)
            job = await c.submit(key, f"{SUDOKU}.wtns", priority="high")
            assert (await c.wait(job["id"])).proof["curve"] == "bn128"
            task = asyncio.ensure_future(c.prove(slow, f"{SLOW}.wtns"))
            await asyncio.sleep(0.5)
            task.cancel()  # closes its connection: the server cancels the job
            with pytest.raises(asyncio.CancelledError):
                await task
            with pytest.raises(ServerError) as info:
                await c.prove("nokey", f"{SUDOKU}.wtns")
            assert info.value.status == 404
            return await c.stats()

    asyncio.run(main())
    with server.client() as c:
        wait_at_rest(c)
        assert 'outcome="cancelled"} 1.0' in c.metrics()
    server.stop()


# ------------------------------------------------------------------ keys and configuration

def test_keys_load_once_unload_and_refuse_a_changed_file(server, tmp_path):
    import shutil

    zkey = tmp_path / "circuit.zkey"
    shutil.copy(f"{TINY}.zkey", zkey)
    with server.client() as c:
        first = c.load_key(str(zkey))
        again = c.load_key(str(zkey))  # idempotent: the resident key
        assert first["id"] == again["id"] == "circuit" and len(c.keys()) == 1
        assert first["curve"] == "bn128" and first["n_public"] >= 1 and first["devices"] == [0]
        named = c.load_key(f"{TINY}.zkey", name="tiny-named")
        with pytest.raises(ServerError) as info:
            c.load_key(f"{SUDOKU}.zkey", name="tiny-named")
        assert info.value.status == 409 and "taken" in info.value.message
        with pytest.raises(ServerError) as info:
            c.load_key(f"{TINY}.zkey", name="bad name!")
        assert info.value.status == 400
        assert c.prove("circuit", f"{TINY}.wtns").public
        # the file changes on disk: the old copy is not served silently
        zkey.write_bytes(zkey.read_bytes())
        os.utime(zkey, ns=(time.time_ns(), time.time_ns() + 10**9))
        with pytest.raises(ServerError) as info:
            c.load_key(str(zkey))
        assert info.value.status == 409 and info.value.code == "key_changed"
        assert c.unload_key("circuit")["unloaded"] is True
        assert c.load_key(str(zkey))["id"] == "circuit"  # loaded afresh
        c.unload_key("circuit")
        c.unload_key(named["id"])
        assert c.keys() == []
        with pytest.raises(ServerError) as info:
            c.prove("circuit", f"{TINY}.wtns")
        assert info.value.status == 404
        wait_at_rest(c)
    server.stop()


def test_serve_reads_the_service_table_and_names_bad_settings(tmp_path):
    good = tmp_path / "engine.toml"
    good.write_text('[engine]\nbackend = "cpu"\nsynthesis_workers = 1\n\n'
                    '[service]\nport = 0\nmax_body = "16KiB"\nmax_queued_per_key = 2\n')
    srv = ServerProcess(tmp_path, "--config", str(good))
    try:
        with srv.client() as c:
            key = c.load_key(f"{SUDOKU}.zkey")["id"]
            with pytest.raises(ServerError) as info:  # the file's max_body
                c.prove(key, b"wtns" + bytes(20 << 10))
            assert info.value.status == 413 and str(16 << 10) in info.value.message
            assert c.stats()["engine"]["synthesis_workers_alive"] == 1
        srv.stop()
    finally:
        srv.kill()
    bad = tmp_path / "bad.toml"
    bad.write_text('[service]\nmax_queued = 3\n')
    r = cli("serve", "--config", bad)
    assert r.returncode == 2 and "bad.toml" in r.stderr and "max_queued" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "short").write_text("abc\n")
    r = cli("serve", "--backend", "cpu", "--token-file", tmp_path / "short")
    assert r.returncode == 2 and "too easy to guess" in r.stderr
    r = cli("serve", "--backend", "cpu", "--port", "70000")
    assert r.returncode == 2 and "70000" in r.stderr
    # a token file that is not UTF-8 was a UnicodeDecodeError traceback, from the server and from the client
    (tmp_path / "binary").write_bytes(b"\xff\xfe" * 10)
    r = cli("serve", "--backend", "cpu", "--token-file", tmp_path / "binary")
    assert r.returncode == 2 and r.stderr.strip() == f"error: {tmp_path / 'binary'}: the token file is not UTF-8 text"
    r = cli("prove", "--server", "http://127.0.0.1:9", "--token-file", tmp_path / "binary", f"{SUDOKU}.zkey",
            f"{SUDOKU}.wtns", tmp_path / "a", tmp_path / "b")
    assert r.returncode == 2 and r.stderr.strip() == f"error: {tmp_path / 'binary'}: the token file is not UTF-8 text"
    # nan passed every range check, and SIGTERM's drain then failed with an ExceptionGroup traceback
    r = cli("serve", "--backend", "cpu", "--port", "0", "--drain-timeout", "nan")
    assert r.returncode == 2 and "--drain-timeout: nan is not a number" in r.stderr, r.stderr
    bad.write_text('[service]\njob_ttl_s = nan\n')
    r = cli("serve", "--config", bad)
    assert r.returncode == 2 and "service.job_ttl_s: nan is not a number" in r.stderr, r.stderr


def _one_mib_files() -> None:  # in the server: a regular file may not grow past 1 MiB (EFBIG beyond)
    import resource  # noqa: PLC0415

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))


def test_an_upload_with_no_room_to_wait_is_507_and_the_server_keeps_serving(tmp_path):
    """A spooled upload that the disk (or a quota, or a size limit) had no room for answered 500 internal_error
    with a traceback in the log."""
    env = {**os.environ, "GROTH16_PYCACHE": "off", "PYTHONDONTWRITEBYTECODE": "1"}
    srv = ServerProcess(tmp_path, "--memory-upload-max", "64KiB", env=env, preexec_fn=_one_mib_files)
    try:
        with srv.client() as c:
            key = c.load_key(f"{SUDOKU}.zkey")["id"]
            with pytest.raises(ServerError) as info:
                c.prove(key, b"wtns" + bytes(2 << 20))
            assert info.value.status == 507 and info.value.code == "insufficient_storage", info.value
            assert "no room to hold this upload" in info.value.message and "File too large" in info.value.message
            proof = c.prove(key, f"{SUDOKU}.wtns")  # a witness small enough to be held in memory
            assert proof.public == json.loads(Path(f"{SUDOKU.parent}/public.json").read_text())
            assert c.stats()["spooled_uploads"] == 0
        srv.stop()
    finally:
        srv.kill()
    assert "Traceback" not in srv.log.read_text()


def test_uploads_wait_on_disk_where_the_ram_spool_has_no_room(monkeypatch, tmp_path):
    """Docker gives a container 64 MiB of /dev/shm, and only uploads above memory_upload_max (64 MiB by
    default) are spooled: every one of them failed there."""
    from engine.service import core  # noqa: PLC0415

    ram = tmp_path / "ram"
    ram.mkdir()
    fake = type("S", (), {})()
    fake.spool, fake._spill, fake._uploads = str(ram), None, iter(range(10))
    fake.config = type("C", (), {"max_body": 1 << 30})()
    fake._disk_spool = lambda: core.Service._disk_spool(fake)
    monkeypatch.setattr(core, "free_bytes", lambda d: 64 << 20 if d == str(ram) else None)
    try:
        assert os.path.dirname(core.Service.spool_path(fake, 1 << 20)) == str(ram)
        spilled = core.Service.spool_path(fake, 100 << 20)
        assert os.path.dirname(spilled) == fake._spill and fake._spill != str(ram)
        assert os.path.dirname(core.Service.spool_path(fake, None)) == fake._spill  # unknown size: max_body
    finally:
        if fake._spill:
            os.rmdir(fake._spill)
