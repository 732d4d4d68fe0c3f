"""`RayCluster`: Engines as Ray actors (one per GPU, or N of them) behind the Engine's own async API.

    async with RayCluster(address=None, engines=2, config=EngineConfig(backend="cpu")) as cluster:
        key = await cluster.load_key("circuit.zkey", wasm="circuit.wasm")
        proof = await cluster.prove(key, {"a": 3, "b": 11})      # an engine.Proof
        async for r in cluster.prove_stream(key, witnesses):      # engine.StreamResult
            ...

The driver (this process) keeps the queue and the placement (placement.py)
and feeds a stream's items (stream.py); each actor runs one `Engine`
(actor.py).  A job is one call of the actor's `prove` with the job's
witnesses as object-store references: put once by the driver (or given as
references by the caller), fetched by the actor's node, and passed again by
reference when the job is retried.

Faults: when an actor dies (its process killed, its node lost) every job it
held goes once more to another engine; a job whose engine dies twice fails
with `EngineLostError`.  Errors an engine raises (a bad witness, a bad key)
are not retried: they come back as the exception a local Engine raises.  An
engine that cannot load a key another engine loaded (the file missing on its
node, or changed since) gets no more jobs of that key; its job goes elsewhere.
Leaving the block by an error cancels the jobs: their awaiters get
EngineClosedError, as from a local Engine.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterable, AsyncIterator, Iterable, Sequence

from engine.jobs import KeyInfo, check_loop, checked_config, job_items, stream_limit, witness_items
from engine.config import EngineConfig
from scheduler.compute_share import AUTO_SLOTS
from engine.distributed import connection, stream
from engine.distributed.actor import EngineActor, KeySpec
from engine.distributed.connection import import_ray, resources as _resources, start_local_ray  # noqa: F401
from engine.distributed.placement import EngineSlot, Placement
from engine.distributed.transport import Failure, first_line as _first_line, received, task_error as _task_error, unpack
from engine.errors import (
    BackendUnavailableError,
    EngineClosedError,
    EngineError,
    EngineLostError,
    EngineStartError,
)

log = logging.getLogger("engine.distributed")
CLOSE_TIMEOUT_S = 60.0  # an engine's close (its jobs drained on the driver already), after which it is ended


@dataclass(eq=False)
class ClusterKey(KeyInfo):
    """A key loaded into a cluster: an engine's KeyHandle's public fields (KeyInfo), resident where it has
    been used."""

    _spec: KeySpec = field(repr=False, default=None)
    _cluster: "RayCluster" = field(repr=False, default=None)

    @property
    def engines(self) -> tuple[int, ...]:
        """The engines it is resident on (or loading on) now."""
        return tuple(s.index for s in self._cluster._placement.alive() if self._spec.id in s.keys)


@dataclass
class _Engine:
    slot: EngineSlot
    actor: Any
    info: dict = field(default_factory=dict)  # where it runs, once its Engine has started
    watcher: asyncio.Task | None = None


class RayCluster:
    """Engines as Ray actors; see the module docstring."""

    def __init__(
        self,
        address: str | None = None,
        engines: int | str = 1,
        config: EngineConfig | None = None,
        *,
        window: int | None = None,
        cpus_per_engine: float = 1,
        gpus_per_engine: float | None = None,
        ray_init: dict | None = None,
        start_timeout_s: float = 120.0,
    ):
        """address: None starts a local Ray instance (or uses the one this process is connected to),
        "auto" joins the cluster of this node, "ray://host:port" connects as a Ray client.
        engines: a count, or "per-gpu" (one engine actor per GPU of the cluster, each seeing one GPU).
        window: proofs in flight one engine may hold (default: twice what its pipeline runs at once).
        ray_init: more keyword arguments for ray.init (num_cpus, object_store_memory, runtime_env...)."""
        if not (engines == "per-gpu" or (_is_number(engines, int) and engines >= 1)):
            raise EngineError(f"engines: {engines!r} is not a count >= 1 or 'per-gpu'")
        # each checked here: a bad one was a TypeError at the first job, or Ray's words at the start
        if window is not None and not (_is_number(window, int) and window >= 1):
            raise EngineError(f"window: {window!r} is not a count >= 1")
        for name, value in (("cpus_per_engine", cpus_per_engine), ("gpus_per_engine", gpus_per_engine)):
            if (value is not None or name == "cpus_per_engine") and not (_is_number(value) and 0 <= value < 1e9):
                raise EngineError(f"{name}: {value!r} is not a number >= 0")
        if not (_is_number(start_timeout_s) and start_timeout_s > 0):
            raise EngineError(f"start_timeout_s: {start_timeout_s!r} is not a number of seconds > 0")
        self.address = connection.checked_address(address)
        self.config = checked_config(config, "RayCluster")
        self._engines_wanted = engines
        self._window = window
        self._cpus = cpus_per_engine
        self._gpus = gpus_per_engine
        self._ray_init = dict(ray_init or {})
        self._start_timeout_s = start_timeout_s
        self._state = "new"
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop that entered it: its calls come from there
        self._ray = None
        self._owns_ray = False
        self._engines: list[_Engine] = []
        self._placement: Placement | None = None
        self._changed: asyncio.Condition | None = None
        self._jobs: set[asyncio.Task] = set()
        self._aborting = False  # leaving the block cancels the jobs: their awaiters get EngineClosedError
        self._lifeline, self._gcs_watch = connection.Lifeline(), None  # its GCS (gone: why), and that GCS's watch
        self._unloadable: dict[int, dict[int, bytes]] = {}  # key id -> engine -> why it could not load it
        self._key_jobs: dict[int, set[asyncio.Task]] = {}  # key id -> its jobs in flight (unload_key waits)
        self._unloaded: set[int] = set()
        self._key_ids = 0
        self.retries = 0
        self.lost: list[dict] = []  # the engines that died: index, host, pid, why

    # ---- lifecycle
    async def __aenter__(self) -> "RayCluster":
        if self._state != "new":
            raise EngineClosedError("a RayCluster can be entered once")
        self._state = "starting"
        self._loop = asyncio.get_running_loop()
        try:
            await self._start()
        except BaseException as exc:
            await self._stop(drain=False)
            self._state = "closed"
            if isinstance(exc, Exception) and not isinstance(exc, EngineError):
                raise EngineStartError(f"the Ray cluster could not start: {type(exc).__name__}: {exc}") from exc
            raise
        self._state = "open"
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self._state = "closing"
        try:
            await self._stop(drain=exc_type is None)
        finally:
            self._state = "closed"

    async def _start(self) -> None:
        ray = self._ray = import_ray()
        self._owns_ray = await connection.joined(self.address, self._ray_init)
        self._gcs_watch = connection.watch_gcs(ray, self._gcs_gone)
        count = self._engine_count(ray)
        gpus = self._gpus if self._gpus is not None else (
            1 if self._engines_wanted == "per-gpu" or self.config.backend == "gpu" else 0)
        have = ray.cluster_resources()
        if gpus and count * gpus > int(have.get("GPU", 0)):  # such actors would wait for GPUs forever: say so now
            raise BackendUnavailableError(
                f"{count} engine(s) of {gpus:g} GPU each need {count * gpus:g} GPU(s); the Ray cluster has "
                f"{_resources(ray)}")
        if count * self._cpus > have.get("CPU", 0) + 1e-9:  # and for CPUs
            raise EngineStartError(
                f"{count} engine(s) of {self._cpus:g} CPU each need {count * self._cpus:g} CPU(s); the Ray cluster "
                f"has {_resources(ray)} (ask for fewer engines, or fewer CPUs per engine)")
        actor_class = ray.remote(EngineActor)
        self._changed = asyncio.Condition()
        self._placement = Placement([self._window or _default_window(self.config)] * count)
        for slot in self._placement.slots:
            actor = actor_class.options(
                num_cpus=self._cpus, num_gpus=gpus, max_restarts=0, max_concurrency=1000,
                scheduling_strategy="SPREAD", name=None,
            ).remote(self.config, slot.index)
            self._engines.append(_Engine(slot, actor))
        # through the lifeline: a GCS gone meanwhile fails the start, where Ray would end this process for it
        starts = [self._lifeline.answer(e.actor.start.remote(), "the engines' start") for e in self._engines]
        try:
            async with asyncio.timeout(self._start_timeout_s):  # not wait_for: an interrupted start left its
                infos = await asyncio.gather(*starts)  # gather's error unretrieved, printed at exit
        except TimeoutError:
            raise EngineStartError(
                f"{count} engine actor(s) of {self._cpus} CPU and {gpus} GPU each did not start within "
                f"{self._start_timeout_s:.0f} s; the cluster has {_resources(ray)}"
            ) from None
        except ray.exceptions.RayActorError as exc:
            raise EngineStartError(f"an engine actor died while starting: {_first_line(exc)}") from None
        for engine, info in zip(self._engines, infos):
            if not isinstance(info, Failure):  # started: closed in good order if another one failed
                engine.info = info
                engine.watcher = asyncio.create_task(self._watch(engine))
        for info in infos:
            if isinstance(info, Failure):
                raise unpack(info.packed)

    def _engine_count(self, ray) -> int:
        if self._engines_wanted != "per-gpu":
            return int(self._engines_wanted)
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if gpus < 1:
            raise BackendUnavailableError(f"engines='per-gpu': the Ray cluster has no GPU ({_resources(ray)})")
        return gpus

    async def _stop(self, *, drain: bool) -> None:
        try:
            if drain:
                while self._jobs:
                    await asyncio.gather(*list(self._jobs), return_exceptions=True)
            else:
                self._aborting = True
                for task in list(self._jobs):
                    task.cancel()
                await asyncio.gather(*list(self._jobs), return_exceptions=True)
            # only engines whose Engine started: an actor Ray has not placed would never answer `close`
            alive = [e for e in self._engines if e.slot.alive and e.info and self._lifeline.why is None]
            try:  # an actor whose loop is stuck (a key's file a pipe nobody writes) never answers: killed below
                async with asyncio.timeout(CLOSE_TIMEOUT_S):
                    done = await asyncio.gather(*(e.actor.close.remote() for e in alive), return_exceptions=True)
            except TimeoutError:
                log.warning("engine(s) did not close within %g s: ended", CLOSE_TIMEOUT_S)
                done = []
            for engine, result in zip(alive, done):
                if isinstance(result, Failure):
                    log.warning("engine %d: %s", engine.slot.index, unpack(result.packed))
        finally:  # even when the wait above is cancelled (a second Ctrl-C): no actor, no Ray left behind
            if self._gcs_watch is not None:
                self._gcs_watch.cancel()
            for engine in self._engines:
                if engine.watcher is not None:
                    engine.watcher.cancel()
                try:
                    self._ray.kill(engine.actor, no_restart=True)
                except Exception:  # already gone
                    pass
            self._engines.clear()
            if self._owns_ray:
                self._owns_ray = False
                connection.leave()

    def _gcs_gone(self, why: str) -> None:
        """The cluster's GCS stopped answering: its jobs fail now, before Ray ends this process for it."""
        self._lifeline.lost(why)
        log.warning("%s; its jobs fail", why)
        for task in list(self._jobs):
            task.cancel()

    async def _watch(self, engine: _Engine) -> None:
        """Learns of an actor's death as it happens, not only when a job is next sent there."""
        try:
            await engine.actor.wait_closed.remote()
        except asyncio.CancelledError:
            raise
        except self._ray.exceptions.RayActorError as exc:
            await self._lose(engine, exc)
        except Exception as exc:  # noqa: BLE001 - any other failure of the call also means it is gone
            await self._lose(engine, exc)

    async def _lose(self, engine: _Engine, why: BaseException) -> None:
        if not engine.slot.alive or self._state == "closed":  # the close ended it: not a loss
            return
        self._placement.lost(engine.slot)
        self.lost.append({"index": engine.slot.index, "host": engine.info.get("host"),
                          "pid": engine.info.get("pid"), "why": _first_line(why)})
        log.warning("engine %d (pid %s on %s) is gone: %s; %d engine(s) left", engine.slot.index,
                    engine.info.get("pid"), engine.info.get("host"), _first_line(why), len(self._placement.alive()))
        try:
            self._ray.kill(engine.actor, no_restart=True)
        except Exception:
            pass
        async with self._changed:
            self._changed.notify_all()

    # ---- keys
    async def load_key(self, path: Any, *, wasm: Any = None, label: str | None = None) -> ClusterKey:
        """Read the key on one engine (its errors are the Engine's); other engines load it on first use."""
        self._check_open()
        self._key_ids += 1
        # absolute: an actor's working directory is not the driver's (a shared filesystem's path is)
        spec = KeySpec(self._key_ids, _absolute(path), None if wasm is None else _absolute(wasm), label)
        name = label or (os.path.basename(spec.path) if isinstance(spec.path, str) else "the key")
        while True:
            engine = await self._take(0, spec.id, job=name)
            started = time.monotonic()
            call = engine.actor.load_key.remote(spec)
            try:
                result = await self._lifeline.answer(call, name)
            except asyncio.CancelledError:  # nobody will have this key: not left resident there (as an Engine)
                engine.slot.keys.discard(spec.id)
                try:
                    self._ray.cancel(call)  # a load under way undoes itself
                    engine.actor.unload_key.remote(spec.id)  # one that ended meanwhile is unloaded
                except Exception:  # noqa: BLE001 - the actor gone: its keys with it
                    pass
                raise
            except self._ray.exceptions.RayActorError as exc:
                if self._state == "closed":  # ended by the close, not lost
                    raise EngineClosedError(f"{name}: the cluster shut down while the key was loading") from None
                await self._lose(engine, exc)
                continue  # loading is idempotent: try the next engine
            finally:
                self._placement.returned(engine.slot, 0, completed=False)
                await self._notify()
            if isinstance(result, Failure):
                engine.slot.keys.discard(spec.id)
                raise unpack(result.packed)
            self._placement.key_loaded(spec.id, time.monotonic() - started)
            identity = tuple(result.pop("identity"))  # the other engines' loads must find this same key
            return ClusterKey(**result, _spec=dataclasses.replace(spec, identity=identity), _cluster=self)

    async def unload_key(self, key: ClusterKey) -> None:
        """Wait for the key's jobs, then release it on every engine that holds it (as Engine.unload_key)."""
        if self._state not in ("closing", "closed"):  # while closing its engines are still there: as while open
            self._check_open()
        key_id = getattr(getattr(key, "_spec", None), "id", None)
        if key_id in self._unloaded and key._cluster is self:
            return  # unloaded already: nothing left to release, as an Engine's second unload
        self._check_key(key, "unload_key")
        if self._state == "closed":  # the close released every key: nothing to do, as on an Engine
            return
        while self._key_jobs.get(key_id):
            await asyncio.gather(*list(self._key_jobs[key_id]), return_exceptions=True)
        self._unloaded.add(key_id)  # no await since the wait: no job of it is in flight, none can start
        self._key_jobs.pop(key_id, None)
        holders = [e for e in self._engines if e.slot.alive and key_id in e.slot.keys]
        for engine in holders:
            engine.slot.keys.discard(key_id)
        self._unloadable.pop(key_id, None)
        done = await asyncio.gather(*(e.actor.unload_key.remote(key_id) for e in holders), return_exceptions=True)
        for engine, result in zip(holders, done):
            if isinstance(result, Failure):
                raise unpack(result.packed)
            if isinstance(result, self._ray.exceptions.RayActorError):
                await self._lose(engine, result)  # gone, and the key with it

    def _check_key(self, key: Any, who: str) -> None:
        if not isinstance(key, ClusterKey):
            raise TypeError(f"{who}: the key is what cluster.load_key returned, not {type(key).__name__} {key!r:.60}")
        if key._cluster is not self or key._spec.id in self._unloaded:
            raise EngineError(f"{key.label}: this key is not loaded in this cluster (use cluster.load_key)")

    # ---- proving
    async def prove(self, key: ClusterKey, witness: Any = None, *, partitions: Sequence[Any] | None = None) -> Any:
        """One proof of `witness`, or (partitions=[...]) one job of several proofs on one engine, in order.

        Witnesses are what Engine.prove takes (a .wtns path readable by the engines' nodes, an inputs
        dict, a Witness, (m, 4) uint64 values) or Ray object references to one of those."""
        items = job_items(witness, partitions)
        results = await self._job(key, items)
        return results[0] if partitions is None else results

    async def prove_stream(
        self,
        key: ClusterKey,
        items: Iterable[Any] | AsyncIterable[Any],
        *,
        max_in_flight: int | None = None,
        ordered: bool = False,
    ) -> AsyncIterator[Any]:
        """As Engine.prove_stream: one engine.StreamResult per item, as they finish (or in order).

        A failure is a StreamResult with `error`; the stream goes on.  Leaving early cancels the rest.  An item's
        slot comes back when the reader takes its result (as on an Engine): items in flight and results waiting
        for the reader, or held back for an earlier one, are `max_in_flight` at most together."""
        self._check_open()
        self._check_key(key, "prove")  # an Engine's stream names its check as prove's
        witness_items(items, "prove_stream's items")
        limit = stream_limit(max_in_flight, self.config.max_in_flight * max(1, len(self._placement.alive())))
        flow = stream.results(lambda item: self._job(key, [item]), items, limit, ordered)
        async with contextlib.aclosing(flow):  # leaving early cancels the items in flight
            async for result in flow:
                yield result

    async def _job(self, key: ClusterKey, items: list[Any]) -> list[Any]:
        """Run one job as a task of the cluster (so that leaving the block drains it)."""
        self._check_open()
        self._check_key(key, "prove")
        ray = self._ray
        refs = [item if isinstance(item, ray.ObjectRef) else _put(ray, item) for item in items]
        theirs = any(isinstance(item, ray.ObjectRef) for item in items)
        task = asyncio.create_task(self._closing(key, refs, theirs))
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)
        of_key = self._key_jobs.setdefault(key._spec.id, set())
        of_key.add(task)
        task.add_done_callback(of_key.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()  # the caller gave up: so does the job (the actor's Engine cancels it too)
            raise

    async def _closing(self, key: ClusterKey, refs: list[Any], theirs: bool) -> list[Any]:
        """The job; cancelled by the block's end, it fails as a local Engine's job does then (not with a
        CancelledError in a task nobody cancelled)."""
        try:
            return await self._run(key, refs, theirs)
        except asyncio.CancelledError:
            if self._lifeline.why is not None:
                raise EngineLostError(f"{key.label}: {self._lifeline.why}") from None
            if self._aborting:
                raise EngineClosedError(f"{key.label}: a job of {len(refs)} proof(s) was cancelled because the "
                                        "cluster shut down") from None
            raise

    async def _run(self, key: ClusterKey, refs: list[Any], theirs: bool) -> list[Any]:
        """theirs: some of refs are the caller's ObjectRefs (a Ray task's witness, which may have failed)."""
        ray = self._ray
        n = len(refs)
        deaths: list[str] = []
        retried = 0
        while True:
            engine = await self._take(n, key._spec.id, job=key.label, deaths=deaths)
            if len(deaths) > retried:  # sent again after a death: a retry (not when no engine was left to take it)
                retried = len(deaths)
                self.retries += 1
            call = engine.actor.prove.remote(key._spec, *refs)
            completed = False
            try:
                result = received(await call)  # the job's circuit log lines logged here (transport.py)
                completed = not isinstance(result, Failure)
            except asyncio.CancelledError:
                ray.cancel(call)
                raise
            except ray.exceptions.RayActorError as exc:
                deaths.append(f"engine {engine.slot.index} ({_first_line(exc)})")
                await self._lose(engine, exc)
                if len(deaths) >= 2:
                    raise EngineLostError(
                        f"{key.label}: a job of {n} proof(s) was lost: its engine died twice: {'; '.join(deaths)}"
                    ) from None
                continue
            except ray.exceptions.RayTaskError as exc:  # the actor's methods never raise: an argument failed
                raise _task_error(key, exc, theirs) from None
            except ray.exceptions.RayError as exc:
                raise EngineError(f"{key.label}: Ray could not run the job: {_first_line(exc)}") from None
            finally:
                self._placement.returned(engine.slot, n, completed=completed)
                await self._notify()
            if isinstance(result, Failure):
                if result.loading and self._cannot_load(key, engine, result):
                    continue  # an engine that holds the key takes the job
                raise unpack(result.packed)
            return result

    def _cannot_load(self, key: ClusterKey, engine: _Engine, result: Failure) -> bool:
        """An engine could not load a key another engine loaded (the file missing or changed on its node):
        it gets no more jobs of that key.  True while an engine is left that may hold it."""
        engine.slot.keys.discard(key._spec.id)
        self._unloadable.setdefault(key._spec.id, {})[engine.slot.index] = result.packed
        log.warning("engine %d cannot load %s: %s; its jobs go to the other engines", engine.slot.index,
                    key.label, unpack(result.packed))
        return any(s.index not in self._unloadable[key._spec.id] for s in self._placement.alive())

    async def _take(self, proofs: int, key_id: int, *, job: str = "", deaths: list[str] | None = None) -> _Engine:
        """Wait for the engine whose queue drains first to have room; counts the job as sent there."""
        async with self._changed:
            while True:
                unloadable = self._unloadable.get(key_id, {})
                if not self._placement.alive():
                    lost = "; ".join(deaths or []) or ", ".join(f"engine {d['index']}: {d['why']}" for d in self.lost)
                    raise EngineLostError(f"{job or 'the cluster'}: no engine is left to run it ({lost})")
                if all(s.index in unloadable for s in self._placement.alive()):  # none can load the key
                    raise unpack(unloadable[self._placement.alive()[-1].index])
                slot = self._placement.choose(proofs, key_id, exclude=frozenset(unloadable))
                if slot is not None:
                    self._placement.sent(slot, proofs, key_id)
                    return self._engines[slot.index]
                await self._changed.wait()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # ---- state
    def stats(self) -> dict:
        """The driver's view: engines alive and lost, jobs and proofs in flight, retries, each engine's speed."""
        slots = self._placement.slots if self._placement else []
        return {
            "engines": sum(s.alive for s in slots),
            "engines_lost": len(self.lost),
            "jobs_in_flight": len(self._jobs),
            "proofs_in_flight": sum(s.outstanding for s in slots),
            "retries": self.retries,
            "per_engine": [
                {"index": s.index, "alive": s.alive, "outstanding": s.outstanding, "completed": s.completed,
                 "seconds_per_proof": s.seconds_per_proof, "keys": len(s.keys),
                 **{k: e.info.get(k) for k in ("host", "pid", "node", "devices")}}
                for s, e in zip(slots, self._engines)
            ],
        }

    async def engine_stats(self) -> list[dict]:
        """Each live engine's own `Engine.stats()` (asked of the actors), with its proofs and keys."""
        alive = [e for e in self._engines if e.slot.alive]
        got = await asyncio.gather(*(e.actor.stats.remote() for e in alive), return_exceptions=True)
        return [{"index": e.slot.index, **r} for e, r in zip(alive, got) if isinstance(r, dict)]

    def actor(self, index: int) -> Any:
        """Engine `index`'s Ray actor handle (tests, operators)."""
        return self._engines[index].actor

    def _check_open(self) -> None:
        if self._state != "open":
            raise EngineClosedError(
                "the cluster is not running (use `async with RayCluster(...) as cluster`)"
                if self._state == "new" else "the cluster has shut down; no new jobs are accepted"
            )
        check_loop(self._loop, "this cluster")  # another loop's call waited on this loop's condition for ever
        if self._lifeline.why is not None:  # its engines' calls would wait for Ray to end this process
            raise EngineLostError(self._lifeline.why)


def _absolute(item: Any) -> Any:
    """A path made absolute (engines resolve it in their own working directory); anything else as it is."""
    return os.path.abspath(os.fspath(item)) if isinstance(item, (str, os.PathLike)) else item


def _is_number(value: Any, kind: type = float) -> bool:
    """An int (kind=int), or an int or a float that is not NaN; never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) if kind is int else isinstance(value, (int, float)) and value == value


def _put(ray, item: Any) -> Any:
    """The item in the object store; one Ray cannot serialize (an open file, a generator) is the Engine's one-line
    TypeError, not Ray's report of a dozen lines with a pickling trace, and one it cannot store an EngineError."""
    try:
        return ray.put(_absolute(item))
    except ray.exceptions.RayError as exc:  # the store full and its spill disk too: Ray's own lines, not an error
        name = os.fspath(item) if isinstance(item, (str, os.PathLike)) else f"a {type(item).__name__} witness"
        raise EngineError(f"{name}: Ray could not store the witness: {_first_line(exc)}") from None
    except TypeError as exc:
        cause = exc.__cause__ or exc.__context__
        why = _first_line(cause) if cause is not None else "it cannot be serialized"
        raise TypeError(f"cannot prove {type(item).__name__}: Ray cannot send it to an engine ({why}); give a .wtns "
                        "path, an inputs dict, a Witness or values (a list of ints, or an (m, 4) uint64 array)"
                        ) from None


def _default_window(config: EngineConfig) -> int:
    """Twice what one engine's pipeline holds at once (its compute slots and synthesis workers)."""
    devices = config.simulation.devices if config.backend == "simulated" else len(config.devices or [0])
    slots = config.compute_slots
    if slots == "auto":  # a GPU gets AUTO_SLOTS (when "auto" finds none, the window is only larger)
        slots = AUTO_SLOTS if config.backend in ("auto", "gpu") else 1
    return 2 * (devices * slots + config.synthesis_workers)
