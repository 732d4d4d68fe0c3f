"""The embeddable asyncio engine: `async with Engine(config) as eng: proof = await eng.prove(key, w)`.

`Engine` composes the scheduler (budgets, device workers, locks, the
synthesis pool, the timeline; all in scheduler/) with a backend per device and
the prover's epilogue.  Many tasks may call `prove` at once; each job runs in
the engine's own task group, so

* cancelling a caller's await cancels its job, which gives back everything
  it reserved (device memory only once the device is done with it);
* a failing job raises its own error in its caller and the engine keeps
  serving the others;
* leaving the `async with` block drains the jobs in flight (a cancelled body
  cancels them instead), then stops the pool, the device threads and the
  backends.

Works under asyncio and uvloop (internals on anyio); an engine belongs to the
event loop that entered it.  For the CLI, `prove_files` runs one engine for a
batch of witness files (see `python -m engine prove --timeline FILE`).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
from typing import Any, AsyncIterable, AsyncIterator, Callable, Iterable, Sequence

import anyio

from scheduler.budget import Budget
from scheduler.compute_share import auto_slot_count
from scheduler.device_worker import DeviceWorker
from scheduler.pipeline import Pipeline
from scheduler.synth_pool import SynthPool
from scheduler.timeline import Event, Timeline

from engine.config import ConfigError, EngineConfig
from engine.errors import (EngineClosedError, EngineError, EngineStartError, TimelineWriteError, start_problem,
                           write_error)
from engine.groth16.kit import Groth16Kit
# the public handles live in engine/jobs.py (re-exported here: `from engine.api import KeyHandle, StreamResult`)
from engine.jobs import (KeyHandle, StreamResult, _aiter, _default_host_budget, _JobHandle, _null,  # noqa: F401
                         _single, check_loop, checked_config, job_items, stream_limit, witness_items)
from engine.key_loading import KeyLoading  # load_key, unload_key and their budget bookkeeping
from engine.paths import is_pipe, read_off_thread

log = logging.getLogger("engine")

UNLIMITED = 1 << 62  # a budget that never binds (the CPU backend's device memory)


# ------------------------------------------------------------------ the engine

class Engine(KeyLoading):
    """A proving engine on this event loop.  See the module docstring."""

    def __init__(
        self,
        config: EngineConfig | None = None,
        *,
        backends: Sequence[Any] | None = None,
        kit: Any = None,
        timeline: Timeline | None = None,
        on_event: Callable[[Event], None] | None = None,
    ):
        """`backends` (one per device) and `kit` override what `config.backend` selects (tests, embedding)."""
        self.config = checked_config(config, "Engine")
        self._given_backends = list(backends) if backends is not None else None
        self._kit = kit
        self.timeline = timeline or Timeline()
        if on_event is not None:
            self.timeline.add_sink(on_event)
        self._state = "new"
        self._job_ids = itertools.count(1)
        self._jobs: set[_JobHandle] = set()
        self._idle = anyio.Event()
        self._down = anyio.Event()  # set once a close has finished (a second close waits for it)
        self._loop = None  # the event loop that entered it: the only one it serves
        self._keys: list[KeyHandle] = []
        self.devices: list[DeviceWorker] = []
        self.synth: SynthPool | None = None
        self.vram: Budget | None = None
        self.host: Budget | None = None
        self._pipeline: Pipeline | None = None
        self._tg = None
        self._tg_host: asyncio.Task | None = None  # the task that holds the task group (_open_group)
        self._pipe_readers: anyio.CapacityLimiter | None = None  # threads reading witnesses given as pipes
        self._backends: list[Any] = []
        self._timeline_created = False
        self._timeline_failure = None  # the timeline's file sink, if a write to it failed
        self._workers_started = False

    # ---- lifecycle
    async def __aenter__(self) -> "Engine":
        if self._state != "new":
            raise EngineClosedError("an Engine can be entered once")
        self._state, self._loop = "starting", asyncio.get_running_loop()
        try:
            await self._start()
        except BaseException as exc:
            await self._abort_start()
            self._state = "closed"
            if isinstance(exc, Exception) and not isinstance(exc, EngineError):
                raise EngineStartError(f"the engine could not start: {start_problem(exc)}") from exc
            raise
        self._state = "open"
        return self

    async def _start(self) -> None:
        cfg = self.config
        kit, backends, device_ids = self._make_backends()
        self._kit, self._backends = kit, backends
        if cfg.timeline:
            self._timeline_created = not os.path.exists(cfg.timeline)
            try:
                self.timeline.add_file(cfg.timeline)
            except OSError as exc:  # a missing directory, a read-only place: one line naming the path
                self._timeline_created = False
                raise write_error(cfg.timeline, exc) from None
        capacities = []
        for b in backends:
            if cfg.vram_budget is not None:
                capacities.append(cfg.vram_budget)
            else:
                measured = getattr(b, "memory_budget_bytes", None)
                capacities.append(int(measured()) if measured is not None else UNLIMITED)
        self.vram = Budget(capacities, name="VRAM budget", guard_devices=device_ids)
        self.host = Budget([cfg.host_budget if cfg.host_budget is not None else _default_host_budget()],
                           name="host budget")
        for pool, (dev, backend) in enumerate(zip(device_ids, backends)):
            threads = cfg.device_threads
            slots = auto_slot_count(backend) if cfg.compute_slots == "auto" else cfg.compute_slots
            if getattr(backend, "synchronous_compute", getattr(backend, "name", "") == "cpu"):
                threads = max(threads, slots)  # compute runs on the thread: one per slot
            self.devices.append(DeviceWorker(dev, backend, self.vram, pool=pool, lock_mode=cfg.lock_mode,
                                             compute_slots=slots, device_threads=threads,
                                             timeline=self.timeline, host_budget=self.host))
        self.synth = SynthPool(cfg.synthesis_workers, start_method=cfg.synthesis_start_method,
                               preload=[type(kit).__module__])
        await self._open_group()
        self._pipe_readers = anyio.CapacityLimiter(4)  # not the loop's threads: stuck pipes must not take them all
        self._workers_started = True
        for worker in self.devices:
            worker.start()
        await self.synth.start()
        if cfg.idle_trim_s:
            for worker in self.devices:
                self._tg.start_soon(worker.idle_trim_loop, cfg.idle_trim_s)
        self._pipeline = Pipeline(self.devices, self.vram, self.host, self.synth, kit, timeline=self.timeline,
                                  verify=cfg.verify, cpu_threads=cfg.epilogue_threads)

    async def _open_group(self) -> None:
        """The engine's task group (its jobs, streams' feeders, key loads, idle loops), held by a task of its own:
        entered in the caller's task, it could be left only there, so an engine entered in one task (a notebook
        cell, an app's start hook) and closed in another raised anyio's RuntimeError, and that close cancelled
        the entering task."""
        ready = anyio.Event()

        async def host() -> None:
            try:
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    ready.set()
                    await anyio.sleep_forever()
            finally:
                ready.set()

        self._tg_host = asyncio.get_running_loop().create_task(host(), name="groth16 engine")
        await ready.wait()

    async def _close_group(self) -> None:
        """Cancel the task group (what is still in it: its loops) and wait for it; a child's error raised here."""
        host, self._tg_host = self._tg_host, None
        if host is not None:
            self._tg.cancel_scope.cancel()
            await host

    async def _abort_start(self) -> None:
        """Undo a partial start: no process, shared-memory block, thread or file is left behind."""
        try:
            await self._close_group()
        except BaseException:  # noqa: BLE001 - the start's own error is the one to report
            pass
        self._tg = None
        with anyio.CancelScope(shield=True):
            try:
                await self._teardown()
            except BaseException:  # noqa: BLE001
                log.debug("teardown after a failed start raised", exc_info=True)
        if self.config.timeline and self._timeline_created:
            try:
                os.unlink(self.config.timeline)
            except OSError:
                pass

    async def __aexit__(self, exc_type, exc, tb) -> bool | None:
        if self._state in ("new", "closing", "closed"):  # never entered, or closed already (it hung on the threads)
            return await self._down.wait() if self._state == "closing" else None
        self._state = "closing"
        try:
            if exc_type is None or issubclass(exc_type, Exception):
                with anyio.move_on_after(self.config.shutdown_timeout_s) if self.config.shutdown_timeout_s else _null():
                    await self.drain()
            for handle in list(self._jobs):  # a cancelled body or a timed-out drain: stop the rest
                handle.scope.cancel()
            with anyio.CancelScope(shield=True):
                await self.drain()
        finally:
            try:
                # The body's own exception is not handed to the task group: it would come back
                # wrapped in an ExceptionGroup, and `except EngineError` around the block would miss it.
                await self._close_group()
            except BaseExceptionGroup as group:
                if exc is None:
                    raise _single(group) from None
            finally:
                with anyio.CancelScope(shield=True):
                    await self._teardown()
                self._state = "closed"
                self._down.set()
        if self._timeline_failure is not None and exc is None:  # like a file's close: after a body that ended well
            sink = self._timeline_failure
            raise TimelineWriteError(sink.path, f"cannot write the timeline: {sink.error.strerror or sink.error}")
        return None

    async def _teardown(self) -> None:
        if self.synth is not None:
            await self.synth.close()
        for key in list(self._keys):
            await self._unload(key)
        for worker in self.devices:
            close = getattr(worker.backend, "close", None)
            if close is not None:
                if self._workers_started:
                    await worker.call(close)
                else:  # the device threads never ran: close on this thread
                    await anyio.to_thread.run_sync(close)
            if self._workers_started:
                await worker.stop()
        if not self.devices:  # backends made, but the start failed before their workers existed
            for backend in self._backends:
                close = getattr(backend, "close", None)
                if close is not None:
                    await anyio.to_thread.run_sync(close)
        if self.vram is not None:
            self.vram.close()
        for sink in self.timeline.close():  # reported once the engine is down (__aexit__), not raised here
            self._timeline_failure = self._timeline_failure or sink

    def _make_backends(self) -> tuple[Any, list[Any], list[int]]:
        cfg = self.config
        if cfg.backend == "simulated" and self._given_backends is None:
            from scheduler.simulated import SimParams, SimulatedDevice, SimulatedKit  # noqa: PLC0415

            s = cfg.simulation
            params = SimParams(upload_ms=s.upload_ms, stage_host_ms=s.stage_host_ms, gpu_ms=s.gpu_ms,
                               vram_bytes=s.vram, working_set_bytes=s.working_set, key_bytes=s.key_resident,
                               concurrency_gain=s.concurrency_gain, jitter=s.jitter, seed=s.seed)
            kit = self._kit or SimulatedKit(s.witness_rows, s.synth_ms, s.epilogue_ms, s.verify_ms, s.seed)
            return kit, [SimulatedDevice(i, params) for i in range(s.devices)], list(range(s.devices))
        kit = self._kit or Groth16Kit()
        if self._given_backends is not None:
            ids = list(cfg.devices) if cfg.devices else list(range(len(self._given_backends)))
            if len(ids) != len(self._given_backends):
                raise ConfigError(f"devices: {ids} does not match the {len(self._given_backends)} backends given")
            return kit, self._given_backends, ids
        from engine.backends.select import cuda_device_count, select_backend  # noqa: PLC0415

        name = cfg.backend
        count = cuda_device_count() if name in ("auto", "gpu") else 0
        if name == "auto":
            name = "gpu" if count > 0 else "cpu"
        if name == "gpu":
            if count == 0:
                select_backend("gpu")  # raises the direct path's BackendUnavailableError (no CUDA device)
            ids = list(cfg.devices) if cfg.devices else list(range(count))
            missing = [d for d in ids if d >= count]
            if missing:
                raise devices_not_present(missing, count)
            return kit, [select_backend("gpu", device=d, key_cache_dir=cfg.key_cache_dir) for d in ids], ids
        return kit, [select_backend("cpu")], [0]

    # ---- proving
    async def prove(self, key: KeyHandle, witness: Any = None, *, partitions: Sequence[Any] | None = None) -> Any:
        """One proof of `witness`, or (partitions=[...]) one job of several proofs, returned in order.

        A witness is a .wtns path, a dict of circuit inputs (key loaded with wasm=), a
        `Witness`, or (m, 4) uint64 values.
        """
        items = job_items(witness, partitions)
        handle = self._submit(key, items)
        results = await handle.result()
        return results[0] if partitions is None else results

    async def prove_stream(
        self,
        key: KeyHandle,
        items: Iterable[Any] | AsyncIterable[Any],
        *,
        max_in_flight: int | None = None,
        ordered: bool = False,
    ) -> AsyncIterator[StreamResult]:
        """Prove many witnesses, `max_in_flight` at a time; yields a StreamResult per item.

        Results come as they finish (or in input order with ordered=True); one failure is
        one StreamResult with `error`, the stream goes on.  Leaving the loop early cancels
        the items still in flight.  Items in flight, results waiting for the reader and (ordered)
        results held back for an earlier one are `max_in_flight` at most together: a slow
        reader slows the producer, memory does not grow.
        """
        self._check_open()
        self._check_key(key)
        witness_items(items, "prove_stream's items")
        limit = stream_limit(max_in_flight, self.config.max_in_flight)
        send, receive = anyio.create_memory_object_stream(limit)  # never full: the slots bound it
        slots = anyio.Semaphore(limit)  # taken per item; back only once the reader has its result
        state = {"outstanding": 0, "feeding": True}
        handles: set[_JobHandle] = set()
        feeder_scope = anyio.CancelScope()

        def finish_one(index: int, item: Any, handle: _JobHandle | None, error: BaseException | None) -> None:
            if handle is not None:
                handles.discard(handle)
                cancelled = EngineClosedError(f"job {handle.id} was cancelled") if handle.cancelled else None
                error = handle.error or cancelled
                value = handle.value[0] if handle.value is not None and error is None else None
            else:
                value = None
            try:
                send.send_nowait(StreamResult(index, item, value, error))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the consumer left the loop: nobody wants this result
            state["outstanding"] -= 1
            if not state["feeding"] and state["outstanding"] == 0:
                send.close()

        async def feeder() -> None:
            index = 0
            try:
                with feeder_scope:
                    async for item in _aiter(items):
                        await slots.acquire()
                        state["outstanding"] += 1
                        try:
                            handle = self._submit(key, [item])
                        except Exception as exc:
                            finish_one(index, item, None, exc)
                        else:
                            handles.add(handle)
                            handle.callbacks.append(lambda h, i=index, it=item: finish_one(i, it, h, None))
                        index += 1
            except Exception as exc:  # the caller's iterable failed: end the stream with its error
                state["error"] = exc
            finally:
                state["feeding"] = False
                if state["outstanding"] == 0:
                    send.close()

        self._tg.start_soon(feeder)
        buffered: dict[int, StreamResult] = {}
        next_index = 0
        try:
            async with receive:
                async for result in receive:
                    if not ordered:
                        yield result
                        slots.release()  # the reader came back for the next one: feed another item
                        continue
                    buffered[result.index] = result
                    while next_index in buffered:
                        yield buffered.pop(next_index)
                        slots.release()
                        next_index += 1
            if state.get("error") is not None:
                raise state["error"]
        finally:
            feeder_scope.cancel()
            for handle in list(handles):
                handle.scope.cancel()

    def _check_key(self, key: KeyHandle, who: str = "prove", loaded: bool = True) -> None:
        if not isinstance(key, KeyHandle):  # was an AttributeError on the string or path given
            raise TypeError(f"{who}: the key is what eng.load_key returned, not {type(key).__name__} {key!r:.60}")
        if key._engine is not self or (loaded and key not in self._keys):
            raise EngineError(f"{key.label}: this key is not loaded in this engine (use eng.load_key)")

    def _submit(self, key: KeyHandle, items: list[Any]) -> _JobHandle:
        self._check_open()
        self._check_key(key)
        # A pipe is read whole when its partition is made: on the event loop that froze every job and caller of
        # the engine until its writer wrote (for ever if none did); so pipes are read in a thread as the job runs.
        piped = {i for i, item in enumerate(items) if isinstance(item, (str, os.PathLike)) and is_pipe(item)}
        parts = [None if i in piped else self._kit.make_partition(key._record.data, i, item)
                 for i, item in enumerate(items)]
        handle = _JobHandle(next(self._job_ids))
        self._jobs.add(handle)
        key._jobs += 1
        if self._idle.is_set():
            self._idle = anyio.Event()

        async def runner() -> None:
            try:
                with handle.scope:
                    for i in sorted(piped):  # abandoned if cancelled: a reader blocked in open() cannot be woken
                        async with self._pipe_readers:  # on a daemon thread, which the exit does not wait for
                            parts[i] = await read_off_thread(self._kit.make_partition, key._record.data, i, items[i])
                    handle.value = await self._pipeline.run_job(handle.id, key._record, parts)
            except Exception as exc:
                handle.error = exc
            finally:
                # cancelled: by its caller, by the close, or by the close's task group (a close itself cut short)
                handle.cancelled = handle.error is None and handle.value is None
                self._jobs.discard(handle)
                key._job_ended()
                if not self._jobs:
                    self._idle.set()
                handle.done.set()
                for callback in handle.callbacks:
                    try:
                        callback(handle)
                    except Exception:  # a listener's bug must not take the engine down
                        logging.getLogger(__name__).exception("job %s: completion callback failed", handle.id)

        self._tg.start_soon(runner)
        return handle

    # ---- state
    async def drain(self) -> None:
        """Wait until no job is in flight and every synthesis worker is back."""
        while self._jobs:
            await self._idle.wait()
        if self.synth is not None:
            await self.synth.wait_ready()

    def at_rest(self) -> bool:
        """Every budget full, every lock and slot free, every synthesis worker idle and alive."""
        return (
            not self._jobs
            and self.vram.at_rest()
            and self.host.at_rest()
            and all(w.locks.at_rest() for w in self.devices)
            and (self.synth is None or self.synth.at_rest())
        )

    def stats(self) -> dict:
        return {
            "jobs_in_flight": len(self._jobs),
            "vram_available": [self.vram.available(w.pool) for w in self.devices],
            "vram_capacity": [self.vram.capacity(w.pool) for w in self.devices],
            "vram_reservations": [self.vram.outstanding(w.pool) for w in self.devices],
            "host_available": self.host.available(0),
            "host_capacity": self.host.capacity(0),
            "budget_waiting": self.vram.waiting(),
            "host_waiting": self.host.waiting(),
            "synthesis_workers_alive": self.synth.alive() if self.synth else 0,
            "synthesis_restarts": self.synth.restarts if self.synth else 0,
        }

    def _check_open(self) -> None:
        if self._state != "open":
            raise EngineClosedError(
                "the engine is not running (use `async with Engine(...) as eng`)"
                if self._state == "new" else "the engine has shut down; no new jobs are accepted"
            )
        if self._tg_host is not None and self._tg_host.done():  # a task of it raised past its handlers
            raise EngineClosedError("the engine has stopped on an internal error; leaving its `async with` "
                                    "raises it")
        check_loop(self._loop)


def devices_not_present(missing: list[int], count: int) -> ConfigError:
    """The error for device indices this machine lacks, said as the configuration's own are ("devices: ..."; was
    "devices: [5] not present (... 1 CUDA device(s))"), with the key and the problem kept apart (`key`,
    `problem`): the engine cannot know where the list came from, and a caller that does (the CLI: its --devices
    flag, a --config file) says it its own way.  CUDA_VISIBLE_DEVICES, where set, is why the count is lower."""
    one = len(missing) == 1
    plural = "" if count == 1 else "s"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        has = f"this machine has {count} CUDA device{plural}"
    else:
        shown = repr(visible) if len(visible) <= 40 else repr(visible[:37] + "...")
        has = f"CUDA_VISIBLE_DEVICES={shown} leaves this process {count} CUDA device{plural}"
    problem = f"{'device' if one else 'devices'} {_listed(missing)} {'is' if one else 'are'} not present ({has})"
    error = ConfigError(f"devices: {problem}")
    error.key, error.problem = "devices", problem
    return error


def _listed(items: list[int]) -> str:
    """5; 5 and 7; 5, 6 and 7 (the first eight, then a count)."""
    shown = [str(i) for i in items[:8]] + ([f"{len(items) - 8} more"] if len(items) > 8 else [])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


# ------------------------------------------------------------------ for the CLI

def run(main: Callable[[], Any], *, use_uvloop: bool = True) -> Any:
    """Run `main()` (a coroutine function) on uvloop when installed, else asyncio."""
    factory = None
    if use_uvloop:
        try:
            import uvloop  # noqa: PLC0415

            factory = uvloop.new_event_loop
        except ImportError:
            pass
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main())


async def aprove_files(
    zkey: Any,
    witnesses: Sequence[Any],
    *,
    config: EngineConfig | None = None,
    timeline: str | os.PathLike | None = None,
    wasm: Any = None,
    on_event: Callable[[Event], None] | None = None,
) -> list[Any]:
    """Prove each witness (a .wtns path or an inputs dict) with one key, as one job; proofs in order."""
    witnesses = list(witness_items(witnesses, "witnesses"))
    if not witnesses:
        return []
    config = config or EngineConfig()
    if timeline is not None:
        config = config.replace(timeline=os.fspath(timeline))
    proofs = None
    try:
        async with Engine(config, on_event=on_event) as eng:
            key = await eng.load_key(zkey, wasm=wasm, expected_proofs=len(witnesses))
            proofs = await eng.prove(key, partitions=witnesses)
    except TimelineWriteError as exc:  # the proofs are made: the caller may still want them (the CLI writes them)
        exc.results = proofs
        raise
    return proofs


def prove_files(
    zkey: Any,
    witnesses: Sequence[Any],
    *,
    config: EngineConfig | None = None,
    timeline: str | os.PathLike | None = None,
    wasm: Any = None,
) -> list[Any]:
    """The CLI's entry: `prove_files(zkey, [wtns...], config=from_args(args), timeline=args.timeline)`."""
    try:  # where a loop runs already (a notebook, an async function), asyncio's refusal was two chained errors
        asyncio.get_running_loop()
    except RuntimeError:
        return run(lambda: aprove_files(zkey, witnesses, config=config, timeline=timeline, wasm=wasm))
    raise RuntimeError("prove_files: this thread runs an event loop already (a notebook, an async function), and "
                       "prove_files runs its own: there, await engine.aprove_files(...) with the same arguments")
