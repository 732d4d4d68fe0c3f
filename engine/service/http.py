"""The HTTP face of the service (aiohttp): routes, bearer auth, body limits, JSON errors.

Every answer is JSON except /metrics (Prometheus text).  A request handler
is cancelled when its client disconnects (`handler_cancellation`): an
upload in progress is dropped, a waiting proof's job is cancelled, and so
everything the request held goes back.  Routes are listed in docs/service.md.
"""
from __future__ import annotations

import asyncio
import errno
import functools
import hmac
import json
import logging
import math
import os
import time
from typing import Any

import anyio
import msgspec
from aiohttp import HttpVersion11, web
from aiohttp.web_protocol import RequestPayloadError

from engine.errors import EngineError
from engine.service.bodies import BodyDeadline, decoded_length, not_http, payload_problem
from engine.service.core import Service, remove_file
from engine.service.jobs import PRIORITIES, Job
from engine.service.problems import Problem, bad_request, from_engine_error

log = logging.getLogger("engine.service")

SERVICE = web.AppKey("service", Service)
MAX_POLL_WAIT_S = 60.0
_CHUNK = 1 << 20
_ALIGN_PAD = 4  # a circom/snarkjs .wtns has its values at byte 76: 4 bytes before it put them on a 16-byte boundary
_JSON_LIMIT = 16 << 20  # key and verify requests are small; input JSON for a proof may use max_body


def build_app(service: Service, tokens: list[str]) -> web.Application:
    logging.getLogger("aiohttp.server").addFilter(not_http)
    middlewares = [_errors, _auth(tokens), _query_names]
    app = web.Application(middlewares=middlewares, client_max_size=service.config.max_body)
    app[SERVICE] = service
    expect = _expect_handler(middlewares)
    app.add_routes([
        web.get("/healthz", healthz),
        web.get("/metrics", metrics),
        web.get("/v1/stats", stats),
        web.get("/v1/keys", list_keys),
        web.post("/v1/keys", load_key, expect_handler=expect),
        web.get("/v1/keys/{key}", get_key),
        web.delete("/v1/keys/{key}", unload_key),
        web.post("/v1/keys/{key}/prove", prove, expect_handler=expect),
        web.post("/v1/keys/{key}/jobs", submit_job, expect_handler=expect),
        web.get("/v1/jobs/{job}", get_job),
        web.delete("/v1/jobs/{job}", cancel_job),
        web.post("/v1/verify", verify, expect_handler=expect),
    ])
    return app


def _expect_handler(middlewares: list):
    """`Expect: 100-continue` (curl's way with a body over 1 MiB): the go-ahead only once the request passes what
    its head alone can fail (auth, query, key, queue room, length), else that answer at once.  aiohttp's own
    handler said "100 Continue" to every request, before the middlewares: the client sent its whole upload and
    was then refused, by a full queue too (docs/service.md: refused "before it is sent")."""
    async def precheck(request: web.Request) -> None:
        service = request.app[SERVICE]
        if request.match_info.handler in (prove, submit_job):
            key = service.keys.get(request.match_info["key"])
            _priority(request)
            _number(request, "deadline", 0.0)
            service.check_admission(key)
            _check_length(request, service.config.max_body)
        else:
            _check_length(request, min(_JSON_LIMIT, service.config.max_body))

    chain = precheck
    for middleware in reversed(middlewares):
        chain = functools.partial(middleware, handler=chain)

    async def expect(request: web.Request) -> web.StreamResponse | None:
        if request.version != HttpVersion11:
            return None
        if request.headers.get("Expect", "").lower() != "100-continue":
            response = _problem_response(Problem(417, "expectation_failed", f"unknown Expect: "
                                                 f"{request.headers.get('Expect', '')[:80]}"))
        else:
            response = await chain(request)  # the answer an early refusal gets; None: go ahead
        if response is not None:
            response.force_close()  # its body is not coming (nor read)
            return response
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # as aiohttp's own handler: the answer's size starts after this line
        return None

    return expect


# ------------------------------------------------------------------ middlewares

def _problem_response(problem: Problem, extra: dict | None = None) -> web.Response:
    return web.json_response({**problem.body(), **(extra or {})}, status=problem.status, headers=problem.headers)


@web.middleware
async def _errors(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except Problem as problem:
        response = _problem_response(problem)
        if problem.status == 408:  # a client that stalled mid-body: its connection is not kept for another request
            response.force_close()
        return response
    except web.HTTPException as exc:  # aiohttp's own: no such route, method not allowed, body too large
        if exc.status < 400:
            raise
        code = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}.get(exc.status, "bad_request")
        message = {404: f"no route {request.method} {request.path} (see docs/service.md)",
                   405: f"{request.method} is not allowed on {request.path}"}.get(exc.status, exc.text or exc.reason)
        return web.json_response({"error": code, "message": message}, status=exc.status)
    except RequestPayloadError as exc:  # a body that does not decode (its Content-Encoding): the client's doing
        cause = exc.__cause__
        why = payload_problem(cause, getattr(cause, "message", None) or str(cause or exc))
        response = _problem_response(bad_request(f"the request body cannot be read: {why}"))
        response.force_close()
        request.content.feed_eof()  # else aiohttp reads on to drain it, meets the error again and logs a traceback
        return response
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception as exc:  # noqa: BLE001 - a bug must answer 500 and leave the server serving
        log.exception("%s %s failed", request.method, request.path)
        return web.json_response({"error": "internal_error", "message": f"{type(exc).__name__}: {exc}"}, status=500)


def _auth(tokens: list[str]):
    expected = [t.encode() for t in tokens]

    @web.middleware
    async def auth(request: web.Request, handler) -> web.StreamResponse:
        if expected and request.path != "/healthz":
            header = request.headers.get("Authorization")
            challenge = {"WWW-Authenticate": 'Bearer realm="engine"'}
            if header is None:
                raise Problem(401, "unauthorized", "missing Authorization: Bearer <token> (the server has a token file)",
                              challenge)
            scheme, _, given = header.partition(" ")
            if scheme.lower() != "bearer" or not given.strip():
                raise Problem(401, "unauthorized", "the Authorization header must be 'Bearer <token>'", challenge)
            given_b = given.strip().encode("utf-8", "surrogateescape")  # not UTF-8 (Latin-1): no match, not a 500
            if not any(hmac.compare_digest(given_b, t) for t in expected):  # every token compared: no timing hint
                raise Problem(401, "unauthorized", "the bearer token is not one of the server's", challenge)
        return await handler(request)

    return auth


# The query parameters a route takes (by handler name; docs/service.md): any other is refused, as an unknown field of a
# JSON body is, since a misspelt `priorty=high` would otherwise run the job at normal priority without a word; a
# parameter given twice is refused too (which one would count?).  The probes' routes take any (a monitor may add
# its own, a cache-buster say): None.
_PROVE_QUERY = ("priority", "deadline", "name")
_QUERY_NAMES = {"prove": _PROVE_QUERY, "submit_job": _PROVE_QUERY, "get_job": ("wait",), "healthz": None,
                "metrics": None}


@web.middleware
async def _query_names(request: web.Request, handler) -> web.StreamResponse:
    info = request.match_info
    if info.http_exception is None and request.query:
        takes = _QUERY_NAMES.get(getattr(info.handler, "__name__", ""), ())
        if takes is None:
            return await handler(request)
        route = f"{request.method} {info.route.resource.canonical if info.route.resource else request.path}"
        unknown = sorted(set(request.query) - set(takes))
        if unknown:
            offer = f"it takes {', '.join(takes)}" if takes else "it takes none"
            raise bad_request(f"unknown query parameter(s) {', '.join(unknown)} for {route} ({offer})")
        twice = sorted(name for name in set(request.query) if len(request.query.getall(name)) > 1)
        if twice:
            raise bad_request(f"query parameter(s) {', '.join(twice)} given more than once")
    return await handler(request)


# ------------------------------------------------------------------ request parts

def _check_length(request: web.Request, limit: int) -> None:
    if decoded_length(request) is not None and request.content_length > limit:
        raise Problem(413, "body_too_large", f"the request body has {request.content_length} bytes; "
                                             f"the limit is {limit}")


def _let_flow(request: web.Request, chunk: int) -> None:
    """Raise the body stream's buffer limits to `chunk` (aiohttp >= 3.13 has the call; older ones the fields)."""
    stream = request.content
    if hasattr(stream, "set_read_chunk_size"):
        stream.set_read_chunk_size(chunk)
    elif chunk > getattr(stream, "_low_water", chunk):
        stream._low_water, stream._high_water = chunk, 2 * chunk


async def _read_body(request: web.Request, limit: int, sink=None) -> bytes:
    """The body, at most `limit` bytes (413 beyond); with `sink`, chunks go to sink.write instead."""
    _check_length(request, limit)
    # aiohttp pauses the socket whenever 128 KiB wait unread: with 1 MiB a big upload flows with
    # fewer pause/resume cycles
    _let_flow(request, min(limit, _CHUNK))
    parts, total = [], 0
    with BodyDeadline(request, request.app[SERVICE].config.upload_timeout_s):
        while chunk := await request.content.readany():
            total += len(chunk)
            if total > limit:
                raise Problem(413, "body_too_large", f"the request body is larger than the limit of {limit} bytes")
            if sink is None:
                parts.append(chunk)
            else:
                sink.write(chunk)
    return b"".join(parts)


async def _read_into(request: web.Request, view: memoryview) -> None:
    """A body of a known length (within the limits) into `view`, as its bytes arrive: one copy."""
    _let_flow(request, min(len(view), _CHUNK))
    length, got = len(view), 0
    with BodyDeadline(request, request.app[SERVICE].config.upload_timeout_s):
        while chunk := await request.content.readany():
            if got + len(chunk) > length:  # aiohttp frames the body by its Content-Length; never more
                raise bad_request(f"the request body is longer than its Content-Length of {length}")
            view[got:got + len(chunk)] = chunk
            got += len(chunk)
    if got != length:
        raise bad_request(f"the request body ended after {got} of its {length} bytes")


async def _read_json(request: web.Request, limit: int = _JSON_LIMIT) -> Any:
    raw = await _read_body(request, min(limit, request.app[SERVICE].config.max_body))
    if not raw:
        raise bad_request("the request body is empty; expected JSON")
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise bad_request("the request body is not UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
                          ) from None
    except RecursionError:
        raise bad_request("the request body is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # a number of more than 4300 digits (Python's int limit): no field or signal has one
        detail = str(exc).split(";")[0]
        raise bad_request(f"the request body has a number too long to read: {detail[:1].lower()}{detail[1:]}"
                          ) from None


def _number(request: web.Request, name: str, low: float, high: float = math.inf, *,
            low_included: bool = False) -> float | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise bad_request(f"{name}: {raw!r} is not a number") from None
    if math.isinf(value):  # `deadline=inf` was taken as no deadline, reported as null (serve refuses it too)
        raise bad_request(f"{name}: {raw} is not a finite number of seconds (leave it out for none)")
    above_low = low <= value if low_included else low < value
    if not (above_low and value <= high) or math.isnan(value):
        raise bad_request(f"{name}: {raw} is out of range ({'at least' if low_included else 'more than'} {low:g}" +
                          (f", at most {high:g})" if high != math.inf else ")"))
    return value


def _priority(request: web.Request) -> str:
    priority = request.query.get("priority", "normal")
    if priority not in PRIORITIES:
        raise bad_request(f"priority: {priority!r} is not one of {', '.join(PRIORITIES)}")
    return priority


def _plain(obj: Any) -> Any:
    """What msgspec does not encode itself: numpy scalars (a stage's seconds may be a numpy float)."""
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"cannot encode a {type(obj).__name__} as JSON")


_ENCODE = msgspec.json.Encoder(enc_hook=_plain)


def _job_response(view: dict, status: int = 200, headers: dict | None = None) -> web.Response:
    """A job's answer, encoded by msgspec: 4 us where web.json_response took 17 on the development VM, on
    the latency HTTP adds to every proof (issue 16); the same JSON, without spaces."""
    try:
        body = _ENCODE.encode(view)
    except UnicodeEncodeError:  # a lone surrogate (a path that is not UTF-8, in a message or a circuit's log line)
        body = json.dumps(view, default=_plain).encode()  # as \udcfc: a 500 lost the proof
    return web.Response(body=body, status=status, headers=headers, content_type="application/json", charset="utf-8")


def job_view(job: Job) -> dict:
    from engine.formats.json_text import proof_to_obj  # noqa: PLC0415 - the server has the engine anyway

    view: dict[str, Any] = {"id": job.id, "key": job.key.id, "priority": job.priority, "state": job.state}
    if job.deadline_s is not None:
        view["deadline_s"] = job.deadline_s
    if job.reason:
        view["reason"] = job.reason
    wall = time.time() - time.monotonic()  # monotonic stamps -> unix times for the client
    left_queue = job.started or job.finished
    view["timings"] = {
        "submitted_at": wall + job.created,
        "started_at": job.started and wall + job.started,
        "finished_at": job.finished and wall + job.finished,
        "upload_s": job.received and job.created - job.received,  # the request's body, read and parsed
        "queue_s": left_queue and left_queue - job.created,
        "prove_s": job.finished - job.started if job.started and job.finished else None,
        "total_s": job.finished - job.created if job.finished else None,
    }
    if job.proof is not None:
        view["proof"] = proof_to_obj(job.proof)
        view["public"] = [str(int(v)) for v in job.proof.public]
        view["timings"]["stages"] = {k: round(v, 6) for k, v in job.proof.timings.items()}
        if job.verified is not None:  # as a local prove's --json says it: serve --no-verify sends them unchecked
            view["verified"] = bool(job.verified)
    if job.log.lines or job.log.left_out:  # the circuit's log() lines, bounded (jobs.JobLog)
        view["log"] = job.log.texts()
        if job.log.left_out:
            view["log_left_out"] = job.log.left_out
    if job.problem is not None:
        view.update(job.problem.body())
    return view


# ------------------------------------------------------------------ handlers

async def healthz(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    if service.draining:
        return web.json_response({"status": "draining"}, status=503)
    return web.json_response({"status": "ok"})


async def metrics(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    return web.Response(body=service.metrics.render(), headers={"Content-Type": service.metrics.CONTENT_TYPE})


async def stats(request: web.Request) -> web.Response:
    return web.json_response(request.app[SERVICE].stats())


async def list_keys(request: web.Request) -> web.Response:
    return web.json_response({"keys": [k.describe() for k in request.app[SERVICE].keys.keys.values()]})


async def load_key(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    body = await _read_json(request)
    if not isinstance(body, dict) or "path" not in body:
        raise bad_request('expected {"path": "/abs/circuit.zkey", "wasm": "/abs/circuit.wasm" (optional), '
                          '"name": "id" (optional)}')
    unknown = set(body) - {"path", "wasm", "name"}
    if unknown:
        raise bad_request(f"unknown field(s): {', '.join(sorted(unknown))}")
    if service.draining:
        raise Problem(503, "shutting_down", "the server is shutting down")
    try:
        key, loaded = await service.keys.load(body["path"], body.get("wasm"), body.get("name"))
    except EngineError as exc:  # a malformed .zkey, a key too large for the device
        raise from_engine_error(exc) from None
    service.refresh_slots()
    return web.json_response(key.describe(), status=201 if loaded else 200)


async def get_key(request: web.Request) -> web.Response:
    return web.json_response(request.app[SERVICE].keys.get(request.match_info["key"]).describe())


async def unload_key(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    key = service.keys.get(request.match_info["key"])
    view = key.describe()
    await asyncio.shield(service.keys.unload(key))  # a client that leaves does not stop an unload half-way
    service.refresh_slots()
    return web.json_response({**view, "unloaded": True})


async def _admit(request: web.Request, detached: bool) -> Job:
    """Read a proof request (a .wtns body, or JSON inputs for a key with wasm) into a queued job."""
    received = time.monotonic()
    service = request.app[SERVICE]
    key = service.keys.get(request.match_info["key"])
    priority = _priority(request)
    deadline = _number(request, "deadline", 0.0)
    label = request.query.get("name") or "the uploaded witness"
    place = service.hold_place(key)  # before the upload: a full queue costs the client no transfer
    try:
        return await _upload(request, service, key, place, label, detached, received,
                             priority=priority, deadline_s=deadline)
    finally:
        place.release()  # the job took it, or the request failed or its client left


async def _upload(request: web.Request, service: Service, key: Any, place: Any, label: str, detached: bool,
                  received: float, **job: Any) -> Job:
    """The request's body into a job, which takes the request's place in the queue."""
    if request.content_type == "application/json":
        if key.wasm is None:
            raise Problem(422, "mismatch", f"key {key.id!r} was loaded without a circuit.wasm, so it cannot compute "
                                           "a witness from inputs; send the .wtns, or load the key with \"wasm\"")
        inputs = await _read_json(request, service.config.max_body)
        if not isinstance(inputs, dict):
            raise bad_request("circuit inputs must be a JSON object of signal names")
        label = request.query.get("name") or "inputs"  # unnamed: as the engine calls them
        return service.submit(key, inputs, label=label, detached=detached, received=received, place=place, **job)
    length = decoded_length(request)  # a gzip body's own length sized its buffer, and it decoded past it
    if (length is not None and length <= service.config.memory_upload_max
            and service.receiving + length <= service.receiving_cap):
        # Kept in memory and parsed in place: no file, and no synthesis worker to read one.
        _check_length(request, service.config.max_body)
        buf = service.uploads.take(_ALIGN_PAD + length)
        service.receiving += len(buf)
        handed = False
        try:
            view = memoryview(buf)[_ALIGN_PAD:_ALIGN_PAD + length]
            await _read_into(request, view)
            _check_magic(bytes(view[:4]), label)
            queued = service.submit(key, parse_upload(view, label), label=label, detached=detached, upload=buf,
                                    received=received, place=place, **job)
            handed = True
            return queued
        finally:
            service.receiving -= len(buf)
            if not handed:  # refused, malformed, or the client left mid-upload: the buffer goes back
                service.uploads.give(buf)
    # A large upload (or one of unknown length) goes to a file in RAM, read by a synthesis worker.
    path = service.spool_path(length)
    handed = False
    try:
        try:
            with open(path, "wb") as sink:
                await _read_body(request, service.config.max_body, sink)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):  # a full disk, a quota, a size limit
                raise
            raise Problem(507, "insufficient_storage", f"{label}: the server has no room to hold this upload in "
                          f"{os.path.dirname(path)} ({exc.strerror}); try again later") from None
        with open(path, "rb") as f:
            _check_magic(f.read(4), label)
        queued = service.submit(key, path, label=label, spool=path, detached=detached, received=received,
                                place=place, **job)
        handed = True
        return queued
    finally:
        if not handed:  # refused, too large, or the client left mid-upload: the partial file goes
            remove_file(path)


def _check_magic(magic: bytes, label: str) -> None:
    if magic != b"wtns":
        raise Problem(422, "bad_input", f"{label}: the request body is not a .wtns file (it starts with "
                                        f"{magic!r}); send circuit inputs as application/json")


def parse_upload(body: memoryview, label: str) -> Any:
    """An uploaded .wtns, parsed in place (its values a view over `body`); a malformed one is a 422."""
    from engine.formats.binfile import InMemoryFile  # noqa: PLC0415 - the server has the engine anyway
    from engine.formats.wtns import read_wtns  # noqa: PLC0415

    try:
        return read_wtns(InMemoryFile(label, body))
    except EngineError as exc:
        raise from_engine_error(exc) from None


# A waiting proof's id goes first, to a client that asks (`Prefer: job-id`), once its job has run this long: a
# client whose server dies during the job can then name it; a quick proof's answer comes alone (an interim answer
# would wake the client before its proof, engine/client_wait.py).
JOB_ID_AFTER_S = 0.1


async def prove(request: web.Request) -> web.Response:
    """Wait for the proof; a client that disconnects cancels it."""
    service = request.app[SERVICE]
    job = await _admit(request, detached=False)
    # a timer, not anyio's move_on_after around the wait: 6 against 24 us a proof on the 2-core dev VM (issue 16)
    timer = asyncio.get_running_loop().call_later(JOB_ID_AFTER_S, _name_job, request, job) \
        if _wants_job_id(request) else None
    try:
        await job.done.wait()
    except asyncio.CancelledError:
        service.cancel(job, "the client disconnected")
        service.forget(job)
        raise
    finally:
        if timer is not None:
            timer.cancel()
    service.forget(job)
    view = job_view(job)
    return _job_response(view, job.problem.status if job.problem is not None else 200)


def _name_job(request: web.Request, job: Job) -> None:
    """102 Processing (RFC 2518) with the job's id: an interim answer, which an HTTP/1.1 client skips.  Written
    while the handler waits for the job (not yet ended: its answer has not begun), past aiohttp's writer."""
    transport = request.transport
    if not job.final and transport is not None and not transport.is_closing():
        transport.write(b"HTTP/1.1 102 Processing\r\nJob-Id: %s\r\n\r\n" % job.id.encode())


def _wants_job_id(request: web.Request) -> bool:
    """The client takes an interim answer naming its job (engine.client's prove asks): HTTP/1.1 only."""
    wanted = request.headers.get("Prefer", "").lower()
    return request.version == HttpVersion11 and "job-id" in (t.strip() for t in wanted.split(","))


async def submit_job(request: web.Request) -> web.Response:
    job = await _admit(request, detached=True)
    return _job_response(job_view(job), 202, {"Location": f"/v1/jobs/{job.id}"})


async def get_job(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    wait = _number(request, "wait", 0.0, MAX_POLL_WAIT_S, low_included=True)
    job = service.job(request.match_info["job"])
    if wait and not job.final:
        with anyio.move_on_after(wait):
            await job.done.wait()
    return _job_response(job_view(job))


async def cancel_job(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    job = service.job(request.match_info["job"])
    service.cancel(job, "cancelled by a client (DELETE)")
    with anyio.move_on_after(MAX_POLL_WAIT_S):
        await job.done.wait()  # a running job ends once the engine has given its resources back
    return _job_response(job_view(job))


async def verify(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    valid = await service.verify(await _read_json(request))
    return web.json_response({"valid": valid})
