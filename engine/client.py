"""A client for `python -m engine serve`: `Client` (blocking) and `AsyncClient` (asyncio).

Standard library only (socket and json; HTTP/1.1 is engine/client_wire.py),
and nothing of the engine but its error types: a client process starts in a
few milliseconds, with no CUDA and no numpy.

    from engine.client import Client
    with Client("http://127.0.0.1:8080", token_file="token") as c:
        key = c.load_key("/abs/circuit.zkey")              # resident after the first call
        result = c.prove(key["id"], "witness.wtns", priority="high", deadline=5)
        result.write("proof.json", "public.json")          # snarkjs's files, byte for byte

Every error answer raises `ServerError` (an EngineError: the CLI prints it as
one line) with the HTTP status, the server's code and its message.  The
blocking client keeps one keep-alive connection (threads sharing it take turns); the async
one keeps a pool of connections, and cancelling a call closes its
connection, which cancels the server's job.  `python -m engine prove --server URL ...` is `prove_command`.
"""
from __future__ import annotations

import _thread  # built in (threading would cost the CLI's start more)
import json
import os
import socket
import sys
import time

TYPE_CHECKING = False  # typing's own flag without importing typing (~4 ms of the CLI client's start)
if TYPE_CHECKING:
    from typing import Any

# asyncio and ssl are imported where they are used: `prove --server` needs neither, and each
# costs more than the rest of the client's start.

from engine.client_wait import AnswerWait, spin_seconds
from engine.client_wire import (
    BadResponse,
    ServerClosed,
    TimedReads,
    dropped,
    gist,
    gone_message,
    lost_job_message,
    quote,
    read_async,
    read_sync,
    read_token,
    request_head,
    send_all,
    split_url,
    tls_failure,
    token_problem,
    url_problem,
    witness_body,
    with_log,
    with_query,
)
from engine.client_wire import token_file_tokens  # noqa: F401 - engine.client's name for it, as before
from engine.env_setting import switch
from engine.errors import EngineError

DEFAULT_URL = "http://127.0.0.1:8080"


class ServerError(EngineError):
    """The server answered with an error (status >= 400), or could not be reached (status 0)."""

    log, log_left_out = [], 0  # a failed job's circuit log() lines, as ProofResult's

    def __init__(self, status: int, code: str, message: str):
        self.status, self.code, self.message = status, code, message
        super().__init__(f"{message} (HTTP {status} {code})" if status else message)


class ClientSettingError(EngineError, ValueError):
    """A client argument that cannot work (a token a header cannot carry, a URL that is not text, a timeout of 0)."""


class ProofResult:
    """A finished proof as the server returned it (snarkjs's proof.json object and public signals)."""

    __slots__ = ("proof", "public", "job", "key", "timings", "log", "log_left_out", "verified")

    def __init__(self, proof: dict, public: list[str], job: str, key: str, timings: dict | None = None,
                 log: list[str] | None = None, log_left_out: int = 0):
        self.proof, self.public, self.job, self.key = proof, public, job, key
        self.timings = {} if timings is None else timings
        self.log, self.log_left_out = [] if log is None else log, log_left_out  # the circuit's log() lines
        self.verified = None  # whether the server checked the proof (its answer's "verified"; None: not said)

    def __repr__(self) -> str:
        return f"ProofResult(job={self.job!r}, key={self.key!r}, public={self.public!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProofResult) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def proof_json(self) -> str:
        return _snarkjs_text(self.proof)

    def public_json(self) -> str:
        return _snarkjs_text(self.public)

    def write(self, proof_path: str | os.PathLike, public_path: str | os.PathLike) -> None:
        """Both files or neither, with the text `snarkjs groth16 prove` writes."""
        from engine.file_writes import write_files  # noqa: PLC0415 - here: `import engine.client` stays small

        write_files([(proof_path, self.proof_json()), (public_path, self.public_json())])


def _snarkjs_text(obj: Any) -> str:
    # snarkjs: JSON.stringify(x, null, 1), and bfj lays an empty array out as "[\n]"
    return "[\n]" if obj == [] else json.dumps(obj, indent=1)


# ------------------------------------------------------------------ one request, transport-free

class _Request:
    """`fields`: what a success answer must hold (a JSON object with these), None: text (/metrics)."""

    __slots__ = ("method", "path", "body", "content_type", "fields", "job", "early")

    def __init__(self, method: str, path: str, body: bytes = b"", content_type: str | None = None,
                 fields: tuple[str, ...] | None = (), job: bool = False):
        self.method, self.path, self.body, self.content_type = method, path, body, content_type
        self.fields = fields
        self.job = job  # it makes a job: never sent twice (a server that got it once may have proved it)
        self.early: dict | None = None  # a waiting proof's: the headers of interim answers (its Job-Id)


def _prove_request(kind: str, key: str, witness: Any, priority: str, deadline: float | None,
                   name: str | None) -> _Request:
    body, ctype, default_name = witness_body(witness)
    if deadline == float("inf"):  # none (`--deadline inf`): not sent, since the server takes finite seconds only
        deadline = None
    path = with_query(f"/v1/keys/{quote(key)}/{kind}", priority=priority, deadline=deadline,
                  name=name or default_name)
    req = _Request("POST", path, body, ctype, _PROOF if kind == "prove" else _JOB, job=True)
    req.early = {} if kind == "prove" else None  # the server names a waiting job first, for an error if it dies
    return req


_JOB = ("id", "key", "state")
_PROOF = (*_JOB, "proof", "public")


def _json_request(method: str, path: str, obj: Any = None, fields: tuple[str, ...] = ()) -> _Request:
    return _Request(method, path, b"" if obj is None else json.dumps(obj).encode(),
                    None if obj is None else "application/json", fields)


def _answer(url: str, status: int, ctype: str, raw: bytes, fields: tuple[str, ...] | None = ()) -> Any:
    """The answer's JSON (text where `fields` is None); ServerError for an error answer, and for one that is not
    the prover's (a proxy's HTML page, JSON of another shape), in one line."""
    if fields is None and status < 400:
        return raw.decode(errors="replace")
    data: Any = None
    if "json" in ctype:
        try:
            data = json.loads(raw)
        except ValueError:  # not JSON, not UTF-8, a number of 4300 digits
            raise _not_ours(url, status, f"JSON that does not parse: {gist(raw)}") from None
    if status >= 400 and isinstance(data, dict) and isinstance(data.get("error"), str):
        raise with_log(ServerError(status, data["error"], " ".join(str(data.get("message", data["error"])).split())),
                        data)
    if status == 503 and data == {"status": "draining"}:  # /healthz's own 503 (docs/service.md)
        raise ServerError(503, "shutting_down", f"the prover server at {url} is draining: it is shutting down and "
                                                "takes no new jobs")
    if data is None:
        raise _not_ours(url, status, f"{ctype.split(';')[0] or 'no content type'}, not the prover's JSON: "
                                     f"{gist(raw)}")
    if status >= 400 or not isinstance(data, dict) or any(name not in data for name in fields):
        missing = [name for name in fields if name not in data] if isinstance(data, dict) else []
        what = f"no {missing[0]!r} in it" if missing else f"a {type(data).__name__}"
        raise _not_ours(url, status, f"JSON that is not the prover's answer ({what}): {gist(raw)}")
    return data


def _not_ours(url: str, status: int, what: str) -> ServerError:
    return ServerError(status, "bad_response", f"the prover server at {url} answered HTTP {status} with {what}")


def _proof_result(view: dict) -> ProofResult:
    if "proof" not in view or "public" not in view:
        raise ServerError(200, "bad_response", f"job {view.get('id')}: the server said {view.get('state')!r} "
                                                "and sent no proof")
    return with_log(ProofResult(view["proof"], view["public"], view["id"], view["key"], view.get("timings", {})),
                     view)


def _timed_out(url: str, timeout: float | None, req: _Request | None = None) -> ServerError:
    return ServerError(0, "timeout", f"{_job_named(req)}the prover server at {url} timed out: no answer within "
                                     f"{timeout:g} s")


def _gone(url: str, exc: BaseException, req: _Request, retry: BaseException | None = None) -> ServerError:
    """A server that took the request and closed its connection without an answer (SIGKILLed, crashed, OOM-killed
    mid-job): said as such, not as "cannot reach" (what a second try on a fresh connection then met)."""
    return ServerError(0, "server_gone", _job_named(req) + gone_message(url, exc, req.job, retry))


def _job_named(req: _Request | None) -> str:
    """The "job 7: " of a request whose job the server named before it went quiet (an interim answer's Job-Id)."""
    job_id = (req.early or {}).get("job-id") if req is not None else None
    return f"job {job_id}: " if job_id else ""


def _lost_job(job_id: str, exc: ServerError) -> ServerError:
    """`wait`'s request failed without the server's answer: the error names the job and how to find out."""
    return exc if exc.status else ServerError(0, exc.code, lost_job_message(job_id, exc.message))


def _unreachable(url: str, exc: BaseException) -> ServerError:
    if isinstance(exc, ServerClosed):  # it was reached: it closed before answering, or while
        code, when = ("bad_response", "in the middle of its answer") if exc.mid_answer else ("unreachable",
                                                                                              "before answering")
        return ServerError(0, code, f"the prover server at {url} closed the connection {when}")
    tls = sys.modules.get("ssl")  # loaded only by an https:// client
    if tls is not None and isinstance(exc, tls.SSLError):
        return ServerError(0, "unreachable", tls_failure(url, exc, tls))
    if isinstance(exc, BadResponse):
        return ServerError(0, "bad_response", f"the prover server at {url} answered with something that is not "
                                              f"HTTP/1.1: {exc}")
    if isinstance(exc, OSError):
        why = exc.strerror or str(exc) or ("timed out" if isinstance(exc, TimeoutError) else type(exc).__name__)
        return ServerError(0, "unreachable", f"cannot reach the prover server at {url}: {why}")
    return ServerError(0, "unreachable", f"the prover server at {url} closed the connection: {exc}")


class _Base:
    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None,
                 token_file: str | os.PathLike | None = None, timeout: float | None = None):
        if not isinstance(url, str):
            raise ClientSettingError(f"url: expected text such as {DEFAULT_URL}, not {type(url).__name__}")
        if timeout is not None and not (isinstance(timeout, (int, float)) and 0 < timeout < 1e9):  # NaN, inf too
            raise ClientSettingError(f"timeout: expected seconds > 0 (or None), not {timeout!r}")
        parts = split_url(url)
        if parts is None:
            raise ServerError(0, "bad_url", f"{url}: {url_problem(url)}")
        self.url = url.rstrip("/")
        scheme, self.host, self.port, self.base = parts
        self.tls = scheme == "https"
        self.timeout = timeout
        self.headers = {"Accept": "application/json"}
        # a 102 with the job's id (http.py): asked for only where GROTH16_CLIENT_JOB_ID=1, since a proxy that takes
        # any 1xx for the answer itself (nginx before 1.29) would fail every proof that runs past 0.1 s
        self.job_id_first = switch("GROTH16_CLIENT_JOB_ID", ClientSettingError) is True
        token = read_token(token, token_file)
        if token and (problem := token_problem(token)) is not None:
            raise ClientSettingError(f"token: it {problem}")
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def _head(self, req: _Request) -> bytes:
        headers = self.headers if req.early is None or not self.job_id_first else {**self.headers, "Prefer": "job-id"}
        return request_head(req.method, self.base + req.path, self.host, self.port, headers, len(req.body),
                            req.content_type)


# ------------------------------------------------------------------ blocking

class Client(_Base):
    """Blocking client over one keep-alive connection (a plain socket, TCP_NODELAY); threads that share it take turns.

    `spin_ms`: how long a request may poll for its answer without blocking (engine/client_wait.py:
    asleep until shortly before the answer is due, then awake for it, so that its arrival does not
    pay a process wake-up); None: GROTH16_CLIENT_SPIN_MS, else 3 ms; 0: block in recv throughout."""

    _sock = None  # opened on the first call
    _stream = None  # its buffered reader

    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None,
                 token_file: str | os.PathLike | None = None, timeout: float | None = None,
                 spin_ms: float | None = None):
        super().__init__(url, token=token, token_file=token_file, timeout=timeout)
        self.answers = AnswerWait(spin_seconds(spin_ms))
        self._lock = _thread.allocate_lock()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._stream.close()
            self._sock.close()
            self._sock = self._stream = None

    def _open(self) -> None:
        # an ASCII host as bytes: getaddrinfo would otherwise load the idna codec (1 ms of a start)
        host = self.host.encode() if self.host.isascii() else self.host
        sock = socket.create_connection((host, self.port), timeout=self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls:
                import ssl  # noqa: PLC0415

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self._reads = TimedReads(sock)
        self._sock, self._stream = sock, self._reads.buffered()

    def _call(self, req: _Request) -> Any:
        with self._lock:  # one request at a time on the one connection: threads sharing a Client read each
            return self._call_alone(req)  # other's answers, a proof of one key returned for another

    def _call_alone(self, req: _Request) -> Any:
        head = self._head(req)
        route = f"{req.method} {req.path.partition('?')[0]}"
        lost = None  # the first try's connection, closed by the server without an answer
        if self._sock is not None and dropped(self._sock):
            self.close()
        for attempt in (0, 1):
            reused = self._sock is not None
            sent = False
            try:
                if self._sock is None:
                    self._open()  # a timeout here: the server cannot be reached
                try:
                    send_all(self._sock, head, req.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the server answered early (413, 429) and closed: read that answer
                sent = True
                deadline = None if self.timeout is None else time.perf_counter() + self.timeout
                self.answers.wait(self._sock, route, self.timeout)
                self._reads.deadline = deadline  # the answer's reads share the one timeout
                status, ctype, raw, keep = read_sync(self._stream, req.early)
                self._reads.deadline = None
                self._sock.settimeout(self.timeout)
            except ConnectionError as exc:  # reset, or closed before answering (ServerClosed)
                self.close()
                if req.early:  # it had named the job: it went away while working on it
                    raise _gone(self.url, exc, req) from None
                if getattr(exc, "mid_answer", False) or not sent:
                    raise (_gone(self.url, lost, req, exc) if lost else _unreachable(self.url, exc)) from None
                if reused and attempt == 0 and not req.job:  # closed as the request went (idle, at that moment):
                    lost = exc  # once more, afresh; a job never (the server may have it)
                    continue
                raise _gone(self.url, exc, req) from None
            except TimeoutError as exc:  # connecting, or (connected) waiting for the answer
                connected = self._sock is not None
                self.close()
                if lost is not None and not connected:
                    raise _gone(self.url, lost, req, exc) from None
                raise (_timed_out(self.url, self.timeout, req) if connected else _unreachable(self.url, exc)) from None
            except (OSError, BadResponse) as exc:  # refused, unreachable, not HTTP
                self.close()
                if lost is not None and isinstance(exc, OSError):
                    raise _gone(self.url, lost, req, exc) from None
                raise _unreachable(self.url, exc) from None
            except BaseException:  # interrupted (Ctrl-C) mid-request: the connection is half-used, and
                self.close()  # closing it is what cancels the server's job
                raise
            if not keep:
                self.close()
            return _answer(self.url, status, ctype, raw, req.fields)

    def healthz(self) -> dict:
        return self._call(_Request("GET", "/healthz"))

    def stats(self) -> dict:
        return self._call(_Request("GET", "/v1/stats"))

    def metrics(self) -> str:
        return self._call(_Request("GET", "/metrics", fields=None))

    def keys(self) -> list[dict]:
        return self._call(_Request("GET", "/v1/keys", fields=("keys",)))["keys"]

    def load_key(self, path: str | os.PathLike, wasm: str | os.PathLike | None = None,
                 name: str | None = None) -> dict:
        """Load a key by its path on the server (absolute); an already resident one is returned as it is."""
        key = self._call(_json_request("POST", "/v1/keys", _load_body(path, wasm, name), ("id",)))
        if isinstance(key.get("prove_s_p50"), (int, float)):  # when its proofs' answers are due
            self.answers.expect(f"POST /v1/keys/{quote(key['id'])}/prove", key["prove_s_p50"])
        return key

    def unload_key(self, key: str) -> dict:
        return self._call(_Request("DELETE", f"/v1/keys/{quote(key)}", fields=("id",)))

    def prove(self, key: str, witness: Any, *, priority: str = "normal", deadline: float | None = None,
              name: str | None = None) -> ProofResult:
        """Prove and wait: `witness` is a .wtns path, its bytes, or a dict of inputs (a key loaded with wasm)."""
        return _proof_result(self._call(_prove_request("prove", key, witness, priority, deadline, name)))

    def submit(self, key: str, witness: Any, *, priority: str = "normal", deadline: float | None = None,
               name: str | None = None) -> dict:
        """Queue a job and return at once (its view: id, state); poll it with `job` or `wait`."""
        return self._call(_prove_request("jobs", key, witness, priority, deadline, name))

    def job(self, job_id: str, wait: float | None = None) -> dict:
        return self._call(_Request("GET", with_query(f"/v1/jobs/{job_id}", wait=wait), fields=_JOB))

    def cancel(self, job_id: str) -> dict:
        return self._call(_Request("DELETE", f"/v1/jobs/{job_id}", fields=_JOB))

    def wait(self, job_id: str) -> ProofResult:
        """Poll (long-polling, 30 s a request, or half the client's timeout) until the job ends; its proof, or
        its error as ServerError."""
        while True:
            try:
                view = self.job(job_id, wait=_poll_s(self.timeout))
            except ServerError as exc:
                raise _lost_job(job_id, exc) from None
            if view["state"] not in ("queued", "running"):
                return _job_outcome(view)

    def verify(self, proof: dict, public: list, *, key: str | None = None, vkey: dict | None = None) -> bool:
        body = _verify_body(proof, public, key, vkey)
        return self._call(_json_request("POST", "/v1/verify", body, ("valid",)))["valid"]


def _load_body(path, wasm, name) -> dict:
    body: dict[str, Any] = {"path": os.fspath(path)}
    if wasm is not None:
        body["wasm"] = os.fspath(wasm)
    if name is not None:
        body["name"] = name
    return body


def _verify_body(proof, public, key, vkey) -> dict:
    body: dict[str, Any] = {"proof": proof, "public": public}
    if key is not None:
        body["key"] = key
    if vkey is not None:
        body["vkey"] = vkey
    return body


# a polled job's error code -> the status its waiting request would have answered with (docs/service.md)
_STATUS = {"deadline_exceeded": 504, "cancelled": 409, "shutting_down": 503, "too_large_for_budget": 507,
           "insufficient_storage": 507, "engine_error": 500, "internal_error": 500}


def _poll_s(timeout: float | None) -> float:
    """A long poll's wait: answered within the client's timeout, which bounds one request, not the job."""
    return 30.0 if timeout is None else round(min(30.0, timeout / 2), 3)


def _job_outcome(view: dict) -> ProofResult:
    if view["state"] == "done":
        return _proof_result(view)
    code = str(view.get("error", view["state"]))
    status = _STATUS.get(code, {"expired": 504, "cancelled": 409}.get(view["state"], 422))
    raise with_log(ServerError(status, code, str(view.get("message", view["state"]))), view)


# ------------------------------------------------------------------ asyncio

class AsyncClient(_Base):
    """asyncio client (HTTP/1.1 over asyncio streams, a pool of keep-alive connections)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        import asyncio  # noqa: PLC0415

        if self.tls:
            import ssl  # noqa: PLC0415

            return await asyncio.open_connection(self.host, self.port, ssl=ssl.create_default_context())
        return await asyncio.open_connection(self.host, self.port)

    async def _call(self, req: _Request) -> Any:
        import asyncio  # noqa: PLC0415

        head = self._head(req)
        lost = None  # the first try's connection, closed by the server without an answer
        while self._idle and (self._idle[-1][0].at_eof() or self._idle[-1][1].is_closing()):
            self._idle.pop()[1].close()  # closed by the server while idle: found before a request goes on it
        for attempt in (0, 1):
            reused = attempt == 0 and bool(self._idle)  # a retry goes on a fresh connection: others may be stale too
            try:
                if reused:
                    reader, writer = self._idle.pop()
                else:
                    connect = self._connect()
                    reader, writer = await (asyncio.wait_for(connect, self.timeout) if self.timeout else connect)
            except OSError as exc:  # refused, unreachable, timed out connecting
                raise (_gone(self.url, lost, req, exc) if lost else _unreachable(self.url, exc)) from None
            done = False
            try:
                coro = self._exchange(reader, writer, head, req.body, req.early)
                status, ctype, raw, keep = await (asyncio.wait_for(coro, self.timeout) if self.timeout else coro)
                done = True
            except ConnectionError as exc:  # reset, or closed before answering (ServerClosed)
                if req.early:  # it had named the job: it went away while working on it
                    raise _gone(self.url, exc, req) from None
                if getattr(exc, "mid_answer", False):  # not once it answered
                    raise _unreachable(self.url, exc) from None
                if reused and attempt == 0 and not req.job:  # a job is never sent twice (the server may have it)
                    lost = exc
                    continue
                raise _gone(self.url, exc, req) from None
            except TimeoutError:  # asyncio.wait_for's
                raise _timed_out(self.url, self.timeout, req) from None
            except (OSError, BadResponse) as exc:
                raise _unreachable(self.url, exc) from None
            finally:
                if not (done and keep):
                    writer.close()  # cancelled, broken, or the server's to close: closing it cancels the job
            if keep:  # only a connection the server keeps goes back to the pool
                self._idle.append((reader, writer))
            return _answer(self.url, status, ctype, raw, req.fields)

    @staticmethod
    async def _exchange(reader, writer, head: bytes, body: bytes, early: dict | None) -> tuple[int, str, bytes, bool]:
        writer.writelines((head, body) if body else (head,))
        try:
            await writer.drain()
        except ConnectionError:
            pass  # an early answer (413, 429) before the whole body went: read it
        return await read_async(reader, early)

    async def healthz(self) -> dict:
        return await self._call(_Request("GET", "/healthz"))

    async def stats(self) -> dict:
        return await self._call(_Request("GET", "/v1/stats"))

    async def metrics(self) -> str:
        return await self._call(_Request("GET", "/metrics", fields=None))

    async def keys(self) -> list[dict]:
        return (await self._call(_Request("GET", "/v1/keys", fields=("keys",))))["keys"]

    async def load_key(self, path, wasm=None, name: str | None = None) -> dict:
        return await self._call(_json_request("POST", "/v1/keys", _load_body(path, wasm, name), ("id",)))

    async def unload_key(self, key: str) -> dict:
        return await self._call(_Request("DELETE", f"/v1/keys/{quote(key)}", fields=("id",)))

    async def prove(self, key: str, witness: Any, *, priority: str = "normal", deadline: float | None = None,
                    name: str | None = None) -> ProofResult:
        return _proof_result(await self._call(_prove_request("prove", key, witness, priority, deadline, name)))

    async def submit(self, key: str, witness: Any, *, priority: str = "normal", deadline: float | None = None,
                     name: str | None = None) -> dict:
        return await self._call(_prove_request("jobs", key, witness, priority, deadline, name))

    async def job(self, job_id: str, wait: float | None = None) -> dict:
        return await self._call(_Request("GET", with_query(f"/v1/jobs/{job_id}", wait=wait), fields=_JOB))

    async def cancel(self, job_id: str) -> dict:
        return await self._call(_Request("DELETE", f"/v1/jobs/{job_id}", fields=_JOB))

    async def wait(self, job_id: str) -> ProofResult:
        while True:
            try:
                view = await self.job(job_id, wait=_poll_s(self.timeout))
            except ServerError as exc:
                raise _lost_job(job_id, exc) from None
            if view["state"] not in ("queued", "running"):
                return _job_outcome(view)

    async def verify(self, proof: dict, public: list, *, key: str | None = None, vkey: dict | None = None) -> bool:
        body = _verify_body(proof, public, key, vkey)
        return (await self._call(_json_request("POST", "/v1/verify", body, ("valid",))))["valid"]
