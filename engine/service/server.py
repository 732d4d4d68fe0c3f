"""The `serve` process: one Engine, the Service in front of it, an aiohttp listener, and the signals.

SIGTERM, SIGHUP, SIGQUIT or a first SIGINT: stop admitting (503, /healthz says
"draining"), let the queued and running jobs finish and their clients read the
answers (pollers included), then close the listener and the engine.  A second
SIGINT: cancel every job now and exit (130).  A third: leave at once.  SIGHUP
(a closed terminal) and SIGQUIT (Ctrl-\\) killed the server where it stood, its
admitted jobs lost; one the process was started ignoring (nohup) stays ignored.
Before the engine has started (nothing admitted), any of them ends serve at once: "interrupted [by SIGTERM]"
and 128 + the signal, as for `prove`.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from typing import Any, Callable

import anyio
from aiohttp import web

from engine import interrupts
from engine.api import Engine
from engine.config import EngineConfig
from engine.errors import EngineError
from engine.service import start_signals
from engine.service.core import Service
from engine.service.http import build_app
from engine.service.metrics import Metrics
from engine.service.settings import ServiceConfig

log = logging.getLogger("engine.service")


async def serve(engine_config: EngineConfig, config: ServiceConfig, tokens: list[str],
                announce: Callable[[str], None] | None = None, make_engine: Callable[..., Any] = Engine,
                interrupt_start: bool = False) -> int:
    """Serve until a signal; returns the exit status (0 after a drain, 130 after an interrupt).

    `make_engine(engine_config, on_event=...)` gives the engine (an async context manager);
    perf/instant_serve.py passes a test double there to time the service and the wire alone.
    `interrupt_start` (the CLI, which owns the process): until the engine has started, Ctrl-C (and the stop
    signals, engine/interrupts.py) end serve with KeyboardInterrupt: raised in our own code (the asyncio Runner's
    cancellation alone waited forever behind a blocking call on this thread, a --timeline FIFO's open()), this
    task cancelled where the loop's or a library's code runs (engine/service/start_signals.py).
    """
    announce = announce or _say
    metrics = Metrics()
    stop = asyncio.Event()
    state = {"signals": 0, "forced": False}
    service: Service | None = None
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    if interrupt_start:
        start_signals.begin(task)

    def on_signal(signum: int) -> None:
        name = signal.Signals(signum).name
        if state["signals"] and signum != signal.SIGINT:  # a repeated stop signal still means drain, never "leave now"
            announce(f"engine serve: {name}: already draining (a second Ctrl-C cancels every job)")
            return
        state["signals"] += 1
        if state["signals"] == 1:
            announce(f"engine serve: {name}: draining (no new jobs; waiting for the ones admitted)")
            stop.set()
        elif state["signals"] == 2 and signum == signal.SIGINT:
            announce("engine serve: second SIGINT: cancelling every job and exiting")
            state["forced"] = True
            if service is not None:
                service.cancel_all("the server was interrupted {where} it ran")
        elif state["signals"] >= 3:
            os._exit(130)

    keep_heap()
    listener = listen(config.host, config.port)  # before the engine starts: a taken port fails at once
    port = listener.getsockname()[1]
    handled = (signal.SIGTERM, signal.SIGINT, *_drain_signals())
    try:
        async with make_engine(engine_config, on_event=metrics.on_event) as eng:
            # Only now: while the engine starts (kernels compiled, a --timeline FIFO opened on this thread) a
            # signal stops serve as it stops `prove` (engine/interrupts.py: 128 + it), nothing admitted yet; the
            # loop's own handlers could not even run while an open() waited on this thread.
            if interrupt_start:
                await start_signals.started()
            for signum in handled:
                loop.add_signal_handler(signum, on_signal, signum)
            async with anyio.create_task_group() as tg:
                service = Service(eng, config, metrics, tg)
                runner = web.AppRunner(build_app(service, tokens), handler_cancellation=True, access_log=None,
                                       shutdown_timeout=5.0, keepalive_timeout=config.idle_timeout_s or 1e9)
                await runner.setup()
                try:
                    await web.SockSite(runner, listener).start()
                    backend = getattr(eng.devices[0].backend, "name", "?") if eng.devices else "?"
                    announce(f"engine serve: listening on http://{_url_host(config.host)}:{port} "
                             f"(backend {backend}, {len(eng.devices)} device(s), {service.queue.slots} job slots, "
                             f"auth {'on' if tokens else 'off'})")
                    await stop.wait()
                    await service.drain()
                finally:
                    await runner.cleanup()  # pollers have read their answers; idle connections close
                    service.close()
    except asyncio.CancelledError:
        if not (interrupt_start and start_signals.cancelled()):
            raise
        task.uncancel()  # (the Runner's own Ctrl-C does the same)
        raise KeyboardInterrupt from None
    finally:
        listener.close()
        for signum in handled:
            loop.remove_signal_handler(signum)
        if interrupt_start:  # Ctrl-C from here leaves at once (a KeyboardInterrupt in the Runner's close could
            start_signals.end()  # skip the loop's stopping of anyio's worker threads, which the exit then waited for)
            interrupts.exit_on_another()
        # Already on the way out: a SIGTERM (SIGHUP, SIGQUIT) now must not cut the exit short (the default
        # action would leave the CPU pool's workers behind, which are stopped at interpreter exit).
        for signum in handled:
            if signum != signal.SIGINT:
                signal.signal(signum, signal.SIG_IGN)
    announce("engine serve: stopped")
    return 130 if state["forced"] else 0


def _drain_signals() -> tuple:
    """SIGHUP and SIGQUIT where this platform has them, unless the process was started ignoring them (nohup)."""
    found = (getattr(signal, name, None) for name in ("SIGHUP", "SIGQUIT"))
    return tuple(s for s in found if s is not None and signal.getsignal(s) is not signal.SIG_IGN)


# glibc's malloc: blocks below this come from the heap, not a fresh mmap each; free heap is given back
# to the kernel only above the trim threshold.
MMAP_THRESHOLD, TRIM_THRESHOLD = 16 << 20, 64 << 20


def keep_heap() -> bool:
    """Stop glibc from giving each request's memory back to the kernel and faulting it in again.

    The event loop receives an upload as 256 KiB bytes objects; by default glibc maps each with
    mmap, or trims the heap once a request's chunks are freed, so every upload's pages are
    faulted in afresh: measured on loopback (2-core VM), a 2 MiB upload spent 1.6 ms in the
    server where, with the heap kept, it takes 0.25 ms (perf/RESULTS.md).  The cost: up to
    TRIM_THRESHOLD of freed heap stays with the process.  Not on other C libraries, and not where
    the operator tuned malloc through its MALLOC_*_ environment variables.
    """
    if any(name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    try:
        import ctypes  # noqa: PLC0415

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD)) and bool(mallopt(m_trim_threshold, TRIM_THRESHOLD))


def listen(host: str, port: int) -> socket.socket:
    """The listening socket; a taken port or an address not on this machine is one clear error."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family, backlog=1024, reuse_port=False)
    except OSError as exc:
        raise EngineError(f"cannot listen on {_url_host(host)}:{port}: {exc.strerror or exc}") from None


def _say(line: str) -> None:
    """A line on stderr.  A reader that left (`serve 2>&1 | head -1`) made the "draining" line a BrokenPipeError
    that ended the signal handler before the drain began: no SIGTERM could stop the server."""
    try:
        sys.stderr.write(line + "\n")  # in one write: the server's threads log too
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
