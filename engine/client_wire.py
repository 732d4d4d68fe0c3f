"""The client's HTTP/1.1, without an HTTP library: URLs, request heads, the bearer token (what a header can
carry, read from a token file: the server reads its file with the same function), and a sans-IO response reader.

`engine.client` speaks to the prover server over a plain socket (blocking)
or asyncio streams (async); both drive the one `read_response` generator
here, so the two parse answers identically.  No http.client (it imports
email and ssl: 15 ms of a 50 ms CLI start) and no urllib: a client process
imports only socket and json beyond this.
"""
from __future__ import annotations

import io
import json
import os
import stat
import time

from engine.errors import InputFileError

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
LINE, EXACT, REST = "line", "exact", "rest"  # what read_response asks its driver for
MAX_LINE = 65536  # asyncio's StreamReader limit too
MAX_ANSWER = 1 << 28  # the longest answer body the client takes
MAX_INTERIM = 16  # 1xx answers skipped before the answer
_LONG_LINE = f"a line longer than {MAX_LINE} bytes in its head"


class ServerClosed(ConnectionError):
    """The server closed the connection before answering (an idle keep-alive connection it had closed, say)."""

    mid_answer = False


class CutShort(ServerClosed):
    """The server closed the connection in the middle of its answer: the request reached it, so a client must
    not send it again (a second job) and the server was not unreachable."""

    mid_answer = True


class BadResponse(ValueError):
    """What came back is not an HTTP/1.1 response."""


def quote(text: str) -> str:
    """Percent-encode everything but RFC 3986's unreserved characters (a path segment or a query value).  A name
    that is not UTF-8 (a file's, os.fsdecode's surrogates) goes as its bytes: it was a UnicodeEncodeError."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in str(text).encode("utf-8", "surrogateescape"))


def with_query(path: str, **params) -> str:
    given = [(k, v) for k, v in params.items() if v is not None]
    return path + "?" + "&".join(f"{quote(k)}={quote(v)}" for k, v in given) if given else path


def split_url(url: str) -> tuple[str, str, int, str] | None:
    """http(s)://host[:port][/base] -> (scheme, host, port, base path), or None if it is not one."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        return None
    hostport, slash, path = rest.partition("/")
    if "@" in hostport or "?" in hostport or "#" in hostport:
        return None
    if hostport.startswith("["):  # [IPv6]:port
        host, close, after = hostport[1:].partition("]")
        if not close or (after and not after.startswith(":")):
            return None
        port = after[1:]
    else:
        host, _, port = hostport.partition(":")
    if not host:
        return None
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            return None
        number = int(port)
    else:
        number = 443 if scheme == "https" else 80
    return scheme, host, number, ("/" + path.split("?", 1)[0].split("#", 1)[0]).rstrip("/") if slash else ""


def url_problem(url: str) -> str:
    """Why split_url refuses `url`, in words (it was one message for all: "expected http://HOST:PORT")."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return f"no scheme: give http://{url}"
    if scheme.lower() not in ("http", "https"):
        return f"the scheme {scheme!r} is not http or https"
    hostport = rest.partition("/")[0]
    if "@" in hostport:
        return "credentials in a URL are not sent (give the token with --token-file)"
    if "?" in hostport or "#" in hostport:
        return "a query or fragment has no place here"
    if hostport.startswith("["):
        host, close, after = hostport[1:].partition("]")
        if not close:
            return "an IPv6 address needs its closing ]"
        if after and not after.startswith(":"):
            return f"{after!r} after the IPv6 address is not :PORT"
        port = after[1:]
    elif hostport.count(":") > 1:
        return "an IPv6 address goes in brackets: http://[::1]:8080"
    else:
        host, _, port = hostport.partition(":")
    if not host:
        return "no host"
    if not port.isdigit():
        return f"port {port!r} is not a number"
    if not 0 < int(port) < 65536:
        return f"port {int(port)} is out of range (1-65535)"
    return "expected http://HOST:PORT or https://HOST:PORT"


def token_problem(token: str) -> str | None:
    """What keeps `token` out of an Authorization header, or None: an HTTP header is bytes, and the client sent
    "tokén" as Latin-1 where the server read it as UTF-8 (a 500), and "€" as a UnicodeEncodeError traceback."""
    odd = next((c for c in token if not " " <= c <= "~"), None)
    if odd is None:
        return None
    return f"has {odd!r}, which a bearer token cannot carry: use printable ASCII (letters, digits, -._~+/)"


def read_token(token: str | None, token_file: str | os.PathLike | None) -> str | None:
    if token is not None or token_file is None:
        return token
    return token_file_tokens(token_file)[0]


def token_file_tokens(path: str | os.PathLike) -> list[str]:
    """The bearer tokens of a token file, one a line (blank lines and #comments skipped), for the client and
    the server alike; an InputFileError naming the file where it cannot give one (a file that is not UTF-8 was
    a UnicodeDecodeError traceback)."""
    try:
        with open(path, encoding="utf-8-sig") as f:  # a byte order mark (Notepad's) is no part of the token
            regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)  # else at most 1 MiB: /dev/zero, `<(yes)`
            text = f.read() if regular else f.read((1 << 20) + 1)  # took all the memory there was
        if len(text) > 1 << 20:
            raise InputFileError(path, "the token file gave more than 1 MiB without ending (not a regular file)")
        lines = [s.strip() for s in text.splitlines()]
    except OSError as exc:
        raise InputFileError(path, f"cannot read the token file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputFileError(path, "the token file is not UTF-8 text") from None
    tokens = [s for s in lines if s and not s.startswith("#")]
    if not tokens:
        raise InputFileError(path, "the token file holds no token")
    for token in tokens:
        if (problem := token_problem(token)) is not None:
            raise InputFileError(path, f"the token file's token {problem}")
    return tokens


def tls_failure(url: str, exc: OSError, tls) -> str:
    """A failed TLS handshake in words (`tls`: the ssl module): OpenSSL's "[SSL: WRONG_VERSION_NUMBER] wrong version
    number (_ssl.c:1006)" is what https:// to the service itself (plain HTTP) gave."""
    if getattr(exc, "reason", None) in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE"):
        return (f"the prover server at {url} answers plain HTTP, not TLS (its TLS handshake failed): `serve` has no "
                "TLS, so give http://, or put a TLS proxy in front of it")
    why = getattr(exc, "verify_message", None) if isinstance(exc, tls.SSLCertVerificationError) else None
    why = why or getattr(exc, "reason", None) or exc.strerror or str(exc)
    return f"the TLS handshake with the prover server at {url} failed: {why}"


def request_head(method: str, target: str, host: str, port: int, headers: dict[str, str], body_length: int,
                 content_type: str | None) -> bytes:
    host_header = f"[{host}]" if ":" in host else host
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host_header}:{port}", f"Content-Length: {body_length}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def read_response(early: dict | None = None):
    """Sans-IO reader of one response.  Yields (LINE, None), (EXACT, n) or (REST, None) and is sent
    back a line, exactly n bytes, or the rest of the stream; returns (status, content type, body,
    keep-alive).  An empty line where the status belongs is ServerClosed (an idle connection the
    server had closed), anything malformed BadResponse.  `early` gets the headers of 1xx answers
    (a waiting proof's Job-Id), as they come: known if the answer never does."""
    for interim in range(MAX_INTERIM + 1):  # 1xx answers (a CDN's 103 Early Hints) come before the answer
        status_line = yield LINE, None
        if not status_line:
            if interim:
                raise CutShort("the server closed the connection in the middle of its answer")
            raise ServerClosed("the server closed the connection")
        if not status_line.endswith(b"\n"):
            raise CutShort("the server closed the connection in the middle of its answer")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise BadResponse(f"not an HTTP/1.1 response: {status_line[:80]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        while True:
            line = yield LINE, None
            if not line.endswith(b"\n"):  # the stream ended inside the head
                raise CutShort("the server closed the connection in the middle of its answer")
            if line in (b"\r\n", b"\n"):
                break
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon:
                raise BadResponse(f"a malformed header line: {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        if not 100 <= status < 200 or status == 101:
            break
        if early is not None:
            early.update(headers)
    else:
        raise BadResponse(f"more than {MAX_INTERIM} interim (1xx) answers")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks, total = [], 0
        while True:
            size_line = yield LINE, None
            try:
                size = int(size_line.split(b";")[0], 16)
            except ValueError:
                raise BadResponse(f"a malformed chunk size: {size_line[:80]!r}") from None
            if size < 0:
                raise BadResponse(f"a malformed chunk size: {size_line[:80]!r}")
            if size == 0:
                break
            total += size
            _check_size(total)
            chunks.append((yield EXACT, size))
            if (yield EXACT, 2) != b"\r\n":
                raise BadResponse("a chunk longer than its size")
        while (yield LINE, None) not in (b"\r\n", b"\n", b""):
            pass  # trailers
        body = b"".join(chunks)
    elif "content-length" in headers:
        length = headers["content-length"]
        if not length.isdigit() or not length.isascii():
            raise BadResponse(f"a malformed Content-Length: {length[:80]!r}")
        _check_size(int(length))
        body = yield EXACT, int(length)
    else:
        body = yield REST, None
        _check_size(len(body))
        headers["connection"] = "close"
    keep = headers.get("connection", "").lower() != "close"
    return status, headers.get("content-type", ""), body, keep


def _check_size(length: int) -> None:
    """An answer's body is JSON of a few kB (a proof), /metrics' text at most some MB: a Content-Length of 10**12
    was a MemoryError traceback (the buffered reader allocates what it is asked to read)."""
    if length > MAX_ANSWER:
        raise BadResponse(f"an answer of {length} bytes (the client reads at most {MAX_ANSWER})")


def read_sync(stream, early: dict | None = None) -> tuple[int, str, bytes, bool]:
    """Drive read_response over a blocking buffered binary stream (socket.makefile("rb"))."""
    reader = read_response(early)
    want = next(reader)
    try:
        while True:
            kind, n = want
            if kind == LINE:
                data = stream.readline(MAX_LINE)
                if len(data) >= MAX_LINE and not data.endswith(b"\n"):  # not the end of the stream: too long
                    raise BadResponse(_LONG_LINE)
            elif kind == EXACT:
                data = stream.read(n)
                if len(data) < n:
                    raise CutShort("the server closed the connection in the middle of its answer")
            else:  # to the end of the stream, but no further than MAX_ANSWER (and one byte)
                parts, size = [], 0
                while size <= MAX_ANSWER and (part := stream.read1(1 << 16)):
                    parts.append(part)
                    size += len(part)
                data = b"".join(parts)
            want = reader.send(data)
    except StopIteration as done:
        return done.value


async def read_async(stream, early: dict | None = None) -> tuple[int, str, bytes, bool]:
    """Drive read_response over an asyncio.StreamReader."""
    import asyncio  # noqa: PLC0415

    reader = read_response(early)
    want = next(reader)
    try:
        while True:
            kind, n = want
            if kind == LINE:
                try:
                    data = await stream.readline()
                except ValueError:  # asyncio's limit (64 KiB) on a line: "Separator is not found, and chunk ..."
                    raise BadResponse(_LONG_LINE) from None
            elif kind == EXACT:
                try:
                    data = await stream.readexactly(n)
                except asyncio.IncompleteReadError:
                    raise CutShort("the server closed the connection in the middle of its answer") from None
            else:
                parts, size = [], 0
                while size <= MAX_ANSWER and (part := await stream.read(1 << 16)):
                    parts.append(part)
                    size += len(part)
                data = b"".join(parts)
            want = reader.send(data)
    except StopIteration as done:
        return done.value


def send_all(sock, head: bytes, body: bytes) -> None:
    """The head and the body in as few system calls as the socket takes (sendmsg: no joined copy)."""
    if not body:
        sock.sendall(head)
        return
    if not hasattr(sock, "sendmsg") or type(sock).__name__ == "SSLSocket":
        sock.sendall(head)
        sock.sendall(body)
        return
    views = [memoryview(head), memoryview(body)]
    while views:
        sent = sock.sendmsg(views)
        while sent and views:
            if sent >= len(views[0]):
                sent -= len(views.pop(0))
            else:
                views[0] = views[0][sent:]
                sent = 0


class TimedReads(io.RawIOBase):
    """The socket's reads under the buffered reader, each given what is left of the request's timeout: with the
    socket's own timeout each read had the whole of it afresh, and a server that sent its answer a byte at a time
    kept Client(timeout=2) waiting a minute (socket.SocketIO's work otherwise: no _io_refs, the client closes
    the socket itself)."""

    deadline: float | None = None  # time.perf_counter() value; None: the socket's own timeout

    def __init__(self, sock):
        self.sock = sock

    def readable(self) -> bool:
        return True

    def buffered(self) -> io.BufferedReader:
        return io.BufferedReader(self)

    def readinto(self, b) -> int:
        if self.deadline is not None:
            left = self.deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError("timed out")
            self.sock.settimeout(left)
        while True:
            try:
                return self.sock.recv_into(b)
            except InterruptedError:
                continue


def gone_message(url: str, exc: BaseException, job: bool, retry: BaseException | None = None) -> str:
    """What the client says of a server that closed the connection without an answer after it got the request
    (`exc`; `retry`: what a second try on a fresh connection met); `job`: the request makes a job."""
    how = "closed the connection" if isinstance(exc, ServerClosed) else f"reset the connection ({_why(exc)})"
    then = f"; connecting again: {_why(retry)}" if retry is not None else ""
    fate = "; the job's fate is unknown and it was not sent again: see the server's log" if job else ""
    return f"the prover server at {url} went away while working on this request (it {how} without an answer: " \
           f"stopped or crashed?{then}){fate}"


def lost_job_message(job_id: str, message: str) -> str:
    return (f"job {job_id}: {message}; its fate is unknown: ask for it once the server answers again "
            f"(job({job_id!r}), GET /v1/jobs/{quote(job_id)}; a server that was restarted no longer knows it)")


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def dropped(sock) -> bool:
    """Whether an idle kept connection was closed by the server (its end readable before any request): found
    before a request is sent on it, so that it goes on a fresh one and is never sent twice."""
    import select  # noqa: PLC0415 - built in; not on a first request's path

    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def gist(raw: bytes, limit: int = 120) -> str:
    """A body as a short line: an HTML page's title, else its text without tags, whitespace collapsed."""
    text = raw[:4096].decode(errors="replace")
    if "<" in text:
        import re  # noqa: PLC0415 - an error's path only

        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        text = title.group(1) if title else re.sub(r"<[^>]*>", " ", text)
    text = " ".join(text.split()) or "(empty)"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def with_log(target, view: dict):
    """A job's circuit log() lines (its "log", and "log_left_out": how many more the server did not keep), and
    whether its proof was checked ("verified")."""
    log, left = view.get("log"), view.get("log_left_out")
    if isinstance(view.get("verified"), bool):
        target.verified = view["verified"]
    if isinstance(log, list):
        target.log = [str(line) for line in log]
    if isinstance(left, int) and not isinstance(left, bool) and left > 0:
        target.log_left_out = left
    return target


def witness_body(witness: object) -> tuple[bytes, str, str | None]:
    """(body, content type, a name for messages) of a .wtns path, .wtns bytes, or a dict of inputs."""
    if isinstance(witness, dict):
        return json.dumps(witness).encode(), "application/json", None
    if isinstance(witness, (bytes, bytearray, memoryview)):
        return bytes(witness), "application/octet-stream", None
    if not isinstance(witness, (str, os.PathLike)):  # was os.fspath's "expected str, bytes or os.PathLike"
        raise TypeError(f"witness: a .wtns path, a .wtns file's bytes or a dict of circuit inputs, not a "
                        f"{type(witness).__name__} (values are sent as a .wtns: engine.formats.write_wtns)")
    from engine.errors import file_error  # noqa: PLC0415 - loaded by the client already

    path = os.fspath(witness)
    try:
        with open(path, "rb") as f:
            return f.read(), "application/octet-stream", path
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise file_error(path, exc, "a .wtns file") from None
