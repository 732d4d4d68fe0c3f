"""A job's partitions through synthesis → memory phase → compute phase → epilogue (design.md §5-§6).

The pipeline is generic: keys, witnesses and results are opaque; the engine
supplies a `Kit` (synthesis tasks, the witness check, the epilogue and the
verification) and the devices' backends supply `stage`/`compute`.

Per partition, in this order and never holding two locks:

1. host budget (the witness's bytes) → synthesis in the process pool
   (shared memory back) → check;
2. VRAM budget (all-or-nothing, FIFO over all devices: the device that frees
   first takes the head of the queue);
3. memory lock → `stage` on the device thread → release;
4. compute slot → `compute` on the device thread → the done event on a
   waiter thread → release slot → release VRAM budget (only now: rule 4) and
   the host memory;  where the backend has `compute_batch`, the partition
   that gets the slot takes every other staged partition of the same key
   waiting for one (up to the backend's `max_batch`) into one compute call,
   and those wait for their share of its results (each still releases its
   own budget only after the batch's done event);
5. epilogue and verification in a worker thread (never the event loop,
   never a device thread).

Cancellation (a cancelled job is not computed): a partition cancelled before
its compute phase never reaches it: one waiting for a budget, a lock or a
slot leaves the queue at once; one already staged gives its inputs back
(backend `discard`, waited for on the device; a backend without `discard`
holds only host memory, which is simply dropped).  A started device call
cannot be undone, so device calls run shielded, but a compute in flight is
told to stop (the `stop` callable a backend's `compute` may accept, checked
at each of its stage boundaries), and the partition stops before its
epilogue.  Budgets go back as soon as the device is done with the memory:
device memory after the done event, never before.
"""
from __future__ import annotations

import asyncio
import inspect
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import anyio
import numpy as np

from engine.errors import BudgetError, MismatchError, UnreducedWitnessError

from scheduler.budget import Budget, fmt_bytes
from scheduler.device_worker import DeviceWorker
from scheduler.locks import SINGLE
from scheduler.synth_pool import OutputTooLargeError, SynthPool
from scheduler.timeline import Stage, Timeline


class Kit(Protocol):
    """What the engine supplies around the device (engine/api.py: Groth16; scheduler/simulated.py: simulated)."""

    def check(self, key: Any, meta: Any, values: np.ndarray, label: str) -> None: ...
    def public(self, key: Any, values: np.ndarray) -> Any: ...
    def finish(self, key: Any, core: Any, public: Any) -> Any: ...  # optionally label, as verify
    def verify(self, key: Any, result: Any) -> None: ...  # optionally a third parameter, label: the witness
    # optionally inline(step, key, obj) -> bool: step ("finish" of a core, "verify" of a result) is
    # too little work to pay a worker thread's hand-off for; it runs on the event loop instead


@dataclass
class KeyRecord:
    """A key as the scheduler sees it: resident copies per device and the sizes it reserves."""

    label: str
    data: Any  # the parsed key (the kit's business)
    resident: dict[int, Any]  # device index -> the backend's resident key
    vram_bytes: int  # one proof's working set (the largest over devices)
    host_bytes: int  # one synthesised witness
    compute_slots: dict[int, int] = field(default_factory=dict)  # device -> slots one proof takes (1 if absent)


@dataclass
class Partition:
    """One proof of a job: a synthesis task, or values already in memory."""

    index: int
    label: str
    task: tuple[Callable[..., Any], tuple] | None = None
    values: np.ndarray | None = None
    meta: Any = None


def _accepts(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class Pipeline:
    """Runs jobs over the devices, budgets and pools the engine owns."""

    def __init__(
        self,
        devices: Sequence[DeviceWorker],
        vram: Budget,
        host: Budget,
        synth: SynthPool | None,
        kit: Kit,
        *,
        timeline: Timeline | None = None,
        verify: bool = True,
        cpu_threads: int = 2,
    ):
        self.devices = list(devices)
        self.vram = vram
        self.host = host
        self.synth = synth
        self.kit = kit
        self.timeline = timeline or Timeline()
        self.verify = verify
        self.cpu_limiter = anyio.CapacityLimiter(cpu_threads)
        self._slot_kw = {d.index: _accepts(d.backend.compute, "slot") for d in self.devices}
        self._stop_kw = {d.index: _accepts(d.backend.compute, "stop") for d in self.devices}
        self._range_kw = _accepts(self.kit.check, "range_check")  # the kit can leave the range to the devices
        self._verify_label = _accepts(kit.verify, "label")  # a kit that names the witness when a proof fails
        self._finish_label = _accepts(kit.finish, "label")  # (an unverified proof's own check, too)
        self._waiting: dict[tuple[int, int], list[_Waiter]] = {}  # staged partitions awaiting a slot, per key
        self._batches_running: dict[tuple[int, int], int] = {}  # batches of a key on a device, computing
        self._batch_changed: dict[tuple[int, int], anyio.Event] = {}  # set when either of the two above changes

    # ------------------------------------------------------------ jobs
    def check_fits(self, job: int, key: KeyRecord, parts: Sequence[Partition]) -> None:
        """Fail at once (BudgetError) when one partition needs more than a whole budget."""
        pools = [d.pool for d in self.devices if d.index in key.resident]
        biggest = max((self.vram.capacity(p) for p in pools), default=0)
        if key.vram_bytes > biggest:
            left = (f"the VRAM budget left for proofs on a device is {fmt_bytes(biggest)}" if biggest > 0 else
                    "no VRAM budget is left for proofs on any device")
            raise BudgetError(
                f"job {job} ({key.label}): one proof needs {fmt_bytes(key.vram_bytes)} of device memory but {left} "
                f"(the resident keys hold the rest); raise vram_budget, unload a key or use a larger device"
            )
        if any(p.task is not None for p in parts) and key.host_bytes > self.host.capacity(0):
            raise BudgetError(
                f"job {job} ({key.label}): one witness needs {fmt_bytes(key.host_bytes)} of host memory but the "
                f"host budget is {fmt_bytes(self.host.capacity(0))}; raise host_budget (--host-budget)"
            )

    async def run_job(self, job: int, key: KeyRecord, parts: Sequence[Partition]) -> list[Any]:
        """All partitions of a job, concurrently; the first failure cancels the others and is raised."""
        tl = self.timeline
        tl.emit(Stage.JOB_SUBMIT, job, bytes=len(parts), key=key.label)
        try:
            self.check_fits(job, key, parts)
            results: list[Any] = [None] * len(parts)
            errors: list[BaseException] = []

            async def one(part: Partition) -> None:
                try:
                    results[part.index] = await self.run_partition(job, key, part)
                except Exception as exc:
                    if not errors:
                        errors.append(exc)
                    tg.cancel_scope.cancel()

            async with anyio.create_task_group() as tg:
                for part in parts:
                    tg.start_soon(one, part)
            if errors:
                raise errors[0]
        except anyio.get_cancelled_exc_class():
            tl.emit(Stage.JOB_CANCELLED, job, key=key.label)
            raise
        except Exception as exc:
            tl.emit(Stage.JOB_FAILED, job, key=key.label, detail=str(exc))
            raise
        tl.emit(Stage.JOB_DONE, job, key=key.label)
        return results

    def _range_on_device(self, key: KeyRecord) -> bool:
        """Whether every device the key is on checks a witness's range after the upload
        (backend.checks_witness_range), so the kit's check leaves it out: a pass over the witness
        less on the host (2.8 ms at 2^20) and what is left (prime, size) is too little for a thread."""
        return self._range_kw and bool(key.resident) and all(
            getattr(d.backend, "checks_witness_range", False) for d in self.devices if d.index in key.resident)

    def _inline(self, step: str, key: KeyRecord, obj: Any) -> bool:
        fn = getattr(self.kit, "inline", None)
        return bool(fn is not None and fn(step, key.data, obj))

    async def _step(self, inline: bool, fn: Callable, *args: Any, abandon: bool = False) -> Any:
        """fn(*args) on the event loop when it is little work, else on a worker thread (the CPU limiter's)."""
        if inline:
            return fn(*args)
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.cpu_limiter, abandon_on_cancel=abandon)

    # ------------------------------------------------------------ one partition
    async def run_partition(self, job: int, key: KeyRecord, part: Partition) -> Any:
        tl, p = self.timeline, part.index
        tl.emit(Stage.SUBMIT, job, p, key=key.label)
        host_res = synth = None
        try:
            values, meta = part.values, part.meta
            if part.task is not None:
                tl.emit(Stage.HOST_WAIT, job, p, bytes=key.host_bytes)
                host_res = await self.host.reserve(key.host_bytes, label=f"{part.label}: witness")
                tl.emit(Stage.HOST_GRANTED, job, p, bytes=key.host_bytes)
                synth = await self._synthesise(job, key, part)
                values, meta = synth.values, synth.meta
            tl.emit(Stage.CHECK_START, job, p)
            if self._range_on_device(key):
                self.kit.check(key.data, meta, values, part.label, range_check=False)
            else:
                await self._step(False, self.kit.check, key.data, meta, values, part.label)
            public = self.kit.public(key.data, values)
            tl.emit(Stage.CHECK_END, job, p)
            try:
                core = await self._on_device(job, key, p, values)
            except UnreducedWitnessError as exc:  # the device's range check knows the row, not the input
                raise exc.named(part.label) from None
            values = None
            if synth is not None:  # the witness is no longer needed: give the host memory back
                synth.release()
                synth = None
                host_res.release()
                host_res = None
                tl.emit(Stage.HOST_RELEASED, job, p, bytes=key.host_bytes)
            tl.emit(Stage.EPILOGUE_START, job, p)
            args = (key.data, core, public, part.label) if self._finish_label else (key.data, core, public)
            result = await self._step(self._inline("finish", key, core), self.kit.finish, *args, abandon=True)
            tl.emit(Stage.EPILOGUE_END, job, p)
            if self.verify:
                tl.emit(Stage.VERIFY_START, job, p)
                args = (key.data, result, part.label) if self._verify_label else (key.data, result)
                await self._step(self._inline("verify", key, result), self.kit.verify, *args, abandon=True)
                tl.emit(Stage.VERIFY_END, job, p)
        except anyio.get_cancelled_exc_class():
            tl.emit(Stage.CANCELLED, job, p, key=key.label)
            raise
        except Exception as exc:
            tl.emit(Stage.FAILED, job, p, key=key.label, detail=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            if synth is not None:
                synth.release()
            if host_res is not None:
                host_res.release()
                tl.emit(Stage.HOST_RELEASED, job, p, bytes=key.host_bytes)
        tl.emit(Stage.DONE, job, p, key=key.label)
        return result

    async def _synthesise(self, job: int, key: KeyRecord, part: Partition):
        tl, p = self.timeline, part.index
        if self.synth is None:
            raise RuntimeError("this engine has no synthesis pool")
        fn, args = part.task
        try:
            synth = await self.synth.run(
                fn, args, key.host_bytes, label=part.label,
                on_start=lambda worker: tl.emit(Stage.SYNTH_START, job, p, slot=worker),
            )
        except OutputTooLargeError as exc:
            rows = exc.shape[0] if exc.shape else 0
            raise MismatchError(
                f"{part.label}: the witness has {rows} values ({fmt_bytes(self._nbytes(exc))}) but {key.label} "
                f"holds {fmt_bytes(key.host_bytes)} per witness (a witness of another circuit?)"
            ) from None
        tl.emit(Stage.SYNTH_END, job, p, slot=synth.worker, bytes=int(synth.values.nbytes))
        return synth

    @staticmethod
    def _nbytes(exc: OutputTooLargeError) -> int:
        return int(np.prod(exc.shape, dtype=np.int64)) * np.dtype(exc.dtype).itemsize

    # ------------------------------------------------------------ the device part
    async def _on_device(self, job: int, key: KeyRecord, p: int, values: np.ndarray) -> Any:
        """Budget → memory phase → compute phase; returns the backend's result once its done event fired."""
        tl = self.timeline
        pools = [d.pool for d in self.devices if d.index in key.resident]
        tl.emit(Stage.BUDGET_WAIT, job, p, bytes=key.vram_bytes)
        reservation = await self.vram.reserve(key.vram_bytes, pools=pools, label=f"job {job} partition {p}")
        dev = next(d for d in self.devices if d.pool == reservation.pool)
        tl.emit(Stage.BUDGET_GRANTED, job, p, device=dev.index, bytes=key.vram_bytes)
        owner = (job, p)
        state = _DeviceState()
        try:
            if dev.locks.mode == SINGLE:
                tl.emit(Stage.MEM_WAIT, job, p, device=dev.index)
                async with dev.locks.single(owner) as slot:
                    await self._memory_phase(dev, key, job, p, values, state)
                    tl.emit(Stage.GPU_WAIT, job, p, device=dev.index)
                    return await self._compute_phase(dev, job, p, slot, state)
            tl.emit(Stage.MEM_WAIT, job, p, device=dev.index)
            async with dev.locks.memory(owner):
                await self._memory_phase(dev, key, job, p, values, state)
            tl.emit(Stage.GPU_WAIT, job, p, device=dev.index)
            if self._batch_limit(dev, key) > 1:
                try:
                    return await self._compute_batched(dev, key, job, p, owner, state)
                except _BatchFailed:  # the batch's shared device work failed: this partition alone, once
                    tl.emit(Stage.MEM_WAIT, job, p, device=dev.index, detail="alone, after its batch failed")
                    async with dev.locks.memory(owner):
                        await self._memory_phase(dev, key, job, p, values, state)
                    tl.emit(Stage.GPU_WAIT, job, p, device=dev.index)
            async with dev.locks.compute(owner, key.compute_slots.get(dev.index, 1)) as slot:
                return await self._compute_phase(dev, job, p, slot, state)
        finally:
            with anyio.CancelScope(shield=True):
                if state.staged is not None:  # staged but never computed (cancelled or failed in between)
                    await self._discard(dev, owner, state)
            reservation.release()
            tl.emit(Stage.BUDGET_RELEASED, job, p, device=dev.index, bytes=key.vram_bytes)

    async def _memory_phase(self, dev: DeviceWorker, key: KeyRecord, job: int, p: int, values, state) -> None:
        self.timeline.emit(Stage.MEM_START, job, p, device=dev.index, bytes=key.vram_bytes)
        with anyio.CancelScope(shield=True):  # once sent, the stage runs: keep what it returns
            fn, stamps = self._stamped(dev.backend.stage)
            state.staged = await dev.call(fn, key.resident[dev.index], values)
        self._emit_call(dev, "stage", [(job, p)], stamps)
        self.timeline.emit(Stage.MEM_END, job, p, device=dev.index)

    async def _compute_phase(self, dev: DeviceWorker, job: int, p: int, slot: int, state) -> Any:
        tl = self.timeline
        tl.emit(Stage.GPU_START, job, p, device=dev.index, slot=slot)
        staged, state.staged = state.staged, None
        stop = threading.Event()
        fn, stamps = self._stamped(self._compute_fn(dev, slot, stop))
        call = dev.device_lane.submit(fn, staged)
        try:
            # Not shielded while the compute call runs, so that a cancellation reaches it as `stop`
            # (asyncio.shield keeps the call's future itself alive).
            pending = await asyncio.shield(call)
        except BaseException:
            stop.set()  # cancelled mid-compute: the backend stops at its next stage boundary
            with anyio.CancelScope(shield=True):
                try:
                    pending = await call
                except Exception:  # noqa: BLE001 - stopped (or failed) on the way out: nobody wants it
                    pending = None
                if pending is not None:  # kernels may still be queued: the memory waits for the done event
                    try:
                        await dev.wait(pending)
                    except Exception:  # noqa: BLE001
                        pass
            raise
        self._emit_call(dev, "compute", [(job, p)], stamps)
        with anyio.CancelScope(shield=True):  # kernels cannot be recalled: wait for the done event
            core, t_done = await dev.wait(pending)
        tl.emit(Stage.GPU_END, job, p, device=dev.index, slot=slot, t_ns=t_done)
        return core

    def _batch_limit(self, dev: DeviceWorker, key: KeyRecord) -> int:
        max_batch = getattr(dev.backend, "max_batch", None)
        if getattr(dev.backend, "compute_batch", None) is None or max_batch is None:
            return 1
        return int(max_batch(key.resident[dev.index]))

    async def _compute_batched(self, dev: DeviceWorker, key: KeyRecord, job: int, p: int, owner: tuple,
                               state) -> Any:
        """Wait for a compute slot among the staged partitions of this key on this device; the one
        that gets it computes every waiting one (FIFO, up to the batch limit) in one call, after
        waiting for a full batch while another batch of the key computes (`_fill_batch`)."""
        qkey = (dev.index, id(key))
        waiting = self._waiting.setdefault(qkey, [])
        me = _Waiter(job, p, state)
        waiting.append(me)
        self._signal_batches(qkey)
        try:
            async with dev.locks.compute(owner, key.compute_slots.get(dev.index, 1)) as slot:
                if me.batch is None:
                    await self._fill_batch(qkey, me, self._batch_limit(dev, key))
                if me.batch is None:  # nobody took us: we lead a batch
                    batch = waiting[: self._batch_limit(dev, key)]
                    del waiting[: len(batch)]
                    for w in batch:
                        w.batch = batch
                    self._batches_running[qkey] = self._batches_running.get(qkey, 0) + 1
                    try:
                        await self._run_batch(dev, slot, batch)
                    finally:
                        self._batches_running[qkey] -= 1
                        self._signal_batches(qkey)
            await me.done.wait()
        finally:
            if me.batch is None:  # cancelled before any batch took it: still staged, discarded by the caller
                waiting.remove(me)
            elif not me.done.is_set():  # its memory is in a batch the device still runs
                with anyio.CancelScope(shield=True):
                    await me.done.wait()
            if not waiting and not self._batches_running.get(qkey) and self._waiting.get(qkey) is waiting:
                # the key's last proof here: its entries went on growing with every key a service loaded
                del self._waiting[qkey]
                self._batches_running.pop(qkey, None)
                self._batch_changed.pop(qkey, None)
        if me.error is not None:
            if me.shared:
                raise _BatchFailed() from me.error
            raise me.error
        return me.result

    async def _fill_batch(self, qkey: tuple[int, int], me: "_Waiter", limit: int) -> None:
        """Holding a compute slot while another batch of this key computes on the device: wait for a
        full batch (or for that batch to end, or for another leader to take us).  A slot free at once
        took whatever had arrived, often one proof, so with several slots batches of 16 alternated
        with lone proofs, each of which waits out its whole one-warp tail (perf/RESULTS.md, h13tput);
        this way one batch computes while the next one fills."""
        waiting = self._waiting[qkey]
        while me.batch is None and len(waiting) < limit and self._batches_running.get(qkey, 0) > 0:
            changed = self._batch_changed.get(qkey)
            if changed is None:
                changed = self._batch_changed[qkey] = anyio.Event()
            await changed.wait()

    def _signal_batches(self, qkey: tuple[int, int]) -> None:
        changed = self._batch_changed.pop(qkey, None)
        if changed is not None:
            changed.set()

    async def _run_batch(self, dev: DeviceWorker, slot: int, batch: list["_Waiter"]) -> None:
        tl = self.timeline
        staged = []
        for w in batch:
            staged.append(w.state.staged)
            w.state.staged = None
            tl.emit(Stage.GPU_START, w.job, w.p, device=dev.index, slot=slot, detail=f"batch of {len(batch)}")
        compute_batch = dev.backend.compute_batch
        pendings = None
        with anyio.CancelScope(shield=True):  # kernels cannot be recalled: wait for every done event
            try:
                try:
                    fn, stamps = self._stamped(lambda s: compute_batch(s, slot=slot))
                    try:
                        pendings = await dev.call(fn, staged)
                    finally:
                        self._emit_call(dev, f"compute_batch of {len(batch)}", [(w.job, w.p) for w in batch], stamps)
                except Exception as exc:  # refused before touching them: free them
                    for w in batch:
                        w.error = exc
                    await self._discard_all(dev, staged)
                # each its own: one proof's error (its witness's range, ...) is not the others'; all
                # waited on one waiter thread in one hand-off
                for w, (result, exc, t_done) in zip(batch, await dev.wait_all(pendings) if pendings else ()):
                    if exc is not None:
                        w.error = exc
                    else:
                        w.result = result
                        tl.emit(Stage.GPU_END, w.job, w.p, device=dev.index, slot=slot, t_ns=t_done)
                # one error object for every proof: the batch's shared work failed (a launch, its
                # scratch), not a proof: each is tried again alone, whose own error is then final
                shared = len(batch) > 1 and len({id(w.error) for w in batch}) == 1 and batch[0].error is not None
                for w in batch:
                    w.shared = shared
            finally:
                for w in batch:
                    w.done.set()

    def _stamped(self, fn: Callable) -> tuple[Callable, list[int]]:
        """fn for the device thread, stamping its own start and end there (monotonic ns) into the
        list returned beside it: the time a call queued on that thread and the host time it took
        there (Stage.CALL_START / CALL_END, emitted on the event loop by _emit_call)."""
        stamps: list[int] = []
        if not self.timeline.enabled:
            return fn, stamps

        def run(*args: Any) -> Any:
            stamps.append(time.monotonic_ns())
            try:
                return fn(*args)
            finally:
                stamps.append(time.monotonic_ns())

        return run, stamps

    def _emit_call(self, dev: DeviceWorker, what: str, owners: list[tuple[int, int]], stamps: list[int]) -> None:
        if len(stamps) == 2:
            for job, p in owners:
                self.timeline.emit(Stage.CALL_START, job, p, t_ns=stamps[0], device=dev.index, detail=what)
                self.timeline.emit(Stage.CALL_END, job, p, t_ns=stamps[1], device=dev.index, detail=what)

    async def _discard_all(self, dev: DeviceWorker, staged: list) -> None:
        discard = getattr(dev.backend, "discard", None)
        for s in staged if discard is not None else ():
            try:
                pending = await dev.call(discard, s)
                if pending is not None:
                    await dev.wait(pending)
            except Exception:  # noqa: BLE001 - the batch's own error is what the callers get
                pass

    def _compute_fn(self, dev: DeviceWorker, slot: int, stop: threading.Event | None = None) -> Callable[[Any], Any]:
        compute = dev.backend.compute
        kwargs: dict[str, Any] = {}
        if self._slot_kw[dev.index]:
            kwargs["slot"] = slot
        if stop is not None and self._stop_kw[dev.index]:
            kwargs["stop"] = stop.is_set
        if kwargs:
            return lambda staged: compute(staged, **kwargs)
        return compute

    async def _discard(self, dev: DeviceWorker, owner: tuple, state) -> None:
        """Give back a staged proof's device memory; return when the device is done with it."""
        staged, state.staged = state.staged, None
        discard = getattr(dev.backend, "discard", None)
        if discard is not None:
            pending = await dev.call(discard, staged)
            if pending is not None:
                await dev.wait(pending)
        # no discard in this backend: its memory phase holds only host memory, dropped with `staged`
        # (running the compute it no longer needs would only burn a slot: issue 14)


class _DeviceState:
    __slots__ = ("staged",)

    def __init__(self):
        self.staged = None


class _BatchFailed(Exception):
    """A batch's shared device work failed for all of its proofs alike: each partition is staged and
    computed again alone (its cause chained); a proof that fails alone fails with its own error."""


class _Waiter:
    """A staged partition waiting for a compute slot (or for the batch that took it)."""

    __slots__ = ("job", "p", "state", "batch", "done", "result", "error", "shared")

    def __init__(self, job: int, p: int, state):
        self.job, self.p, self.state = job, p, state
        self.batch: list | None = None
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.shared = False  # the error is the whole batch's (retried alone: _BatchFailed)
