"""One Engine inside one Ray actor process: the actor's methods are the Engine's, errors come back packed.

The actor is an async actor: its methods run as tasks on the actor's own
event loop, so one actor serves many jobs at once, the way one Engine does.
The Engine's `async with` block lives in a task of its own (`_serve`): an
anyio task group must be left by the task that entered it, and `start` and
`close` arrive as two different calls.

Keys are loaded on first use (a job names its key by a `KeySpec`, and the
actor loads it if it has not yet) and stay resident until the actor closes.
A key loaded on first use must be the key the cluster loaded from that path
(its identity, taken at the cluster's first load): a file replaced since
would otherwise make proofs of another key under the same ClusterKey.
Nothing here raises to Ray: every error returns as a `Failure` (see
transport.py), so the caller gets the Engine's own exception type.
"""
from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass
from typing import Any

from engine.distributed.transport import RAY_LOG_CHARS, RAY_LOG_LINES, Failure, Logged, failure
from engine.errors import InputFileError
from engine.jobs import key_info


@dataclass(frozen=True)
class KeySpec:
    """How an actor loads a key it has not seen: the same arguments as `Engine.load_key`."""

    id: int
    path: str
    wasm: str | None = None
    label: str | None = None
    identity: tuple | None = None  # what the first engine loaded (key_identity); None for that first load


class EngineActor:
    """The actor class (wrapped by `ray.remote` in cluster.py, so this module imports without Ray)."""

    def __init__(self, config: Any, index: int):
        self._config = config
        self.index = index
        self._engine: Any = None
        self._ready: asyncio.Future | None = None
        self._stop: asyncio.Event | None = None
        self._serving: asyncio.Task | None = None
        self._keys: dict[int, Any] = {}
        self._key_locks: dict[int, asyncio.Lock] = {}
        self.proofs = 0
        self.loads = 0  # keys loaded (each once: they stay resident)

    # ---- lifecycle
    async def start(self) -> dict | Failure:
        """Enter the Engine; where it runs: pid, host, Ray node and devices."""
        loop = asyncio.get_running_loop()
        self._ready, self._stop = loop.create_future(), asyncio.Event()
        self._serving = asyncio.create_task(self._serve())
        error = await self._ready
        if error is not None:
            return failure(error)
        return {"pid": os.getpid(), "host": socket.gethostname(), "node": _node_id(),
                "devices": [w.index for w in self._engine.devices],
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}

    async def _serve(self) -> None:
        from engine.api import Engine  # noqa: PLC0415

        try:
            async with Engine(self._config) as engine:
                self._engine = engine
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to start() or, once running, to close()
            if not self._ready.done():
                self._ready.set_result(exc)
                return
            raise

    async def close(self) -> None | Failure:
        """Drain the Engine's jobs and leave its block (pools, device threads, backends stop)."""
        if self._serving is None:
            return None
        self._stop.set()
        try:
            await self._serving
        except Exception as exc:
            return failure(exc)
        finally:
            from scheduler import cpu_pool  # noqa: PLC0415

            cpu_pool.shutdown()  # the process-wide epilogue pool outlives the Engine: not the actor
        return None

    async def wait_closed(self) -> None:
        """Returns when the actor closes; the driver keeps one pending to learn of the actor's death at once."""
        while self._stop is None:
            await asyncio.sleep(0.05)
        await self._stop.wait()

    # ---- the Engine's calls
    async def load_key(self, spec: KeySpec) -> dict | Failure:
        try:
            handle = await self._key(spec)
        except Exception as exc:
            return failure(exc)
        return {**key_info(handle), "identity": key_identity(handle)}  # what ClusterKey mirrors, and checks

    async def prove(self, spec: KeySpec, *items: Any) -> list[Any] | Logged | Failure:
        """One job of len(items) proofs, as Engine.prove(partitions=[...]).

        Each item arrives as its own argument, so Ray resolves each object reference here,
        fetching the witness from the object store of whichever node holds it."""
        try:
            handle = await self._key(spec)
        except Exception as exc:  # the driver sends the job where the key is resident
            return failure(exc, loading=True)
        from engine.service.jobs import JobLog, collecting  # noqa: PLC0415

        log = JobLog(RAY_LOG_LINES, RAY_LOG_CHARS)  # the circuit's log() lines: sent back with the job
        try:
            with collecting(log):
                proofs = await self._engine.prove(handle, partitions=list(items))
        except Exception as exc:
            return failure(exc, log=log)
        self.proofs += len(proofs)
        return Logged(proofs, log) if log.lines or log.left_out else proofs

    async def unload_key(self, key_id: int) -> None | Failure:
        """Release a key the driver has no more jobs of (nothing when it was never loaded here)."""
        handle = self._keys.pop(key_id, None)
        self._key_locks.pop(key_id, None)
        if handle is None:
            return None
        try:
            await self._engine.unload_key(handle)
        except Exception as exc:
            return failure(exc)
        return None

    async def stats(self) -> dict:
        return {**self._engine.stats(), "proofs": self.proofs, "keys": len(self._keys), "loads": self.loads,
                "pid": os.getpid()}

    async def pid(self) -> int:
        return os.getpid()

    async def _key(self, spec: KeySpec) -> Any:
        if spec.id in self._keys:
            return self._keys[spec.id]
        lock = self._key_locks.setdefault(spec.id, asyncio.Lock())
        async with lock:  # concurrent first jobs of one key load it once
            if spec.id not in self._keys:
                handle = await self._engine.load_key(spec.path, wasm=spec.wasm, label=spec.label)
                if spec.identity is not None and key_identity(handle) != spec.identity:
                    await self._engine.unload_key(handle)
                    raise InputFileError(spec.path, "is not the key the cluster loaded from it (the file has "
                                                    "changed since): load it again")
                self._keys[spec.id] = handle
                self.loads += 1
        return self._keys[spec.id]


def key_identity(handle: Any) -> tuple:
    """What a loaded key is beyond its path: its shape and, for a zkey, the hash of its header and sampled
    content that the key cache keys it by."""
    data = getattr(getattr(handle, "_record", None), "data", None)
    sha = getattr(getattr(data, "zkey", None), "sha", None)
    return (handle.curve, handle.n_vars, handle.n_public, handle.domain_size, bytes(sha).hex() if sha else None)


def _node_id() -> str | None:
    try:
        import ray  # noqa: PLC0415

        return ray.get_runtime_context().get_node_id()
    except Exception:  # outside Ray (unit tests drive the class directly)
        return None
