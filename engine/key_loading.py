"""Loading and unloading an Engine's proving keys, through its budgets (the Engine's key methods, as a base class).

Split out of engine/api.py: a key's footprint is planned per device, its bytes reserved (host, then VRAM) before
anything is uploaded, taken out of the budgets for its lifetime once resident, and given back on unload.
The Engine supplies `config`, `timeline`, `devices`, `vram`, `host`, `_kit`, `_keys`, `_check_open`, `_check_key`.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any, Callable

import anyio

from scheduler.budget import KEY, fmt_bytes
from scheduler.compute_share import plan_with_share
from scheduler.device_worker import DeviceWorker
from scheduler.pipeline import KeyRecord
from scheduler.timeline import Stage

from engine.errors import BudgetError, EngineClosedError
from engine.jobs import KeyHandle
from engine.paths import is_pipe, read_off_thread


class KeyLoading:
    """The Engine's `load_key` / `unload_key` and their budget bookkeeping."""

    async def load_key(self, path: Any, *, wasm: Any = None, label: str | None = None,
                       expected_proofs: int | None = None) -> KeyHandle:
        """Read a proving key and make it resident on every device, through the budgets.

        A backend that plans its keys (`plan_key`: the GPU's) chooses the key's footprint from
        the device's VRAM budget, leaving room for `proofs_in_flight()` working sets; the key's
        device bytes are reserved from that budget (waiting for proofs in flight, like any
        request) before anything is uploaded, and its pinned host bytes come out of the host
        budget.  A budget too small for the key plus one proof is a BudgetError before any work.
        `expected_proofs`: how many proofs this load is for, when known (`prove_files`: its
        witnesses); a key loaded for a few proofs skips precomputed tables that pay off only over
        many (None: a key that stays resident for many proofs).
        """
        self._check_open()
        name = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else label or "the key"
        return await self._guarded(self._load_key, (path, wasm, label, expected_proofs), undo=self._unload,
                                   what=f"{name}: not loaded")

    async def _guarded(self, fn: Callable, args: tuple, undo: Callable | None = None, what: str = "") -> Any:
        """`fn(*args)` as a task of the engine's task group, the caller waiting for it.

        asyncio's own cancel (asyncio.wait_for, task.cancel()) goes through anyio's shields: it cut a key's
        load or unload off midway, leaving the key on the device or its bytes out of the budget for good.
        Here the caller's cancel becomes a cancel of fn's own scope, which its shields hold off; the caller
        returns once fn has unwound, and a result nobody will receive is undone (`undo(result)`).
        """
        scope, done, box = anyio.CancelScope(), anyio.Event(), {}

        async def body() -> None:
            try:
                with scope:
                    box["value"] = await fn(*args)
            except Exception as exc:  # noqa: BLE001 - raised in the caller
                box["error"] = exc
            finally:
                done.set()

        self._tg.start_soon(body)
        try:
            await done.wait()
        except BaseException:
            scope.cancel()
            await _wait_out(done)
            if "value" in box and undo is not None:  # made before the cancel reached it: nobody will have it
                await self._undo(undo, box.pop("value"))
            raise
        if "error" in box:
            raise box.pop("error")
        if "value" not in box:  # the engine's task group was cancelled: it is shutting down
            raise EngineClosedError(f"{what}: the engine shut down meanwhile" if what else "the engine shut down")
        return box.pop("value")

    async def _undo(self, undo: Callable, value: Any) -> None:
        finished = anyio.Event()

        async def run() -> None:
            try:
                with anyio.CancelScope(shield=True):
                    await undo(value)
            finally:
                finished.set()

        try:
            self._tg.start_soon(run)
        except RuntimeError:  # the task group has ended: the engine's close unloads every key left
            return
        await _wait_out(finished)

    async def _load_key(self, path: Any, wasm: Any, label: str | None, expected_proofs: int | None) -> KeyHandle:
        kit = self._kit
        data = await (read_off_thread(kit.read_key, path, wasm) if is_pipe(path) else  # a cancel does not wait
                      anyio.to_thread.run_sync(kit.read_key, path, wasm))
        label = label or kit.key_label(data)
        self.timeline.emit(Stage.KEY_LOAD_START, key=label)
        resident: dict[int, Any] = {}
        footprints: dict[int, Any] = {}
        shares: dict[int, int] = {}  # device -> compute slots one proof of this key takes
        handle = KeyHandle(label=label, path=None, curve=None, n_vars=0, n_public=0, domain_size=0,
                           working_set_bytes=0, witness_bytes=kit.witness_bytes(data),
                           devices=tuple(w.index for w in self.devices), _engine=self)
        handle._record = KeyRecord(label, data, resident, 0, 0)
        holds: list[Any] = []  # the key-load reservations, given back once the capacity is taken
        try:
            for worker in self.devices:  # plan and reserve: cancellable, nothing on a device yet
                footprints[worker.index], shares[worker.index] = await self._reserve_key(
                    worker, kit.backend_key(data), label, holds, handle.witness_bytes, expected_proofs)
            with anyio.CancelScope(shield=True):  # a half-loaded key would leak device memory
                async with anyio.create_task_group() as tg:
                    for worker in self.devices:
                        tg.start_soon(self._load_on, worker, kit.backend_key(data), footprints[worker.index],
                                      resident)
            for worker in self.devices:
                self._take_key_memory(worker, handle, resident[worker.index], footprints[worker.index], label)
            ws = max(w.backend.working_set_bytes(resident[w.index]) for w in self.devices)
        except BaseException as exc:
            for hold in holds:
                hold.release()
            with anyio.CancelScope(shield=True):
                await self._unload(handle)
            if isinstance(exc, BaseExceptionGroup):  # the devices' loads: a device's error, not anyio's group
                raise _first_error(exc) from None
            raise
        for hold in holds:
            hold.release()
        # The proofs' pinned buffers (GpuBackend.pinned_count: two full batches and one for a small key)
        # are pinned in maintenance, which needs the device idle: the worker's own try during its load
        # found the key's reservation above held and left them, so without an idle loop (idle_trim_s
        # None, as perf/sweep.py runs) every proof staged through pageable memory, its range checked
        # and its result fetched on the host (perf/RESULTS.md, t13tput).  Now that it is released:
        for worker in self.devices:
            with anyio.CancelScope(shield=True):
                await worker.maintain(wait=False)
        for name, value in kit.describe(data).items():
            setattr(handle, name, value)
        handle.working_set_bytes = ws
        first = footprints.get(self.devices[0].index) if self.devices else None
        if first is not None:
            handle.footprint = first
            handle.tier, handle.fold, handle.msm_cost = first.tier, first.fold, first.msm_cost
            handle.proofs_in_flight = first.proofs_in_flight
        if self.devices and self.config.lock_mode != "single":
            first_worker = self.devices[0]
            handle.proofs_computing = first_worker.locks.compute_slots.size // shares[first_worker.index]
        handle.key_device_bytes = max(handle._resident_bytes.values(), default=0)
        handle.key_host_bytes = sum(handle._host_bytes.values())
        handle._record = KeyRecord(label, data, resident, ws, handle.witness_bytes, shares)
        self._keys.append(handle)
        self.timeline.emit(Stage.KEY_LOAD_END, key=label, bytes=ws)
        return handle

    def proofs_in_flight(self) -> int:
        """Proof working sets a key's footprint leaves room for: one computing per compute slot,
        plus one staging beside them in split lock mode (single mode does one thing at a time).
        Under compute_slots "auto", two: a key whose proofs share the device gets one more where
        that costs it nothing (scheduler/compute_share.py)."""
        if self.config.lock_mode == "single":
            return 1
        return 2 if self.config.compute_slots == "auto" else self.config.compute_slots + 1

    async def _reserve_key(self, worker: DeviceWorker, zkey: Any, label: str, holds: list, witness_bytes: int,
                           expected_proofs: int | None = None):
        """The key's footprint on `worker` (None if not planned) and its bytes reserved (host, then
        VRAM), with the compute slots one of its proofs takes there."""
        slots = worker.locks.compute_slots.size
        plan = getattr(worker.backend, "plan_key", None)
        if plan is None:
            return None, 1
        where = f"{label} on device {worker.index}"
        budget, proofs = self.vram.capacity(worker.pool), self.proofs_in_flight()
        hint = {} if expected_proofs is None else {"proofs_per_load": max(1, int(expected_proofs))}
        if self.config.compute_slots == "auto" and self.config.lock_mode != "single":
            fp, take = await anyio.to_thread.run_sync(
                lambda: plan_with_share(lambda n: plan(zkey, budget, n, label=where, **hint), slots))
        else:
            fp, take = await anyio.to_thread.run_sync(lambda: plan(zkey, budget, proofs, label=where, **hint)), 1
        if fp.host_bytes:  # pinned bases (one copy per device on the host tier)
            taken = sum(h.nbytes for h in holds if h.budget is self.host)
            room = self.host.capacity(0) - witness_bytes - taken
            if fp.host_bytes > room:
                raise BudgetError(
                    f"{where}: the key's bases do not fit the VRAM budget and need {fmt_bytes(fp.host_bytes)} of "
                    f"pinned host memory, but the host budget is {fmt_bytes(self.host.capacity(0))}, one witness "
                    f"needs {fmt_bytes(witness_bytes)} of it and other devices' copies {fmt_bytes(taken)}; raise "
                    f"host_budget to at least {fmt_bytes(fp.host_bytes + witness_bytes + taken)} or vram_budget"
                )
            holds.append(await self.host.reserve(fp.host_bytes, kind=KEY, label=f"{where}: pinned bases"))
            # pinning is device-global (design.md §5 rule 1): the load holds the whole pool, so no
            # proof of this engine is in flight on the device while the bases are pinned
            holds.append(await self.vram.reserve_pool(worker.pool, label=f"{where}: key with pinned bases"))
        else:
            # the key's bytes, and for the load only what building its CSR on the device holds beside them
            holds.append(await self.vram.reserve(fp.device_bytes + fp.csr_build_bytes, pools=(worker.pool,), kind=KEY,
                                                 label=f"{where}: key"))
        return fp, take

    async def _load_on(self, worker: DeviceWorker, zkey: Any, fp: Any, resident: dict) -> None:
        resident[worker.index] = await worker.load_key(zkey, *(() if fp is None else (fp,)))

    def _take_key_memory(self, worker: DeviceWorker, handle: KeyHandle, key: Any, fp: Any, label: str) -> None:
        """Take the loaded key's bytes out of the budgets for its lifetime (before its reservation returns)."""
        backend = worker.backend
        measure = getattr(backend, "resident_bytes", None)
        nbytes = int(measure(key)) if measure is not None else 0
        if fp is not None:
            nbytes = max(nbytes, fp.device_bytes)  # as reserved: the plan's count is the allocation's
        else:
            ws = int(backend.working_set_bytes(key))
            capacity = self.vram.capacity(worker.pool)
            if nbytes + ws > capacity:  # an unplanned backend: refuse rather than leave a negative budget
                raise BudgetError(
                    f"{label} on device {worker.index}: the key takes {fmt_bytes(nbytes)} of device memory and one "
                    f"proof's working set is {fmt_bytes(ws)}, {fmt_bytes(nbytes + ws)} together, but the VRAM "
                    f"budget is {fmt_bytes(capacity)}; raise vram_budget or use a larger device"
                )
        if nbytes:
            self.vram.adjust_capacity(worker.pool, -nbytes)
            handle._resident_bytes[worker.index] = nbytes
        pinned = int(getattr(backend, "host_resident_bytes", lambda k: 0)(key))
        if pinned:
            self.host.adjust_capacity(0, -pinned)
            handle._host_bytes[worker.index] = pinned

    async def unload_key(self, key: KeyHandle) -> None:
        """Wait for the key's jobs, then release it on every device (a key unloaded already: nothing to do)."""
        self._check_key(key, "unload_key", loaded=False)  # another engine's key: its memory freed through ours
        if self._state == "open":
            self._check_open()  # this engine's event loop
            await self._guarded(self._unload_when_idle, (key,), what=f"{key.label}: not unloaded")
        else:  # shutting down or shut: its task group is going or gone (the shutdown unloads every key)
            await self._unload_when_idle(key)

    async def _unload_when_idle(self, key: KeyHandle) -> None:
        await key._wait_no_jobs()
        with anyio.CancelScope(shield=True):  # begun, it is finished: a key half unloaded kept its bytes
            await self._unload(key)
            # its proofs' pinned buffers (pinned after its load) are unwanted now: unpinned while the device is
            # idle, as the load pinned them, so the host budget is whole again without an idle loop
            for worker in self.devices:
                await worker.maintain(wait=False)

    async def _unload(self, key: KeyHandle) -> None:
        if key in self._keys:
            self._keys.remove(key)
        for worker in self.devices:
            resident = key._record.resident.pop(worker.index, None) if key._record else None
            if resident is None:
                continue
            unload = getattr(worker.backend, "unload_key", None)
            # unpinning a host-tier key's bases is device-global: done holding the whole pool
            pinned_bases = getattr(worker.backend, "host_resident_bytes", lambda k: 0)(resident)
            hold = await self.vram.reserve_pool(worker.pool, label=f"{key.label}: unpin") if pinned_bases else None
            try:
                await worker.call(unload if unload is not None else resident.close, *((resident,) if unload else ()))
            finally:
                if hold is not None:
                    hold.release()
            nbytes = key._resident_bytes.pop(worker.index, 0)
            if nbytes:
                self.vram.adjust_capacity(worker.pool, nbytes)
            pinned = key._host_bytes.pop(worker.index, 0)
            if pinned:
                self.host.adjust_capacity(0, pinned)


async def _wait_out(event: anyio.Event) -> None:
    """Wait for `event` through any number of asyncio cancels (the first is the caller's to raise, after)."""
    while not event.is_set():
        try:
            with anyio.CancelScope(shield=True):
                await event.wait()
        except asyncio.CancelledError:
            pass


def _first_error(group: BaseExceptionGroup) -> BaseException:
    """The first device's error out of the group its load's task group raised (several devices fail alike)."""
    first = group.exceptions[0]
    return _first_error(first) if isinstance(first, BaseExceptionGroup) else first
