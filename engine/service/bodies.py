"""How the service reads request bodies it cannot trust: a deadline on a body that stalls or trickles, the length
of a body aiohttp decodes, and aiohttp's own parse errors as one line (and not as tracebacks in the log).

`BodyDeadline` wraps every body read (engine/service/http.py): an upload holds its place in the key's queue
while its body arrives, so a client that stops sending must not keep it for ever.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import ContentEncodingError, HttpProcessingError, TransferEncodingError

from engine.service.problems import Problem, bad_request


def decoded_length(request: web.Request) -> int | None:
    """The body's length as the handler reads it: not known where aiohttp decodes it (a Content-Encoding)."""
    if request.headers.get("Content-Encoding", "identity").strip().lower() not in ("identity", ""):
        return None
    return request.content_length


MIN_UPLOAD_RATE = 1024  # bytes/s a body must average once its first upload_timeout_s have passed


class BodyDeadline:
    """Drops a request whose body stops arriving (no byte for `upload_timeout_s`) or trickles (below
    MIN_UPLOAD_RATE on average after its first `upload_timeout_s`), with a 408: such a client held its queue
    place, its upload buffer and its connection for as long as it liked (slowloris), and a full queue refused
    everyone else.  A slow upload that keeps moving is read to its end; one that aiohttp's parser gave up on is a
    400 (`parse_error`).  One timer a quarter of the timeout apart, not one a chunk: the read loops stay as fast
    as before."""

    def __init__(self, request: web.Request, timeout: float):
        self.timeout = timeout
        self.stream, self.length = request.content, decoded_length(request)
        self.protocol = request.protocol
        self.status, self.why = 408, None  # why: set when the request is to be dropped
        self.handle: asyncio.TimerHandle | None = None

    def __enter__(self) -> "BodyDeadline":
        if self.timeout:  # as asyncio.timeout does it, at a third of its cost (the latency HTTP adds: issue 16)
            self.task, self.loop = asyncio.current_task(), asyncio.get_running_loop()
            self.start = self.moved = self.loop.time()
            self.seen = self.stream.total_bytes
            self._again()
        return self

    def _again(self) -> None:
        self.due = self.loop.time() + self.timeout / 4
        self.handle = self.loop.call_at(self.due, self._tick)

    def _tick(self) -> None:
        self.handle = None
        if self.stream.is_eof():
            return
        now, got = self.loop.time(), self.stream.total_bytes
        late = now - self.due  # the event loop was busy (none of the client's bytes could be read): not its silence
        self.moved, self.start = self.moved + late, self.start + late
        if got != self.seen:
            self.seen, self.moved = got, now
        of = f" of {self.length}" if self.length is not None else ""
        if (broken := parse_error(self.protocol)) is not None:
            self.status, self.why = 400, f"the request body cannot be read: {broken}"
        elif now - self.moved >= self.timeout:
            self.why = (f"the request body stopped arriving: no byte for {self.timeout:g} s, after {got}{of} bytes; "
                        "the request was dropped")
        elif now - self.start > self.timeout and got < MIN_UPLOAD_RATE * (now - self.start - self.timeout):
            self.why = (f"the request body arrives too slowly: {got}{of} bytes in {now - self.start:.1f} s (the "
                        f"least is {MIN_UPLOAD_RATE} bytes/s after the first {self.timeout:g} s); the request was "
                        "dropped")
        if self.why is not None:
            self.task.cancel()  # the task waits in a read inside the block: the CancelledError comes there
        else:
            self._again()

    def __exit__(self, kind: type | None, *exc: Any) -> None:
        if self.handle is not None:
            self.handle.cancel()
        # ours alone (not also a disconnect's, which aiohttp cancels the handler for): a 408
        if self.why is not None and kind is asyncio.CancelledError and self.task.uncancel() == 0:
            if self.status == 400:
                raise bad_request(self.why) from None
            raise Problem(408, "upload_timeout", self.why) from None


def parse_error(protocol: Any) -> str | None:
    """What aiohttp's C parser met in a body it was reading (a chunk size that is not hex, a gzip body that does
    not decode): it queues its 400 for after this request and never tells the request's stream, whose reader
    would wait for ever (now: until the upload timeout).  Private to aiohttp: None where it is not there."""
    for message, _ in getattr(protocol, "_messages", None) or ():
        if type(message).__name__ == "_ErrInfo":
            return payload_problem(getattr(message, "exc", None), getattr(message, "message", ""))
    return None


def payload_problem(exc: BaseException | None, text: str) -> str:
    """aiohttp's reason a body cannot be read, as one line ("deflate" alone says little)."""
    if isinstance(exc, ContentEncodingError):
        return "it does not decode as its Content-Encoding says"
    text = " ".join(str(text).split()).rstrip(" ^")[:200]  # the C parser's messages end with a caret line
    if isinstance(exc, TransferEncodingError):
        return f"a malformed chunk ({text})" if text else "a malformed chunk"
    return text or "malformed"


def not_http(record: logging.LogRecord) -> bool:
    """aiohttp logs the traceback of every request its parser refuses (a bad request line, an 8 KiB header): the
    client already has its 400 naming the problem, and any client could fill the server's log with them."""
    return not (record.exc_info and isinstance(record.exc_info[1], HttpProcessingError))
