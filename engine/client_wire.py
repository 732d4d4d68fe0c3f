"""The client's HTTP/1.1, without an HTTP library: URLs, request heads, and a sans-IO response reader.

`engine.client` speaks to the prover server over a plain socket (blocking)
or asyncio streams (async); both drive the one `read_response` generator
here, so the two parse answers identically.  No http.client (it imports
email and ssl: 15 ms of a 50 ms CLI start) and no urllib: a client process
imports only socket and json beyond this.
"""
from __future__ import annotations

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
LINE, EXACT, REST = "line", "exact", "rest"  # what read_response asks its driver for
MAX_LINE = 65536


class ServerClosed(ConnectionError):
    """The server closed the connection before (or while) answering."""


class BadResponse(ValueError):
    """What came back is not an HTTP/1.1 response."""


def quote(text: str) -> str:
    """Percent-encode everything but RFC 3986's unreserved characters (a path segment or a query value)."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in str(text).encode())


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


def request_head(method: str, target: str, host: str, port: int, headers: dict[str, str], body_length: int,
                 content_type: str | None) -> bytes:
    host_header = f"[{host}]" if ":" in host else host
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host_header}:{port}", f"Content-Length: {body_length}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def read_response():
    """Sans-IO reader of one response.  Yields (LINE, None), (EXACT, n) or (REST, None) and is sent
    back a line, exactly n bytes, or the rest of the stream; returns (status, content type, body,
    keep-alive).  An empty line where the status belongs is ServerClosed (an idle connection the
    server had closed), anything malformed BadResponse."""
    status_line = yield LINE, None
    if not status_line:
        raise ServerClosed("the server closed the connection")
    if not status_line.endswith(b"\n"):
        raise ServerClosed("the server closed the connection in the middle of its answer")
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise BadResponse(f"not an HTTP/1.1 response: {status_line[:80]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    while True:
        line = yield LINE, None
        if not line.endswith(b"\n"):  # the stream ended inside the head
            raise ServerClosed("the server closed the connection in the middle of its answer")
        if line in (b"\r\n", b"\n"):
            break
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon:
            raise BadResponse(f"a malformed header line: {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
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
        body = yield EXACT, int(length)
    else:
        body = yield REST, None
        headers["connection"] = "close"
    keep = headers.get("connection", "").lower() != "close"
    return status, headers.get("content-type", ""), body, keep


def read_sync(stream) -> tuple[int, str, bytes, bool]:
    """Drive read_response over a blocking buffered binary stream (socket.makefile("rb"))."""
    reader = read_response()
    want = next(reader)
    try:
        while True:
            kind, n = want
            if kind == LINE:
                data = stream.readline(MAX_LINE)
            elif kind == EXACT:
                data = stream.read(n)
                if len(data) < n:
                    raise ServerClosed("the server closed the connection in the middle of its answer")
            else:
                data = stream.read()
            want = reader.send(data)
    except StopIteration as done:
        return done.value


async def read_async(stream) -> tuple[int, str, bytes, bool]:
    """Drive read_response over an asyncio.StreamReader."""
    import asyncio  # noqa: PLC0415

    reader = read_response()
    want = next(reader)
    try:
        while True:
            kind, n = want
            if kind == LINE:
                data = await stream.readline()
            elif kind == EXACT:
                try:
                    data = await stream.readexactly(n)
                except asyncio.IncompleteReadError:
                    raise ServerClosed("the server closed the connection in the middle of its answer") from None
            else:
                data = await stream.read()
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
